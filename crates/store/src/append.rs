//! The write path: names → series ids (creating series, logged before use), each point
//! placed at its level and slot like whisper's `update_many` (or refused as too old or
//! too new), one WAL record per batch queued under the append lock, the group commit,
//! and only then the rows applied to the head, in WAL order: a batch whose log write
//! fails is never visible to readers (the `Sink` contract).

use std::sync::atomic::Ordering;
use std::time::Instant;

use sumi_model::{AppendOutcome, Batch, Sink, SinkError};

use crate::series::{ClassInfo, SeriesIndex};
use crate::store::{Inner, Store};
use crate::wal::record::{encode_points, WalPoint, SLOT_LIMIT};
use crate::StoreError;

impl Sink for Store {
    /// The new-series budget throttles ([`StoreError::NewSeriesRate`] → `Throttled`,
    /// with the time until the budget lets a series through); `close()` closes; every
    /// other failure (disk full, head far behind, a failed write or fsync) makes the
    /// store unavailable.
    fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
        self.write(batch).map_err(sink_error)
    }
}

/// The `Sink` face of a store error (see [`Sink for Store`](Store)).
fn sink_error(e: StoreError) -> SinkError {
    match &e {
        StoreError::NewSeriesRate { retry_after, .. } => SinkError::Throttled {
            retry_after: *retry_after,
            reason: e.to_string(),
        },
        StoreError::Closed => SinkError::Closed(e.to_string()),
        _ => SinkError::Unavailable(e.to_string()),
    }
}

impl Store {
    /// [`Sink::append`] with the store's own error.
    pub fn write(&self, batch: &Batch) -> Result<AppendOutcome, StoreError> {
        self.write_with_now(batch, None, &mut Vec::new())
    }

    /// [`Sink::append`] that also gives each point's series id in `ids` (cleared
    /// first; `u32::MAX` for a point whose series the store refused to create), so a
    /// caller keeping state per series (the anomaly detectors) needs no second name
    /// lookup. On `Err`, `ids` means nothing.
    pub fn append_ids(
        &self,
        batch: &Batch,
        ids: &mut Vec<u32>,
    ) -> Result<AppendOutcome, SinkError> {
        self.write_with_now(batch, None, ids).map_err(sink_error)
    }

    /// [`Store::write`] with `now` in place of the store's clock for placing the points
    /// (which archive, too old or too new): a node applying a log places each point as
    /// of when the ingest node took it, whatever the delay since.
    pub fn write_at(&self, batch: &Batch, now: i64) -> Result<AppendOutcome, StoreError> {
        self.write_with_now(batch, Some(now), &mut Vec::new())
    }

    /// [`Store::write_at`] that also gives each point's series id in `ids`, as
    /// [`Store::append_ids`] does: a storage node scoring the log's points (anomaly
    /// detection) finds each detector by it.
    pub fn write_at_ids(
        &self,
        batch: &Batch,
        now: i64,
        ids: &mut Vec<u32>,
    ) -> Result<AppendOutcome, StoreError> {
        self.write_with_now(batch, Some(now), ids)
    }

    fn write_with_now(
        &self,
        batch: &Batch,
        now: Option<i64>,
        ids: &mut Vec<u32>,
    ) -> Result<AppendOutcome, StoreError> {
        self.inner.append(batch, now, ids).inspect_err(|e| {
            let m = &self.inner.metrics;
            match e {
                StoreError::NewSeriesRate { .. } => &m.new_series_throttled,
                _ => &m.append_errors,
            }
            .fetch_add(1, Ordering::Relaxed);
        })
    }
}

/// Names looked up together in each pass of [`Inner::resolve`]: enough that the
/// loads of a pass have arrived before the next pass reads them, few enough that they
/// stay in the core's cache.
const CHUNK: usize = 256;

/// Where a point goes, or why not.
enum Placed {
    At { level: u8, slot: i64 },
    TooOld,
    TooNew,
}

fn place(class: &ClassInfo, ts: i64, now: i64, max_future: i64) -> Placed {
    if ts > now.saturating_add(max_future) {
        return Placed::TooNew;
    }
    let age = now.saturating_sub(ts);
    if age >= class.max_retention {
        return Placed::TooOld;
    }
    let Some(level) = class.level_for_age(age) else {
        return Placed::TooOld;
    };
    let step = class.step(level);
    let Some(slot) = ts.checked_sub(ts.rem_euclid(step)) else {
        return Placed::TooOld;
    };
    if slot < -SLOT_LIMIT {
        return Placed::TooOld;
    }
    if slot > SLOT_LIMIT {
        return Placed::TooNew;
    }
    Placed::At {
        level: level as u8,
        slot,
    }
}

impl Inner {
    /// Whether the store takes writes at all: open, and its WAL not failed.
    fn check_open(&self) -> Result<(), StoreError> {
        if self.admission.is_closed() {
            return Err(StoreError::Closed);
        }
        match self.wal.failure() {
            Some(e) => Err(StoreError::Poisoned(e)),
            None => Ok(()),
        }
    }

    /// Whether a write (an append, an import, a partition copy) may go ahead now: the
    /// store is open, its WAL healthy, the disk not full, and the head not four times
    /// `flush_bytes` (`Backpressure`: wait and send the same points again).
    pub(crate) fn admit(&self) -> Result<(), StoreError> {
        self.check_open()?;
        self.admission.check_disk(&self.metrics)?;
        let held = self.head.held_bytes();
        if held > self.opts.flush_bytes.saturating_mul(4) {
            self.workers.wake();
            return Err(StoreError::Backpressure(format!(
                "the head holds {held} bytes, four times flush_bytes: flushes are failing or far behind"
            )));
        }
        Ok(())
    }

    /// Resolves every name of the batch to a series id, creating missing series (their
    /// log records are written before this returns, so before any WAL record).
    fn resolve(&self, batch: &Batch, ids: &mut Vec<u32>) -> Result<(), StoreError> {
        ids.clear();
        // the batch index and name hash of each name not found
        let mut missing: Vec<(usize, u64)> = Vec::new();
        let names: Vec<&str> = batch.iter().map(|(n, _)| n).collect();
        {
            let idx = self.index.read();
            // In passes over chunks of the batch, so that the lookups of many names
            // overlap in memory instead of waiting on each other (at millions of
            // series each is a few cache misses): every name's hash, loading its table
            // slot; every name's candidate from the hash bits the table keeps, loading
            // where its name is; loading the candidate's name and settings; then a
            // check of each candidate's name. A name the same as the previous one (the
            // same bytes of the batch) takes its answer.
            let mut hashes: Vec<Option<u64>> = Vec::with_capacity(CHUNK);
            let mut prev: Option<&str> = None;
            let mut last: (Option<u32>, u64) = (None, 0);
            for (c, chunk) in names.chunks(CHUNK).enumerate() {
                let base = c * CHUNK;
                hashes.clear();
                for &name in chunk {
                    let repeat = prev.is_some_and(|pn| {
                        std::ptr::eq(pn.as_ptr(), name.as_ptr()) && pn.len() == name.len()
                    });
                    if repeat {
                        hashes.push(None);
                        continue;
                    }
                    let hash = idx.name_hash(name.as_bytes());
                    idx.prefetch_slot(hash);
                    hashes.push(Some(hash));
                    prev = Some(name);
                }
                for hash in &hashes {
                    let c = match *hash {
                        None => u32::MAX,
                        Some(hash) => idx.lookup_candidate(hash).unwrap_or(u32::MAX),
                    };
                    if c != u32::MAX {
                        idx.prefetch_name_place(c);
                    }
                    ids.push(c);
                }
                for &c in ids.get(base..).unwrap_or_default() {
                    if c != u32::MAX {
                        idx.prefetch_name_and_meta(c);
                    }
                }
                for (k, (&name, hash)) in chunk.iter().zip(&hashes).enumerate() {
                    let i = base + k;
                    let Some(slot) = ids.get_mut(i) else { continue };
                    let found = match *hash {
                        None => last,
                        Some(hash) => {
                            let c = *slot;
                            let id = if c == u32::MAX {
                                None
                            } else if idx.is_named(c, name.as_bytes()) {
                                Some(c)
                            } else {
                                idx.lookup_hashed(hash, name.as_bytes())
                            };
                            (id, hash)
                        }
                    };
                    match found.0 {
                        Some(id) => *slot = id,
                        None => {
                            *slot = u32::MAX;
                            missing.push((i, found.1));
                        }
                    }
                    last = found;
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let mut idx = self.index.write();
        let mut created = 0u64;
        let mut refused = 0u64;
        let mut throttled = None;
        let max = self.opts.max_series;
        let t = Instant::now();
        for (i, hash) in missing {
            let Some(&name) = names.get(i) else { continue };
            let id = match idx.lookup_hashed(hash, name.as_bytes()) {
                Some(id) => id,
                // over max_series: the point is refused (its id stays u32::MAX)
                None if max > 0 && idx.live_len() >= max => {
                    refused += 1;
                    continue;
                }
                None => {
                    if let Err(wait) = self.admission.take_create(t) {
                        throttled = Some(wait);
                        break;
                    }
                    created += 1;
                    create_series(&mut idx, &self.opts.rules, name, hash)?
                }
            };
            if let Some(slot) = ids.get_mut(i) {
                *slot = id;
            }
        }
        idx.write_log()?;
        drop(idx);
        self.metrics
            .series_created
            .fetch_add(created, Ordering::Relaxed);
        if refused > 0 {
            self.admission.log_series_limit(max, refused);
        }
        if let Some(retry_after) = throttled {
            return Err(StoreError::NewSeriesRate {
                retry_after,
                detail: format!(
                    "the batch would create series faster than max_new_series_per_minute = {}; \
                     it waits ({created} created now)",
                    self.opts.max_new_series_per_minute
                ),
            });
        }
        Ok(())
    }

    /// Appends a batch (see the `Sink` contract). The rows reach the head only after
    /// their WAL record is written, so on `Err` none of the batch is visible. When the
    /// WAL write fails the store is poisoned and refuses writes until it is reopened. A
    /// write that fails for lack of space is undone instead (the segment is cut back)
    /// and the store goes on: this returns `Err(Backpressure)` and the client sends the
    /// batch again.
    ///
    /// Rows are applied in WAL order ([`Wal::turn`](crate::wal::Wal::turn)), so that
    /// the later of two writes to one slot wins in the head as on replay; a freeze
    /// waits for every queued record to be applied before it takes the head.
    pub(crate) fn append(
        &self,
        batch: &Batch,
        now: Option<i64>,
        ids: &mut Vec<u32>,
    ) -> Result<AppendOutcome, StoreError> {
        ids.clear();
        let mut out = AppendOutcome::default();
        if batch.is_empty() {
            // nothing to write, so nothing to refuse for want of room
            self.check_open()?;
            return Ok(out);
        }
        self.admit()?;
        let now = now.unwrap_or_else(|| self.now());
        ids.reserve(batch.len());
        self.resolve(batch, ids)?;

        // place points; the class of each accepted point rides along for the head
        let mut points: Vec<WalPoint> = Vec::with_capacity(batch.len());
        let mut classes: Vec<u16> = Vec::with_capacity(batch.len());
        {
            let idx = self.index.read();
            let mut cached: Option<(u16, &ClassInfo)> = None;
            for ((_, p), &id) in batch.iter().zip(ids.iter()) {
                let Some(meta) = idx.meta(id) else {
                    if id == u32::MAX {
                        out.series_limit += 1;
                    }
                    continue;
                };
                let class = match cached {
                    Some((c, info)) if c == meta.class => info,
                    _ => {
                        let Some(info) = idx.class(meta.class) else {
                            continue;
                        };
                        cached = Some((meta.class, info));
                        info
                    }
                };
                match place(class, p.ts, now, self.opts.max_future_secs) {
                    Placed::At { level, slot } => {
                        points.push(WalPoint {
                            series: id,
                            level,
                            slot,
                            value: p.value,
                        });
                        classes.push(meta.class);
                    }
                    Placed::TooOld => out.too_old += 1,
                    Placed::TooNew => out.too_new += 1,
                }
            }
        }
        self.metrics
            .rejected_too_old
            .fetch_add(out.too_old, Ordering::Relaxed);
        self.metrics
            .rejected_too_new
            .fetch_add(out.too_new, Ordering::Relaxed);
        self.metrics
            .rejected_series_limit
            .fetch_add(out.series_limit, Ordering::Relaxed);
        if points.is_empty() {
            return Ok(out);
        }
        self.commit_placed(&points, &classes)?;
        out.accepted = points.len() as u64;
        self.metrics
            .points_stored
            .fetch_add(out.accepted, Ordering::Relaxed);
        self.metrics.appends.fetch_add(1, Ordering::Relaxed);
        Ok(out)
    }

    /// Writes points already placed at their level and slot: one WAL record, the
    /// group commit, then the rows into the head in WAL order. Points older than a
    /// level's rollup horizon mark their partitions dirty first.
    pub(crate) fn commit_placed(
        &self,
        points: &[WalPoint],
        classes: &[u16],
    ) -> Result<(), StoreError> {
        let mut payload = Vec::new();
        encode_points(points, &mut payload);

        let (start, lsn) = {
            let mut ap = self.head.lock_append();
            if self.admission.is_closed() {
                return Err(StoreError::Closed);
            }
            // late points into partitions whose rollup has started make them dirty
            let mut roll_changed = false;
            for (p, &c) in points.iter().zip(classes) {
                let level = usize::from(p.level);
                if p.slot < ap.roll.horizon(c, level) {
                    let idx = self.index.read();
                    if let Some(class) = idx.class(c) {
                        roll_changed |= ap.roll.mark_write(class, level, p.slot);
                    }
                }
            }
            if roll_changed {
                self.parts.publish_roll(&ap.roll);
            }
            self.wal.enqueue(&payload)?
        };
        let committed = self.wal.commit(lsn);
        // every record takes its turn, applied or not, so that later ones go on
        let turn = self.wal.turn(start, lsn);
        committed?;
        self.head.push(&turn, points, classes);
        drop(turn);
        if self.head.active_bytes() >= self.opts.flush_bytes {
            self.workers.wake();
        }
        Ok(())
    }
}

fn create_series(
    idx: &mut SeriesIndex,
    rules: &sumi_model::SeriesRules,
    name: &str,
    hash: u64,
) -> Result<u32, StoreError> {
    let cfg = rules.config_for(name);
    idx.create_hashed(name, hash, &cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::class::partition_widths;
    use std::sync::Arc;
    use sumi_model::Retention;

    fn class(spec: &str) -> ClassInfo {
        let r = Arc::new(Retention::parse(spec).unwrap());
        let w = partition_widths(r.archives(), 8);
        ClassInfo::new(0, r, &w)
    }

    fn at(p: Placed) -> Option<(u8, i64)> {
        match p {
            Placed::At { level, slot } => Some((level, slot)),
            _ => None,
        }
    }

    #[test]
    fn placement_like_whisper_update_many() {
        let c = class("10s:1h,1m:1d");
        let now = 1_000_000;
        assert_eq!(
            at(place(&c, now - 5, now, 3600)),
            Some((0, now - 5 - (now - 5) % 10))
        );
        assert_eq!(at(place(&c, now - 3600, now, 3600)).map(|x| x.0), Some(0));
        assert_eq!(at(place(&c, now - 3601, now, 3600)).map(|x| x.0), Some(1));
        assert_eq!(
            at(place(&c, now - 3601, now, 3600)).map(|x| x.1 % 60),
            Some(0)
        );
        assert!(matches!(place(&c, now - 86_400, now, 3600), Placed::TooOld));
        assert_eq!(at(place(&c, now - 86_399, now, 3600)).map(|x| x.0), Some(1));
        assert_eq!(at(place(&c, now + 3600, now, 3600)).map(|x| x.0), Some(0));
        assert!(matches!(place(&c, now + 3601, now, 3600), Placed::TooNew));
        assert!(matches!(place(&c, i64::MIN, now, 3600), Placed::TooOld));
        assert!(matches!(place(&c, i64::MAX, now, 3600), Placed::TooNew));
        assert!(matches!(
            place(&c, i64::MAX, i64::MAX, i64::MAX),
            Placed::TooNew
        ));
        // negative timestamps align like Python's modulo
        assert_eq!(at(place(&c, -15, 0, 3600)), Some((0, -20)));
    }
}
