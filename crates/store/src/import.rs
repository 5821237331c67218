//! Importing history (whisper files, RRD archives): a series created with the
//! archives, method and xFilesFactor of its source when it is absent, and each source
//! archive's points written with whisper-fill semantics — a slot that already holds a
//! value (a direct write or the rollup of the level below) is left alone; only empty
//! slots are filled.
//!
//! # Where the points of each archive go
//!
//! When the series has the source's archives (always, when the import created it),
//! the points of source archive `k` are written *directly* to level `k`, every one of
//! them, not only those older than archive `k - 1`'s retention. A read of level `k`
//! takes a direct write before the rollup of level `k - 1` (`read.rs`), so it answers
//! exactly what the source archive holds, where whisper would answer from that
//! archive too:
//!
//! - in the range level `k - 1` also covers, the source's coarse value was computed by
//!   whisper's propagation when the fine points were written; the rollup of the
//!   imported fine points would mostly agree, but not at the edge of the fine
//!   archive's retention, where whisper's fine ring has already lost points that
//!   went into the coarse value, and not where the file was written with another
//!   xFilesFactor or method than it now declares;
//! - in the range only level `k` covers, there is nothing below to roll up.
//!
//! The cost: a coarse slot filled by an import keeps the imported value when live
//! points later arrive in the finer level under it (a direct write wins over the
//! rollup). The import fills only slots that were empty, so this concerns coarse slots
//! the live data had not reached (or not to xFilesFactor) before the import.
//!
//! When the series exists with other archives, each source archive contributes only
//! the points older than the finer source archives cover, placed by age like any write
//! (the first level whose retention covers the point, aligned to its step), and
//! again only into empty slots.
//!
//! Points a level's retention no longer covers (`slot <= now - retention`, which no
//! read of that level returns) and points further in the future than
//! `max_future_secs` are counted and dropped.

use std::sync::Arc;

use sumi_model::SeriesConfig;

use crate::read::{Scratch, SeriesView};
use crate::series::ClassInfo;
use crate::store::Store;
use crate::wal::record::{WalPoint, SLOT_LIMIT};
use crate::StoreError;

/// Points per WAL record written by an import.
const CHUNK: usize = 65_536;

/// What [`Store::import_series`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportOutcome {
    /// The series did not exist and was created with the given config.
    pub created: bool,
    /// The series existed with other archives than the source's: points were placed by
    /// age (see the module doc of `import`).
    pub other_archives: bool,
    /// Points written.
    pub written: u64,
    /// Points left out because their slot already held a value.
    pub present: u64,
    /// Points beyond their level's retention, or too far in the future.
    pub out_of_range: u64,
}

impl Store {
    /// Imports one series: creates it with `config` when absent (no new-series rate
    /// limit applies: this is an administrative load; `max_series` does), then writes
    /// `archives[k]`, the `(time, value)` points of the source's archive `k` (the
    /// archives of `config.retention`, finest first), filling only empty slots. See
    /// the module doc of `import` for where each archive's points go.
    ///
    /// Not atomic: on an error some points may be written; importing the same source
    /// again is safe (filled slots are left alone). `Backpressure` asks the caller to
    /// wait and retry.
    pub fn import_series(
        &self,
        name: &str,
        config: &SeriesConfig,
        archives: &[Vec<(i64, f64)>],
    ) -> Result<ImportOutcome, StoreError> {
        let inner = &self.inner;
        inner.admit()?;
        let mut out = ImportOutcome::default();
        let (id, class) = {
            let found = {
                let idx = inner.index.read();
                idx.lookup(name.as_bytes()).and_then(|id| {
                    let meta = idx.meta(id)?;
                    Some((id, idx.class(meta.class)?.clone()))
                })
            };
            match found {
                Some(f) => f,
                None => {
                    let mut idx = inner.index.write();
                    let id = match idx.lookup(name.as_bytes()) {
                        Some(id) => id,
                        None => {
                            let max = inner.opts.max_series;
                            if max > 0 && idx.live_len() >= max {
                                return Err(StoreError::Admin(format!(
                                    "cannot create {name:?}: the store holds max_series = {max} series"
                                )));
                            }
                            out.created = true;
                            let id = idx.create(name, config)?;
                            idx.write_log()?;
                            id
                        }
                    };
                    let class = idx
                        .meta(id)
                        .and_then(|m| idx.class(m.class).cloned())
                        .ok_or_else(|| StoreError::NotFound(name.to_string()))?;
                    (id, class)
                }
            }
        };
        if out.created {
            inner
                .metrics
                .series_created
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let now = inner.now();
        let same = *class.retention == *config.retention;
        out.other_archives = !same;
        // (level, slot, value), placed
        let mut placed: Vec<(usize, i64, f64)> = Vec::new();
        let src = config.retention.archives();
        for (k, points) in archives.iter().enumerate() {
            // the source's coverage of finer archives: only older points come from k
            let finer_cover = match k.checked_sub(1).and_then(|j| src.get(j)) {
                Some(a) if !same => now.saturating_sub(a.retention_secs()),
                _ => i64::MAX,
            };
            for &(ts, v) in points {
                if ts >= finer_cover {
                    continue;
                }
                let level = if same {
                    k
                } else {
                    match class.level_for_age(now.saturating_sub(ts)) {
                        Some(l) => l,
                        None => {
                            out.out_of_range += 1;
                            continue;
                        }
                    }
                };
                match slot_in(&class, level, ts, now, inner.opts.max_future_secs) {
                    Some(slot) => placed.push((level, slot, v)),
                    None => out.out_of_range += 1,
                }
            }
        }
        if !out.created && !placed.is_empty() {
            let before = placed.len();
            self.keep_empty(id, &class, &mut placed);
            out.present = (before - placed.len()) as u64;
        }
        let mut wal = Vec::with_capacity(placed.len().min(CHUNK));
        let mut classes = Vec::with_capacity(placed.len().min(CHUNK));
        for chunk in placed.chunks(CHUNK) {
            wal.clear();
            classes.clear();
            for &(level, slot, value) in chunk {
                wal.push(WalPoint {
                    series: id,
                    level: level as u8,
                    slot,
                    value,
                });
                classes.push(class.id);
            }
            inner.commit_placed(&wal, &classes)?;
            out.written += chunk.len() as u64;
        }
        let m = &inner.metrics;
        m.points_stored
            .fetch_add(out.written, std::sync::atomic::Ordering::Relaxed);
        Ok(out)
    }

    /// Drops from `placed` the points whose slot already holds a value, as a read of
    /// that level finds it (direct writes, else the rollup of the level below).
    fn keep_empty(&self, id: u32, class: &Arc<ClassInfo>, placed: &mut Vec<(usize, i64, f64)>) {
        let inner = &self.inner;
        let mut head = Vec::new();
        let (_frozen, version) = inner.snapshot_series(id, &mut head);
        let roll = inner.parts.roll();
        let Some(meta) = inner.index.read().meta(id) else {
            return;
        };
        let view = SeriesView {
            series: id,
            class,
            meta,
            head: &head,
            version: &version,
            roll: &roll,
            metrics: &inner.metrics,
        };
        let mut sc = Scratch::default();
        let mut present: Vec<Vec<bool>> = Vec::new();
        let mut lows: Vec<i64> = Vec::new();
        for level in 0..class.levels.len() {
            let step = class.step(level);
            let (lo, hi) = placed
                .iter()
                .filter(|p| p.0 == level)
                .fold((i64::MAX, i64::MIN), |(lo, hi), p| {
                    (lo.min(p.1), hi.max(p.1))
                });
            if lo > hi {
                present.push(Vec::new());
                lows.push(0);
                continue;
            }
            let n = ((hi - lo) / step + 1) as usize;
            let mut vals = vec![None; n];
            view.read_level(level, lo, hi + step, &mut vals, &mut sc);
            present.push(vals.iter().map(Option::is_some).collect());
            lows.push(lo);
        }
        placed.retain(|&(level, slot, _)| {
            let i = ((slot - lows[level]) / class.step(level)) as usize;
            !present[level].get(i).copied().unwrap_or(false)
        });
    }
}

/// The slot of `ts` at `level`, if a read of that level can still return it.
fn slot_in(class: &ClassInfo, level: usize, ts: i64, now: i64, max_future: i64) -> Option<i64> {
    let l = class.levels.get(level)?;
    if ts > now.saturating_add(max_future) {
        return None;
    }
    let slot = ts.checked_sub(ts.rem_euclid(l.step))?;
    if slot <= now.saturating_sub(l.retention) || !(-SLOT_LIMIT..=SLOT_LIMIT).contains(&slot) {
        return None;
    }
    Some(slot)
}
