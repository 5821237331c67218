//! Copying series from one store to another with exactly the state they have: a
//! cluster node taking over a partition copies its series from a replica
//! (`docs/cluster.md`, "Moving a partition").
//!
//! What is copied is each series' **direct writes** at every level (the head's rows
//! and the direct parts, the newest write of each slot), with the series' archives,
//! method and xFilesFactor. Rollups are not copied: the receiving store computes them
//! from the direct writes exactly as the sending one does (`rollup.rs`, `read.rs`), so
//! every read of the copy answers what a read of the original answers.
//!
//! # The dump format
//!
//! A stream, so that a partition of any size is copied in bounded memory; integers
//! little-endian:
//!
//! | bytes | field |
//! | --- | --- |
//! | 8 | magic `SUMIDMP1` |
//! | 4 | partition (`u32`) |
//! | 8 | offset (`i64`): every log record before it is in the dump |
//! | per series: 1 | `1` |
//! | 2 | name length, then the name (UTF-8) |
//! | 2 | retention length, then the retention (`10s:1d,1m:30d`) |
//! | 1 | method code, 4 xFilesFactor (`f32` bits), 1 level count |
//! | per level: 4 | point count, then per point `i64` slot and `f64` value bits |
//! | end: 1 | `0`, then 8: the series count (`u64`) |
//!
//! The end marker tells a complete dump from one cut short (a sender that died): a
//! reader that reaches the end of its input before it answers an error.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use sumi_model::{AggMethod, Retention, SeriesConfig};

use crate::head::{key_level, key_slot};
use crate::part::Kind;
use crate::store::Store;
use crate::wal::record::{WalPoint, SLOT_LIMIT};
use crate::StoreError;

/// The first bytes of a dump.
pub const DUMP_MAGIC: &[u8; 8] = b"SUMIDMP1";

/// Points per WAL record written by [`Store::load_direct`].
const CHUNK: usize = 65_536;

/// Most points a dump may give one level of one series (a 10 s archive of ten years
/// holds 31.5 M): a bound on what a reader allocates.
const MAX_LEVEL_POINTS: u32 = 64 << 20;

/// One series as a dump carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectSeries {
    pub name: String,
    pub config: SeriesConfig,
    /// Per level (finest first), the direct writes as `(slot, value)`, slots ascending.
    pub levels: Vec<Vec<(i64, f64)>>,
}

impl DirectSeries {
    /// Points over all levels.
    pub fn points(&self) -> u64 {
        self.levels.iter().map(|l| l.len() as u64).sum()
    }
}

impl Store {
    /// The names of the live series for which `keep` is true, in id order.
    pub fn series_names_where(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        let idx = self.inner.index.read();
        (0..idx.len() as u32)
            .filter(|&id| idx.meta(id).is_some())
            .map(|id| idx.name_str(id))
            .filter(|n| !n.is_empty() && keep(n))
            .map(str::to_string)
            .collect()
    }

    /// The direct writes of series `name` at each level, within the level's retention;
    /// `None` for an unknown series.
    pub fn direct_writes(&self, name: &str) -> Option<DirectSeries> {
        let inner = &self.inner;
        let (id, meta, class) = {
            let idx = inner.index.read();
            let id = idx.lookup(name.as_bytes())?;
            let meta = idx.meta(id)?;
            (id, meta, idx.class(meta.class)?.clone())
        };
        let mut head = Vec::new();
        let (_frozen, version) = inner.snapshot_series(id, &mut head);
        let now = inner.now();
        let mut slots = Vec::new();
        let mut values = Vec::new();
        let mut levels = Vec::with_capacity(class.levels.len());
        for (level, l) in class.levels.iter().enumerate() {
            let oldest = now.saturating_sub(l.retention);
            // precedence: the head (newest first), then parts newest first; the first
            // value found for a slot wins
            let mut got: BTreeMap<i64, f64> = BTreeMap::new();
            for &(key, v) in &head {
                if usize::from(key_level(key)) == level {
                    got.entry(key_slot(key)).or_insert(v);
                }
            }
            if let Some(parts) = version.level(class.id, level) {
                for p in parts.values() {
                    for r in p.list(Kind::Direct).iter().rev() {
                        let Some(e) = r.part.entry(id) else { continue };
                        slots.clear();
                        values.clear();
                        if let Err(err) = r.part.read(&e, &mut slots, &mut values) {
                            inner
                                .metrics
                                .blocks_corrupt
                                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tracing::error!(part = %r.part.path().display(), %err, "skipping a corrupt block");
                            continue;
                        }
                        for (&s, &v) in slots.iter().zip(&values) {
                            got.entry(s).or_insert(v);
                        }
                    }
                }
            }
            levels.push(got.into_iter().filter(|&(s, _)| s > oldest).collect());
        }
        Some(DirectSeries {
            name: name.to_string(),
            config: SeriesConfig {
                retention: class.retention.clone(),
                method: meta.method,
                xff: meta.xff,
            },
            levels,
        })
    }

    /// Writes a series' direct writes as they are: creates the series with its config
    /// when absent (no new-series rate limit: an administrative load; `max_series`
    /// applies), then writes every point into its level and slot, over what the slot
    /// held. The number of points written. An existing series with other archives is
    /// an error (its slots would not mean the same). `Backpressure` asks the caller to
    /// wait and load the series again (loading twice writes the same values).
    pub fn load_direct(&self, s: &DirectSeries) -> Result<u64, StoreError> {
        let inner = &self.inner;
        inner.admit()?;
        let name = s.name.as_str();
        let (id, class, created) = {
            let found = {
                let idx = inner.index.read();
                idx.lookup(name.as_bytes()).and_then(|id| {
                    let meta = idx.meta(id)?;
                    Some((id, idx.class(meta.class)?.clone()))
                })
            };
            match found {
                Some((id, class)) => (id, class, false),
                None => {
                    let mut idx = inner.index.write();
                    let (id, created) = match idx.lookup(name.as_bytes()) {
                        Some(id) => (id, false),
                        None => {
                            let max = inner.opts.max_series;
                            if max > 0 && idx.live_len() >= max {
                                return Err(StoreError::Admin(format!(
                                    "cannot create {name:?}: the store holds max_series = {max} series"
                                )));
                            }
                            let id = idx.create(name, &s.config)?;
                            idx.write_log()?;
                            (id, true)
                        }
                    };
                    let class = idx
                        .meta(id)
                        .and_then(|m| idx.class(m.class).cloned())
                        .ok_or_else(|| StoreError::NotFound(name.to_string()))?;
                    (id, class, created)
                }
            }
        };
        if created {
            inner
                .metrics
                .series_created
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if *class.retention != *s.config.retention {
            return Err(StoreError::Admin(format!(
                "{name:?} exists here with archives {} but is copied with {}",
                class.retention, s.config.retention
            )));
        }
        // what this node's retention has not dropped yet (the log's time on a storage
        // node, so a copy keeps what its source still holds)
        let now = inner.expiry_now();
        let mut wal = Vec::with_capacity(CHUNK);
        let mut written = 0u64;
        for (level, points) in s.levels.iter().enumerate() {
            let Some(l) = class.levels.get(level) else {
                break;
            };
            let oldest = now.saturating_sub(l.retention);
            for &(slot, value) in points {
                if slot <= oldest
                    || slot.rem_euclid(l.step.max(1)) != 0
                    || !(-SLOT_LIMIT..=SLOT_LIMIT).contains(&slot)
                {
                    continue;
                }
                wal.push(WalPoint {
                    series: id,
                    level: level as u8,
                    slot,
                    value,
                });
                if wal.len() == CHUNK {
                    inner.commit_placed(&wal, &vec![class.id; wal.len()])?;
                    written += wal.len() as u64;
                    wal.clear();
                }
            }
        }
        if !wal.is_empty() {
            inner.commit_placed(&wal, &vec![class.id; wal.len()])?;
            written += wal.len() as u64;
        }
        inner
            .metrics
            .points_stored
            .fetch_add(written, std::sync::atomic::Ordering::Relaxed);
        Ok(written)
    }
}

/// The dump's header: magic, partition, offset.
pub fn encode_dump_header(partition: u32, offset: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(DUMP_MAGIC);
    out.extend_from_slice(&partition.to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
}

/// One series of a dump.
pub fn encode_dump_series(s: &DirectSeries, out: &mut Vec<u8>) {
    let retention = s.config.retention.to_string();
    out.push(1);
    out.extend_from_slice(&(s.name.len().min(u16::MAX as usize) as u16).to_le_bytes());
    out.extend_from_slice(&s.name.as_bytes()[..s.name.len().min(u16::MAX as usize)]);
    out.extend_from_slice(&(retention.len() as u16).to_le_bytes());
    out.extend_from_slice(retention.as_bytes());
    out.push(s.config.method.code());
    out.extend_from_slice(&s.config.xff.to_bits().to_le_bytes());
    out.push(s.levels.len() as u8);
    for level in &s.levels {
        out.extend_from_slice(&(level.len() as u32).to_le_bytes());
        for &(slot, v) in level {
            out.extend_from_slice(&slot.to_le_bytes());
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
    }
}

/// The end of a dump: the series count.
pub fn encode_dump_end(series: u64, out: &mut Vec<u8>) {
    out.push(0);
    out.extend_from_slice(&series.to_le_bytes());
}

/// Why a dump could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("reading the dump: {0}")]
    Io(#[from] std::io::Error),
    #[error("the dump ends before its end marker (the sender stopped)")]
    Truncated,
    #[error("bad dump: {0}")]
    Bad(String),
}

/// Reads a dump from a byte stream, one series at a time.
pub struct DumpReader<R> {
    input: R,
    /// The partition and offset of the header.
    pub partition: u32,
    pub offset: i64,
    series: u64,
    done: bool,
}

impl<R: Read> DumpReader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R) -> Result<DumpReader<R>, DumpError> {
        let mut head = [0u8; 20];
        read_exact(&mut input, &mut head)?;
        if &head[..8] != DUMP_MAGIC {
            return Err(DumpError::Bad("not a sumi dump (bad magic)".into()));
        }
        let partition = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
        let offset = i64::from_le_bytes(head[12..20].try_into().unwrap_or_default());
        if offset < 0 {
            return Err(DumpError::Bad(format!("negative offset {offset}")));
        }
        Ok(DumpReader {
            input,
            partition,
            offset,
            series: 0,
            done: false,
        })
    }

    /// The next series; `None` at the end marker (the dump is complete).
    pub fn next_series(&mut self) -> Result<Option<DirectSeries>, DumpError> {
        if self.done {
            return Ok(None);
        }
        let mut tag = [0u8; 1];
        read_exact(&mut self.input, &mut tag)?;
        match tag[0] {
            0 => {
                let mut n = [0u8; 8];
                read_exact(&mut self.input, &mut n)?;
                let n = u64::from_le_bytes(n);
                if n != self.series {
                    return Err(DumpError::Bad(format!(
                        "the end marker counts {n} series, the dump held {}",
                        self.series
                    )));
                }
                self.done = true;
                Ok(None)
            }
            1 => {
                let name = self.string()?;
                if name.is_empty() {
                    return Err(DumpError::Bad("a series without a name".into()));
                }
                let retention = self.string()?;
                let retention = Retention::parse(&retention)
                    .map_err(|e| DumpError::Bad(format!("series {name:?}: {e}")))?;
                let mut fixed = [0u8; 6];
                read_exact(&mut self.input, &mut fixed)?;
                let method = AggMethod::from_code(fixed[0]).ok_or_else(|| {
                    DumpError::Bad(format!("series {name:?}: unknown method {}", fixed[0]))
                })?;
                let xff = f32::from_bits(u32::from_le_bytes(
                    fixed[1..5].try_into().unwrap_or_default(),
                ));
                let nlevels = usize::from(fixed[5]);
                if nlevels > retention.archives().len() {
                    return Err(DumpError::Bad(format!(
                        "series {name:?}: {nlevels} levels for {} archives",
                        retention.archives().len()
                    )));
                }
                let mut levels = Vec::with_capacity(nlevels);
                for _ in 0..nlevels {
                    let mut n = [0u8; 4];
                    read_exact(&mut self.input, &mut n)?;
                    let n = u32::from_le_bytes(n);
                    if n > MAX_LEVEL_POINTS {
                        return Err(DumpError::Bad(format!(
                            "series {name:?}: {n} points in one level"
                        )));
                    }
                    let mut pts = Vec::with_capacity((n as usize).min(65_536));
                    let mut buf = [0u8; 16];
                    for _ in 0..n {
                        read_exact(&mut self.input, &mut buf)?;
                        let slot = i64::from_le_bytes(buf[..8].try_into().unwrap_or_default());
                        let v = f64::from_bits(u64::from_le_bytes(
                            buf[8..].try_into().unwrap_or_default(),
                        ));
                        pts.push((slot, v));
                    }
                    levels.push(pts);
                }
                self.series += 1;
                Ok(Some(DirectSeries {
                    name,
                    config: SeriesConfig {
                        retention: Arc::new(retention),
                        method,
                        xff,
                    },
                    levels,
                }))
            }
            t => Err(DumpError::Bad(format!("unknown record tag {t}"))),
        }
    }

    fn string(&mut self) -> Result<String, DumpError> {
        let mut n = [0u8; 2];
        read_exact(&mut self.input, &mut n)?;
        let mut b = vec![0u8; usize::from(u16::from_le_bytes(n))];
        read_exact(&mut self.input, &mut b)?;
        String::from_utf8(b).map_err(|_| DumpError::Bad("a name that is not UTF-8".into()))
    }
}

fn read_exact(r: &mut impl Read, buf: &mut [u8]) -> Result<(), DumpError> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            DumpError::Truncated
        } else {
            DumpError::Io(e)
        }
    })
}

/// Reads a whole dump held in memory (tests, the fuzz target): header, series.
pub fn decode_dump(bytes: &[u8]) -> Result<(u32, i64, Vec<DirectSeries>), DumpError> {
    let mut r = DumpReader::new(bytes)?;
    let mut out = Vec::new();
    while let Some(s) = r.next_series()? {
        out.push(s);
    }
    Ok((r.partition, r.offset, out))
}
