//! A reader of whisper files, the format of graphite's `whisper.py` 1.1 (byte layout in
//! `docs/format/whisper.md`): the header, the archive table, the points of each
//! archive, and [`Whisper::fetch`] answering exactly what `whisper.fetch` answers.
//!
//! A file is read whole and checked once in [`Whisper::from_bytes`]; after that nothing
//! can fail but a bad time range. Every problem of the file is a [`WhisperError`]
//! naming the file, the byte offset and what is wrong there.
//!
//! Checks stricter than whisper's own reader, each of which whisper would trip over
//! later (a division by zero, a short read) or which no whisper writer produces: at
//! least one archive; every archive with points and seconds per point, lying inside
//! the file after the archive table, not overlapping another; `maxRetention` equal to
//! the longest archive's retention (as `whisper.create` writes it).

use std::fmt;
use std::path::{Path, PathBuf};

use sumi_model::AggMethod;

/// Bytes of the metadata: aggregation type, max retention, xFilesFactor, archive count.
pub const METADATA_LEN: usize = 16;
/// Bytes of one archive-table entry: offset, seconds per point, points.
pub const ARCHIVE_INFO_LEN: usize = 12;
/// Bytes of one point: timestamp (u32) and value (f64), big-endian.
pub const POINT_LEN: usize = 12;

/// Times given to [`Whisper::fetch`] must lie within ±2^62 seconds, so that whisper's
/// arithmetic (Python integers) fits in an `i64` here.
pub const TIME_LIMIT: i64 = 1 << 62;

/// A damaged or unreadable whisper file: which file, at which byte, what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("whisper file {}: {kind} (at byte {offset})", path.display())]
pub struct WhisperError {
    pub path: PathBuf,
    pub offset: u64,
    pub kind: ErrorKind,
}

/// What is wrong with a whisper file.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot read: {0}")]
    Io(#[source] std::io::Error),
    #[error("file of {len} bytes is shorter than the {METADATA_LEN}-byte header")]
    ShortHeader { len: u64 },
    #[error("unknown aggregation type {0} (whisper knows 1-8)")]
    UnknownAggregation(u32),
    #[error("xFilesFactor {0} is not between 0 and 1")]
    XFilesFactor(f32),
    #[error("the header declares no archive")]
    NoArchives,
    #[error("the archive table of {count} entries does not fit in a file of {len} bytes")]
    ShortArchiveTable { count: u32, len: u64 },
    #[error("archive {archive} has 0 seconds per point")]
    ZeroStep { archive: usize },
    #[error("archive {archive} has 0 points")]
    ZeroPoints { archive: usize },
    #[error("archive {archive} spans bytes {start}..{end}, outside the {len}-byte file")]
    ArchiveOutsideFile {
        archive: usize,
        start: u64,
        end: u64,
        len: u64,
    },
    #[error(
        "archive {archive} starts at byte {start}, inside the header (which ends at {header_end})"
    )]
    ArchiveInHeader {
        archive: usize,
        start: u64,
        header_end: u64,
    },
    #[error("archive {archive} overlaps archive {other}")]
    ArchivesOverlap { archive: usize, other: usize },
    #[error("maxRetention {header} differs from the longest archive's retention {archives}")]
    MaxRetention { header: u32, archives: u64 },
}

/// The aggregation types whisper 1.1 knows, by their number in the header.
const AGGREGATION_TYPES: [(u32, AggMethod); 8] = [
    (1, AggMethod::Average),
    (2, AggMethod::Sum),
    (3, AggMethod::Last),
    (4, AggMethod::Max),
    (5, AggMethod::Min),
    (6, AggMethod::AvgZero),
    (7, AggMethod::AbsMax),
    (8, AggMethod::AbsMin),
];

/// The aggregation method a header's type number stands for.
pub fn aggregation_method(aggregation_type: u32) -> Option<AggMethod> {
    AGGREGATION_TYPES
        .iter()
        .find(|(t, _)| *t == aggregation_type)
        .map(|(_, m)| *m)
}

/// The header's type number of an aggregation method (`None` for methods whisper lacks).
pub fn aggregation_type(method: AggMethod) -> Option<u32> {
    AGGREGATION_TYPES
        .iter()
        .find(|(_, m)| *m == method)
        .map(|(t, _)| *t)
}

/// The file's metadata (the first 16 bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Header {
    pub aggregation: AggMethod,
    /// Seconds: the longest archive's retention.
    pub max_retention: u32,
    pub x_files_factor: f32,
    pub archive_count: u32,
}

/// One entry of the archive table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchiveInfo {
    /// Byte offset of the archive's first slot in the file.
    pub offset: u32,
    pub seconds_per_point: u32,
    pub points: u32,
}

impl ArchiveInfo {
    /// Seconds the archive covers.
    pub fn retention(&self) -> u64 {
        u64::from(self.seconds_per_point) * u64::from(self.points)
    }

    /// Bytes the archive takes.
    pub fn size_bytes(&self) -> u64 {
        u64::from(self.points) * POINT_LEN as u64
    }
}

/// Values of consecutive intervals, as `whisper.fetch` returns them: `from` and `until`
/// are whisper's `timeInfo` (interval starts, `until` exclusive), `values[i]` belongs to
/// `from + i * step` and is `None` where the slot holds no point of that interval.
///
/// `values` has as many entries as whisper read slots, which is `(until - from) / step`
/// except when the range spans more than the archive (whisper then wraps around it).
#[derive(Clone, Debug, PartialEq)]
pub struct Fetched {
    pub from: i64,
    pub until: i64,
    pub step: i64,
    /// Index of the archive the values come from.
    pub archive: usize,
    pub values: Vec<Option<f64>>,
}

/// Why a time range cannot be fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// whisper's `InvalidTimeInterval`.
    #[error("invalid time interval: from {from} is after until {until}")]
    InvalidInterval { from: i64, until: i64 },
    #[error("time {0} is beyond ±2^62 seconds")]
    OutOfRange(i64),
}

/// A whisper file, read and checked.
#[derive(Clone, Debug)]
pub struct Whisper {
    path: PathBuf,
    bytes: Vec<u8>,
    header: Header,
    archives: Vec<ArchiveInfo>,
}

impl Whisper {
    /// Reads and checks the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Whisper, WhisperError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| WhisperError {
            path: path.to_path_buf(),
            offset: 0,
            kind: ErrorKind::Io(e),
        })?;
        Whisper::from_bytes(path, bytes)
    }

    /// Checks the bytes of a whisper file; `path` only names it in errors.
    pub fn from_bytes(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Whisper, WhisperError> {
        let path = path.into();
        match parse(&bytes) {
            Ok((header, archives)) => Ok(Whisper {
                path,
                bytes,
                header,
                archives,
            }),
            Err((offset, kind)) => Err(WhisperError { path, offset, kind }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The archive table, finest first in files whisper wrote.
    pub fn archives(&self) -> &[ArchiveInfo] {
        &self.archives
    }

    /// The raw slot `slot` of archive `archive`: stored timestamp and value, whether or
    /// not the timestamp is current. Panics if either index is out of range.
    pub fn slot(&self, archive: usize, slot: u32) -> (u32, f64) {
        let info = self.archives[archive];
        assert!(slot < info.points, "slot {slot} of {}", info.points);
        self.read_point(info.offset as usize + slot as usize * POINT_LEN)
    }

    /// Everything archive `archive` holds for the window ending at `now`: the `points`
    /// intervals up to the one holding `now`, a slot counting only if its stored
    /// timestamp is the interval whisper expects there (older or foreign timestamps are
    /// empty, as `whisper.fetch` treats them). This is what `whisper.fetch(now -
    /// retention, now, now)` answers when it picks this archive.
    pub fn window(&self, archive: usize, now: i64) -> Result<Fetched, FetchError> {
        let info = self.archives[archive];
        check_time(now)?;
        let from = now - info.retention() as i64;
        Ok(self.archive_fetch(archive, from, now))
    }

    /// The known points of [`Whisper::window`], oldest first.
    pub fn points(
        &self,
        archive: usize,
        now: i64,
    ) -> Result<impl Iterator<Item = (i64, f64)>, FetchError> {
        let w = self.window(archive, now)?;
        let (from, step) = (w.from, w.step);
        Ok(w.values
            .into_iter()
            .enumerate()
            .filter_map(move |(i, v)| Some((from + i as i64 * step, v?))))
    }

    /// `whisper.fetch(path, from, until, now)`: `Ok(None)` where whisper answers `None`
    /// (the range lies in the future or before the retention). The range is clamped to
    /// the retention and `now`, the archive is the first whose retention covers
    /// `now - from`.
    pub fn fetch(&self, from: i64, until: i64, now: i64) -> Result<Option<Fetched>, FetchError> {
        for t in [from, until, now] {
            check_time(t)?;
        }
        if from > until {
            return Err(FetchError::InvalidInterval { from, until });
        }
        let oldest = now - i64::from(self.header.max_retention);
        if from > now || until < oldest {
            return Ok(None);
        }
        let from = from.max(oldest);
        let until = until.min(now);
        let diff = now - from;
        // whisper keeps the last archive when none covers the range; with maxRetention
        // checked against the archives, one always does.
        let archive = self
            .archives
            .iter()
            .position(|a| a.retention() as i64 >= diff)
            .unwrap_or(self.archives.len() - 1);
        Ok(Some(self.archive_fetch(archive, from, until)))
    }

    /// whisper's `__archive_fetch`; `from` and `until` within [`TIME_LIMIT`] plus the
    /// largest retention.
    fn archive_fetch(&self, archive: usize, from: i64, until: i64) -> Fetched {
        let info = self.archives[archive];
        let step = i64::from(info.seconds_per_point);
        let from_interval = from - from.rem_euclid(step) + step;
        let mut until_interval = until - until.rem_euclid(step) + step;
        if from_interval == until_interval {
            // A zero-length range always gets the next point.
            until_interval += step;
        }
        let offset = info.offset as usize;
        let (base, _) = self.read_point(offset);
        let mut fetched = Fetched {
            from: from_interval,
            until: until_interval,
            step,
            archive,
            values: Vec::new(),
        };
        if base == 0 {
            // Never written.
            let n = (until_interval - from_interval).div_euclid(step);
            fetched.values = vec![None; usize::try_from(n).unwrap_or(0)];
            return fetched;
        }
        let points = i64::from(info.points);
        let slot_of = |t: i64| (t - i64::from(base)).div_euclid(step).rem_euclid(points);
        let (first, last) = (slot_of(from_interval), slot_of(until_interval));
        // whisper reads from the first slot up to the last, wrapping; the whole archive
        // when they coincide.
        let n = if first < last {
            last - first
        } else {
            points - (first - last)
        };
        fetched.values = (0..n)
            .map(|k| {
                let slot = (first + k) % points;
                let (t, v) = self.read_point(offset + slot as usize * POINT_LEN);
                (i64::from(t) == from_interval + k * step).then_some(v)
            })
            .collect();
        fetched
    }

    /// The point at `at`, which `parse` proved to lie inside the file.
    fn read_point(&self, at: usize) -> (u32, f64) {
        let b = &self.bytes[at..at + POINT_LEN];
        let t = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let v = f64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
        (t, v)
    }
}

fn check_time(t: i64) -> Result<(), FetchError> {
    if (-TIME_LIMIT..=TIME_LIMIT).contains(&t) {
        Ok(())
    } else {
        Err(FetchError::OutOfRange(t))
    }
}

/// The big-endian u32 at `at`, if the bytes hold it.
fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

/// Reads and checks the header and the archive table.
fn parse(bytes: &[u8]) -> Result<(Header, Vec<ArchiveInfo>), (u64, ErrorKind)> {
    let len = bytes.len() as u64;
    let field = |at: usize| be_u32(bytes, at).ok_or((0, ErrorKind::ShortHeader { len }));
    let aggregation_type = field(0)?;
    let max_retention = field(4)?;
    let x_files_factor = f32::from_bits(field(8)?);
    let archive_count = field(12)?;
    let aggregation = aggregation_method(aggregation_type)
        .ok_or((0, ErrorKind::UnknownAggregation(aggregation_type)))?;
    if !(0.0..=1.0).contains(&x_files_factor) {
        return Err((8, ErrorKind::XFilesFactor(x_files_factor)));
    }
    if archive_count == 0 {
        return Err((12, ErrorKind::NoArchives));
    }
    let header_end = METADATA_LEN as u64 + u64::from(archive_count) * ARCHIVE_INFO_LEN as u64;
    if header_end > len {
        let complete = (len - METADATA_LEN as u64) / ARCHIVE_INFO_LEN as u64;
        let at = METADATA_LEN as u64 + complete * ARCHIVE_INFO_LEN as u64;
        return Err((
            at,
            ErrorKind::ShortArchiveTable {
                count: archive_count,
                len,
            },
        ));
    }
    let mut archives: Vec<ArchiveInfo> = Vec::with_capacity(archive_count as usize);
    for archive in 0..archive_count as usize {
        let at = METADATA_LEN + archive * ARCHIVE_INFO_LEN;
        let entry = |i: usize| {
            be_u32(bytes, at + 4 * i).ok_or((
                at as u64,
                ErrorKind::ShortArchiveTable {
                    count: archive_count,
                    len,
                },
            ))
        };
        let info = ArchiveInfo {
            offset: entry(0)?,
            seconds_per_point: entry(1)?,
            points: entry(2)?,
        };
        if info.seconds_per_point == 0 {
            return Err((at as u64 + 4, ErrorKind::ZeroStep { archive }));
        }
        if info.points == 0 {
            return Err((at as u64 + 8, ErrorKind::ZeroPoints { archive }));
        }
        let start = u64::from(info.offset);
        let end = start + info.size_bytes();
        if start < header_end {
            return Err((
                at as u64,
                ErrorKind::ArchiveInHeader {
                    archive,
                    start,
                    header_end,
                },
            ));
        }
        if end > len {
            return Err((
                at as u64,
                ErrorKind::ArchiveOutsideFile {
                    archive,
                    start,
                    end,
                    len,
                },
            ));
        }
        archives.push(info);
    }
    // Overlaps: neighbours in offset order (a table may hold tens of thousands of entries).
    let mut by_offset: Vec<usize> = (0..archives.len()).collect();
    by_offset.sort_by_key(|&i| archives[i].offset);
    for pair in by_offset.windows(2) {
        let (a, b) = (archives[pair[0]], archives[pair[1]]);
        if u64::from(a.offset) + a.size_bytes() > u64::from(b.offset) {
            let (archive, other) = (pair[0].max(pair[1]), pair[0].min(pair[1]));
            let at = (METADATA_LEN + archive * ARCHIVE_INFO_LEN) as u64;
            return Err((at, ErrorKind::ArchivesOverlap { archive, other }));
        }
    }
    let longest = archives
        .iter()
        .map(ArchiveInfo::retention)
        .max()
        .unwrap_or(0);
    if longest != u64::from(max_retention) {
        return Err((
            4,
            ErrorKind::MaxRetention {
                header: max_retention,
                archives: longest,
            },
        ));
    }
    let header = Header {
        aggregation,
        max_retention,
        x_files_factor,
        archive_count,
    };
    Ok((header, archives))
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "aggregation {}, max retention {} s, xFilesFactor {}, {} archives",
            self.aggregation.name(),
            self.max_retention,
            self.x_files_factor,
            self.archive_count
        )
    }
}

#[cfg(test)]
mod tests;
