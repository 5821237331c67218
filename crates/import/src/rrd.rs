//! A reader of RRD files as RRDtool 1.7 writes them on x86_64 Linux (byte layout in
//! `docs/format/rrd.md`): the static header, the data source and RRA definitions, the
//! live head, the preparation areas, the row pointers and the rows, and [`Rrd::fetch`]
//! answering what `rrdtool fetch` answers.
//!
//! A file is read whole and checked once in [`Rrd::from_bytes`]; after that only a bad
//! fetch request can fail. Every problem of the file is an [`RrdError`] naming the file,
//! the byte offset and what is wrong there. Files of other architectures (big-endian, or
//! 32-bit `long`) are recognised by their float cookie and refused with a clear error:
//! they must be dumped on their machine and restored here.

use std::fmt;
use std::path::{Path, PathBuf};

/// The float cookie every RRD file holds after the version, to recognise its layout.
pub const FLOAT_COOKIE: f64 = 8.642135E130;
/// Bytes of the static header on x86_64.
pub const STAT_HEAD_LEN: usize = 128;
/// Bytes of one data source definition.
pub const DS_DEF_LEN: usize = 120;
/// Bytes of one RRA definition.
pub const RRA_DEF_LEN: usize = 120;
/// Bytes of one data source's preparation area.
pub const PDP_PREP_LEN: usize = 112;
/// Bytes of one (RRA, data source) consolidation area.
pub const CDP_PREP_LEN: usize = 80;
/// Bytes of one RRA's row pointer.
pub const RRA_PTR_LEN: usize = 8;
/// Bytes of a name field (data source name, data source type, CF name).
pub const NAME_LEN: usize = 20;
/// `rrdtool fetch` refuses starts before this (ten 365-day years after the epoch).
pub const MIN_FETCH_START: i64 = 3600 * 24 * 365 * 10;
/// The most rows [`Rrd::fetch`] returns at once.
pub const MAX_FETCH_ROWS: i64 = 1 << 26;

/// A damaged or unreadable RRD file: which file, at which byte, what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("RRD file {}: {kind} (at byte {offset})", path.display())]
pub struct RrdError {
    pub path: PathBuf,
    pub offset: u64,
    pub kind: ErrorKind,
}

/// What is wrong with an RRD file.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot read: {0}")]
    Io(#[source] std::io::Error),
    #[error("file of {len} bytes ends inside the {what}")]
    Short { len: u64, what: &'static str },
    #[error("not an RRD file (no \"RRD\" cookie)")]
    Cookie,
    #[error("unknown RRD format version {0:?} (RRDtool 1.7 writes 0001, 0003, 0004, 0005)")]
    Version(String),
    #[error(
        "written on a big-endian machine: dump it there with `rrdtool dump` and restore it here"
    )]
    BigEndian,
    #[error("written with 32-bit longs (i386, armhf): dump it there with `rrdtool dump` and restore it here")]
    ThirtyTwoBit,
    #[error("bad float cookie: not an RRD file of this platform")]
    FloatCookie,
    #[error("the header declares no data source")]
    NoDataSources,
    #[error("the header declares no RRA")]
    NoRras,
    #[error("the header's step is 0")]
    ZeroStep,
    #[error("{what} {count} is too large for the file of {len} bytes")]
    TooMany {
        what: &'static str,
        count: u64,
        len: u64,
    },
    #[error("{what} {index}: name is not a NUL-terminated UTF-8 string")]
    BadName { what: &'static str, index: usize },
    #[error("data source {index}: unknown type {name:?}")]
    UnknownDst { index: usize, name: String },
    #[error("RRA {index}: unknown consolidation function {name:?}")]
    UnknownCf { index: usize, name: String },
    #[error("RRA {index} has no rows")]
    ZeroRows { index: usize },
    #[error("RRA {index} has 0 steps per row")]
    ZeroPdpCount { index: usize },
    #[error("RRA {index} spans more than 2^40 seconds")]
    Span { index: usize },
    #[error("RRA {index}: current row {cur_row} is not below its {rows} rows")]
    CurRow {
        index: usize,
        cur_row: u64,
        rows: u64,
    },
    #[error("the rows end at byte {end}, past the {len}-byte file")]
    ShortData { end: u64, len: u64 },
    #[error("last update {0} is outside the times this reader handles")]
    LastUpdate(i64),
}

/// A data source type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dst {
    Gauge,
    Counter,
    Derive,
    Absolute,
    Dcounter,
    Dderive,
    Compute,
}

impl Dst {
    fn parse(name: &str) -> Option<Dst> {
        Some(match name {
            "GAUGE" => Dst::Gauge,
            "COUNTER" => Dst::Counter,
            "DERIVE" => Dst::Derive,
            "ABSOLUTE" => Dst::Absolute,
            "DCOUNTER" => Dst::Dcounter,
            "DDERIVE" => Dst::Dderive,
            "COMPUTE" => Dst::Compute,
            _ => return None,
        })
    }

    /// The name rrdtool gives it.
    pub fn name(self) -> &'static str {
        match self {
            Dst::Gauge => "GAUGE",
            Dst::Counter => "COUNTER",
            Dst::Derive => "DERIVE",
            Dst::Absolute => "ABSOLUTE",
            Dst::Dcounter => "DCOUNTER",
            Dst::Dderive => "DDERIVE",
            Dst::Compute => "COMPUTE",
        }
    }
}

/// A consolidation function, as an RRA definition names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cf {
    Average,
    Min,
    Max,
    Last,
    HwPredict,
    MhwPredict,
    Seasonal,
    DevSeasonal,
    DevPredict,
    Failures,
}

const CFS: [(&str, Cf); 10] = [
    ("AVERAGE", Cf::Average),
    ("MIN", Cf::Min),
    ("MAX", Cf::Max),
    ("LAST", Cf::Last),
    ("HWPREDICT", Cf::HwPredict),
    ("MHWPREDICT", Cf::MhwPredict),
    ("SEASONAL", Cf::Seasonal),
    ("DEVSEASONAL", Cf::DevSeasonal),
    ("DEVPREDICT", Cf::DevPredict),
    ("FAILURES", Cf::Failures),
];

impl Cf {
    /// The function of a name as `rrdtool fetch` takes it (upper case).
    pub fn parse(name: &str) -> Option<Cf> {
        CFS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
    }

    /// The name rrdtool gives it.
    pub fn name(self) -> &'static str {
        CFS.iter().find(|(_, c)| *c == self).map_or("", |(n, _)| n)
    }

    /// AVERAGE, MIN, MAX or LAST: the functions an RRA of one step per row serves alike.
    pub fn is_plain(self) -> bool {
        matches!(self, Cf::Average | Cf::Min | Cf::Max | Cf::Last)
    }
}

impl fmt::Display for Cf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The static header.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// "0001", "0003", "0004" or "0005".
    pub version: String,
    pub ds_count: u64,
    pub rra_count: u64,
    /// Seconds of one primary data point.
    pub pdp_step: u64,
}

/// A data source definition.
#[derive(Clone, Debug, PartialEq)]
pub struct DsDef {
    pub name: String,
    pub dst: Dst,
    /// Seconds without an update after which the value is unknown (not for COMPUTE).
    pub heartbeat: u64,
    /// NaN when unbounded (not for COMPUTE, whose parameters hold its expression).
    pub min: f64,
    pub max: f64,
}

/// An RRA definition, with its current row.
#[derive(Clone, Debug, PartialEq)]
pub struct RraDef {
    pub cf: Cf,
    pub rows: u64,
    /// Primary data points per row.
    pub pdp_count: u64,
    /// The xFilesFactor (AVERAGE, MIN, MAX, LAST); other CFs keep other parameters there.
    pub xff: f64,
    /// The row written last.
    pub cur_row: u64,
    /// Byte offset of its first row in the file.
    pub offset: u64,
}

/// What [`Rrd::fetch`] answers, as `rrdtool fetch` does: `start` and `end` aligned on
/// `step`, and `(end - start) / step` rows, row `i` for the interval ending at
/// `start + (i + 1) * step`, one value per data source, NaN where unknown.
#[derive(Clone, Debug, PartialEq)]
pub struct Fetched {
    pub start: i64,
    pub end: i64,
    pub step: i64,
    /// Index of the RRA the rows come from.
    pub rra: usize,
    pub rows: Vec<Vec<f64>>,
}

/// Why [`Rrd::fetch`] refuses a request (rrdtool's refusals).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("start ({start}) should be less than end ({end})")]
    EndBeforeStart { start: i64, end: i64 },
    #[error("the first entry to fetch should be after 1980")]
    StartTooEarly { start: i64 },
    #[error("the end {end} is outside the times this reader handles")]
    EndTooLate { end: i64 },
    #[error("step must be >= 1 second")]
    ZeroResolution,
    #[error("{rows} rows asked for, more than the {MAX_FETCH_ROWS} this reader returns at once")]
    TooManyRows { rows: i64 },
    #[error("the RRD does not contain an RRA matching the chosen CF ({cf})")]
    NoMatchingRra { cf: Cf },
}

/// A parsed RRD file.
pub struct Rrd {
    path: PathBuf,
    bytes: Vec<u8>,
    header: Header,
    ds: Vec<DsDef>,
    rra: Vec<RraDef>,
    last_up: i64,
    last_up_usec: i64,
}

impl fmt::Debug for Rrd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rrd")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("ds", &self.ds)
            .field("rra", &self.rra)
            .field("last_up", &self.last_up)
            .finish()
    }
}

/// Times handled: up to 2^40 seconds (35,000 years), so that all arithmetic fits.
const TIME_LIMIT: i64 = 1 << 40;

struct Reader<'a> {
    path: &'a Path,
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn err(&self, offset: usize, kind: ErrorKind) -> RrdError {
        RrdError {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            kind,
        }
    }

    fn need(&self, offset: usize, len: usize, what: &'static str) -> Result<&[u8], RrdError> {
        offset
            .checked_add(len)
            .and_then(|end| self.bytes.get(offset..end))
            .ok_or_else(|| {
                self.err(
                    self.bytes.len().min(offset),
                    ErrorKind::Short {
                        len: self.bytes.len() as u64,
                        what,
                    },
                )
            })
    }

    fn u64(&self, offset: usize) -> u64 {
        u64::from_le_bytes(self.bytes[offset..offset + 8].try_into().expect("8 bytes"))
    }

    fn f64(&self, offset: usize) -> f64 {
        f64::from_bits(self.u64(offset))
    }

    fn name(&self, offset: usize, what: &'static str, index: usize) -> Result<String, RrdError> {
        let field = &self.bytes[offset..offset + NAME_LEN];
        let end = field
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| self.err(offset, ErrorKind::BadName { what, index }))?;
        std::str::from_utf8(&field[..end])
            .map(str::to_string)
            .map_err(|_| self.err(offset, ErrorKind::BadName { what, index }))
    }

    /// A count from the header, refused if that many `unit`-byte entries cannot fit.
    fn count(&self, offset: usize, unit: u64, what: &'static str) -> Result<u64, RrdError> {
        let count = self.u64(offset);
        let len = self.bytes.len() as u64;
        if count.checked_mul(unit).is_none_or(|n| n > len) {
            return Err(self.err(offset, ErrorKind::TooMany { what, count, len }));
        }
        Ok(count)
    }
}

impl Rrd {
    /// Reads and checks the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Rrd, RrdError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| RrdError {
            path: path.to_path_buf(),
            offset: 0,
            kind: ErrorKind::Io(e),
        })?;
        Rrd::from_bytes(path, bytes)
    }

    /// Checks the bytes of a file; `path` names it in errors.
    pub fn from_bytes(path: impl AsRef<Path>, bytes: Vec<u8>) -> Result<Rrd, RrdError> {
        let path = path.as_ref();
        let r = Reader {
            path,
            bytes: &bytes,
        };
        let len = bytes.len() as u64;
        if bytes.len() < 4 || &bytes[..4] != b"RRD\0" {
            return Err(r.err(0, ErrorKind::Cookie));
        }
        r.need(0, 9, "static header")?;
        let version = String::from_utf8_lossy(&bytes[4..8]).into_owned();
        if bytes[8] != 0 || !matches!(version.as_str(), "0001" | "0003" | "0004" | "0005") {
            return Err(r.err(4, ErrorKind::Version(version)));
        }
        // The float cookie tells the layout: at byte 16 in little-endian on x86_64; at
        // byte 12 on i386 (4-byte alignment of doubles and 4-byte longs).
        r.need(0, 24, "static header")?;
        let cookie = r.u64(16);
        if cookie != FLOAT_COOKIE.to_bits() {
            let be = u64::from_be_bytes(bytes[16..24].try_into().expect("8 bytes"));
            let at12 = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
            let kind = if be == FLOAT_COOKIE.to_bits() {
                ErrorKind::BigEndian
            } else if at12 == FLOAT_COOKIE.to_bits() {
                ErrorKind::ThirtyTwoBit
            } else {
                ErrorKind::FloatCookie
            };
            let at = if matches!(kind, ErrorKind::ThirtyTwoBit) {
                12
            } else {
                16
            };
            return Err(r.err(at, kind));
        }
        r.need(0, STAT_HEAD_LEN, "static header")?;
        let ds_count = r.count(24, DS_DEF_LEN as u64, "data source count")?;
        let rra_count = r.count(32, RRA_DEF_LEN as u64, "RRA count")?;
        let pdp_step = r.u64(40);
        if ds_count == 0 {
            return Err(r.err(24, ErrorKind::NoDataSources));
        }
        if rra_count == 0 {
            return Err(r.err(32, ErrorKind::NoRras));
        }
        if pdp_step == 0 || pdp_step > TIME_LIMIT as u64 {
            return Err(r.err(40, ErrorKind::ZeroStep));
        }
        let (nds, nrra) = (ds_count as usize, rra_count as usize);
        let mut at = STAT_HEAD_LEN;

        let mut ds = Vec::with_capacity(nds);
        r.need(at, nds * DS_DEF_LEN, "data source definitions")?;
        for index in 0..nds {
            let name = r.name(at, "data source", index)?;
            let dst_name = r.name(at + NAME_LEN, "data source type of", index)?;
            let dst = Dst::parse(&dst_name).ok_or_else(|| {
                r.err(
                    at + NAME_LEN,
                    ErrorKind::UnknownDst {
                        index,
                        name: dst_name.clone(),
                    },
                )
            })?;
            let par = at + 2 * NAME_LEN;
            ds.push(DsDef {
                name,
                dst,
                heartbeat: r.u64(par),
                min: r.f64(par + 8),
                max: r.f64(par + 16),
            });
            at += DS_DEF_LEN;
        }

        let mut rra = Vec::with_capacity(nrra);
        r.need(at, nrra * RRA_DEF_LEN, "RRA definitions")?;
        for index in 0..nrra {
            let cf_name = r.name(at, "RRA", index)?;
            let cf = Cf::parse(&cf_name).ok_or_else(|| {
                r.err(
                    at,
                    ErrorKind::UnknownCf {
                        index,
                        name: cf_name.clone(),
                    },
                )
            })?;
            // the name field (20 bytes) is padded to 24 for the 8-byte row count
            let rows = r.u64(at + 24);
            let pdp_count = r.u64(at + 32);
            if rows == 0 {
                return Err(r.err(at + 24, ErrorKind::ZeroRows { index }));
            }
            if pdp_count == 0 {
                return Err(r.err(at + 32, ErrorKind::ZeroPdpCount { index }));
            }
            let span = pdp_step
                .checked_mul(pdp_count)
                .and_then(|s| s.checked_mul(rows));
            if span.is_none_or(|s| s > TIME_LIMIT as u64) {
                return Err(r.err(at + 24, ErrorKind::Span { index }));
            }
            rra.push(RraDef {
                cf,
                rows,
                pdp_count,
                xff: r.f64(at + 40),
                cur_row: 0,
                offset: 0,
            });
            at += RRA_DEF_LEN;
        }

        let live = if version.as_str() >= "0003" { 16 } else { 8 };
        r.need(at, live, "live header")?;
        let last_up = r.u64(at) as i64;
        let last_up_usec = if live == 16 { r.u64(at + 8) as i64 } else { 0 };
        if !(0..TIME_LIMIT).contains(&last_up) {
            return Err(r.err(at, ErrorKind::LastUpdate(last_up)));
        }
        at += live;

        let prep = nrra
            .checked_mul(nds)
            .and_then(|n| n.checked_mul(CDP_PREP_LEN))
            .and_then(|n| n.checked_add(nds * PDP_PREP_LEN))
            .unwrap_or(usize::MAX);
        r.need(at, prep, "preparation areas")?;
        at += prep;

        r.need(at, nrra * RRA_PTR_LEN, "RRA pointers")?;
        for (index, def) in rra.iter_mut().enumerate() {
            def.cur_row = r.u64(at);
            if def.cur_row >= def.rows {
                return Err(r.err(
                    at,
                    ErrorKind::CurRow {
                        index,
                        cur_row: def.cur_row,
                        rows: def.rows,
                    },
                ));
            }
            at += RRA_PTR_LEN;
        }

        let mut offset = at as u64;
        for def in &mut rra {
            def.offset = offset;
            let size = def
                .rows
                .checked_mul(ds_count * 8)
                .and_then(|n| n.checked_add(offset))
                .filter(|&end| end <= len);
            offset = size.ok_or_else(|| {
                r.err(
                    bytes.len(),
                    ErrorKind::ShortData {
                        end: offset.saturating_add(def.rows.saturating_mul(ds_count * 8)),
                        len,
                    },
                )
            })?;
        }

        Ok(Rrd {
            path: path.to_path_buf(),
            header: Header {
                version,
                ds_count,
                rra_count,
                pdp_step,
            },
            ds,
            rra,
            last_up,
            last_up_usec,
            bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn ds(&self) -> &[DsDef] {
        &self.ds
    }

    pub fn rras(&self) -> &[RraDef] {
        &self.rra
    }

    /// Seconds of the last update (`rrdtool last`).
    pub fn last_update(&self) -> i64 {
        self.last_up
    }

    /// Microseconds of the last update past [`Rrd::last_update`] (0 before version 0003).
    pub fn last_update_usec(&self) -> i64 {
        self.last_up_usec
    }

    /// Seconds per row of RRA `index`.
    pub fn rra_step(&self, index: usize) -> i64 {
        (self.header.pdp_step * self.rra[index].pdp_count) as i64
    }

    /// The value of data source `ds` in the stored row `row` of RRA `rra` (slot order,
    /// not time order). Panics if an index is out of range.
    pub fn value(&self, rra: usize, row: u64, ds: usize) -> f64 {
        let def = &self.rra[rra];
        assert!(row < def.rows && ds < self.ds.len());
        let at = def.offset + (row * self.header.ds_count + ds as u64) * 8;
        let at = at as usize;
        f64::from_le_bytes(self.bytes[at..at + 8].try_into().expect("8 bytes"))
    }

    /// The rows of RRA `rra` in time order, oldest first: `(t, row)` where `t` ends the
    /// row's interval and `row` holds one value per data source (NaN where unknown).
    /// The newest row ends at `last_update - last_update % step`.
    pub fn rra_rows(&self, rra: usize) -> impl Iterator<Item = (i64, Vec<f64>)> + '_ {
        let def = &self.rra[rra];
        let step = self.rra_step(rra);
        let rows = def.rows;
        let newest = self.last_up - self.last_up % step;
        let oldest = newest - step * (rows as i64 - 1);
        (0..rows).map(move |k| {
            let slot = (def.cur_row + 1 + k) % rows;
            let row = (0..self.ds.len())
                .map(|d| self.value(rra, slot, d))
                .collect();
            (oldest + k as i64 * step, row)
        })
    }

    /// The RRA `rrdtool fetch` reads for `cf` over `start..end` at `resolution`: among
    /// the RRAs of that function (and, for AVERAGE, MIN, MAX and LAST, every RRA of one
    /// step per row of any of those four), the one covering `start` with the step
    /// closest to `resolution` (the first on a tie); if none covers it, the one
    /// covering most of the range, then the closest step.
    pub fn choose_rra(&self, cf: Cf, start: i64, end: i64, resolution: i64) -> Option<usize> {
        let mut full: Option<(usize, i64)> = None;
        let mut part: Option<(usize, i64, i64)> = None;
        for (i, def) in self.rra.iter().enumerate() {
            let serves = def.cf == cf || (def.pdp_count == 1 && cf.is_plain() && def.cf.is_plain());
            if !serves {
                continue;
            }
            let step = self.rra_step(i);
            let cal_end = self.last_up - self.last_up % step;
            let cal_start = cal_end - step.saturating_mul(def.rows as i64);
            let diff = (resolution - step).abs();
            if cal_start <= start {
                if full.is_none_or(|(_, d)| diff < d) {
                    full = Some((i, diff));
                }
            } else {
                let covered = (end - start) - (cal_start - start);
                if part.is_none_or(|(_, c, d)| c < covered || (c == covered && diff < d)) {
                    part = Some((i, covered, diff));
                }
            }
        }
        full.map(|(i, _)| i).or(part.map(|(i, _, _)| i))
    }

    /// What `rrdtool fetch FILE CF -s start -e end -r resolution` answers.
    pub fn fetch(
        &self,
        cf: Cf,
        start: i64,
        end: i64,
        resolution: i64,
    ) -> Result<Fetched, FetchError> {
        if start < MIN_FETCH_START {
            return Err(FetchError::StartTooEarly { start });
        }
        if end < start {
            return Err(FetchError::EndBeforeStart { start, end });
        }
        if end >= TIME_LIMIT {
            return Err(FetchError::EndTooLate { end });
        }
        if resolution < 1 {
            return Err(FetchError::ZeroResolution);
        }
        let rra = self
            .choose_rra(cf, start, end, resolution.min(TIME_LIMIT))
            .ok_or(FetchError::NoMatchingRra { cf })?;
        let def = &self.rra[rra];
        let rows = def.rows as i64;
        let step = self.rra_step(rra);
        let start = start - start % step;
        let end = end + (step - end % step);
        let rra_end = self.last_up - self.last_up % step;
        let rra_start = rra_end - step * (rows - 1);
        if (end - start) / step > MAX_FETCH_ROWS {
            return Err(FetchError::TooManyRows {
                rows: (end - start) / step,
            });
        }
        let start_offset = (start + step - rra_start) / step;
        let end_offset = (rra_end - end) / step;
        // first stored row read: the one after the current, moved on by start_offset
        let mut pointer = (def.cur_row as i64 + 1 + start_offset.max(0)) % rows;
        let mut out = Vec::with_capacity(((end - start) / step).max(0) as usize);
        let nds = self.ds.len();
        for i in start_offset..rows - end_offset {
            if i < 0 || i >= rows {
                out.push(vec![f64::NAN; nds]);
            } else {
                if pointer >= rows {
                    pointer -= rows;
                }
                out.push(
                    (0..nds)
                        .map(|d| self.value(rra, pointer as u64, d))
                        .collect(),
                );
                pointer += 1;
            }
        }
        Ok(Fetched {
            start,
            end,
            step,
            rra,
            rows: out,
        })
    }
}

#[cfg(test)]
mod tests;
