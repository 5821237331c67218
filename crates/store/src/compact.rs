//! Compaction: merges runs of adjacent parts (by precedence) of one partition and kind
//! into one, newest winning per slot. A partition with more than
//! `max_parts_per_partition` parts gets its most balanced adjacent run of up to eight
//! merged (small fresh parts merge often, big old ones rarely: write amplification
//! stays logarithmic); a closed partition (end plus grace in the past) is merged into
//! one part for reads. Inputs are read sequentially with `pread`, blocks present in only
//! one input are copied without decoding.
//!
//! Rows of deleted series are dropped by every merge; once nothing else needs merging,
//! a part that still holds a deleted series is rewritten alone without it, so the
//! space of a delete comes back (`purge`).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::part::writer::PartWriter;
use crate::part::{min_series, Cursor, Header, Kind};
use crate::series::admin::DeletedSet;
use crate::store::Inner;
use crate::version::PartRef;
use crate::StoreError;

const MAX_RUN: usize = 8;
/// At most this many threads (and output parts) for one merge at a stop.
const MAX_WAYS: usize = 4;

/// True when merging `list` (one partition and kind) into one part is worth it: two
/// parts or more, not all written by one merge (a merge at a stop cuts its output in
/// parts of disjoint series ranges, which share their order: each series is in one of
/// them already).
fn needs_merge(list: &[PartRef]) -> bool {
    list.len() >= 2 && !list.windows(2).all(|w| w[0].order == w[1].order)
}

struct Job {
    run: Vec<PartRef>,
}

/// The run of 2..=8 adjacent parts whose merge is most balanced (total size over the
/// largest part's size, at least 1.5): parts of similar size merge, a big part waits
/// until enough small ones have merged into something comparable. That keeps the
/// bytes rewritten per byte flushed logarithmic instead of rewriting the whole open
/// partition every few flushes.
fn balanced_run(list: &[PartRef]) -> Option<Vec<PartRef>> {
    let mut best: Option<(f64, u64, usize, usize)> = None;
    for m in 2..=list.len().min(MAX_RUN) {
        for i in 0..=list.len() - m {
            let w = &list[i..i + m];
            let sum: u64 = w.iter().map(|r| r.part.bytes).sum();
            let max = w.iter().map(|r| r.part.bytes).max().unwrap_or(1).max(1);
            let ratio = sum as f64 / max as f64;
            if ratio < 1.5 {
                continue;
            }
            let better = match best {
                None => true,
                Some((br, bs, _, _)) => ratio > br || (ratio == br && sum < bs),
            };
            if better {
                best = Some((ratio, sum, i, m));
            }
        }
    }
    best.map(|(_, _, i, m)| list[i..i + m].to_vec())
}

impl Inner {
    /// Merges one run if any partition needs it, else rewrites one part holding deleted
    /// series; returns whether it did.
    pub(crate) fn compact_once(&self) -> Result<bool, StoreError> {
        let _m = self.parts.lock_maint();
        let deleted = self.index.read().deleted_ids();
        let Some(job) = self.pick_merge().or_else(|| self.pick_purge(&deleted)) else {
            return Ok(false);
        };
        // a stop lets a merge under way go on when the rate measured so far says it
        // ends within the close's merge time (it is then done, not redone by the
        // close), and abandons it otherwise, or once that time is up
        let budget = self.opts.close_merge;
        let bytes: u64 = job.run.iter().map(|r| r.part.bytes).sum();
        let ends = Instant::now() + Duration::from_secs_f64(bytes as f64 / self.stop_rate());
        self.merge_run(
            job,
            &deleted,
            &|| {
                self.workers
                    .stopped_at()
                    .is_some_and(|t| t.elapsed() >= budget || ends > t + budget)
            },
            1,
        )
    }

    /// The merge rate to expect at a stop: twice what merges achieved while ingest
    /// competed with them for the cores (once measured on the shared 2-core machine:
    /// 7.7 MB/s during a 1M-series ingest, 34 MB/s for a merge of the same parts after
    /// it); the close's deadline bounds the stop when this is too hopeful.
    fn stop_rate(&self) -> f64 {
        2.0 * self.merge_rate()
    }

    /// Bytes a second merges have read in this process (a guess before the first).
    fn merge_rate(&self) -> f64 {
        let bytes = self.metrics.compaction_bytes_in.load(Ordering::Relaxed) as f64;
        let micros = self.metrics.compaction_micros.load(Ordering::Relaxed) as f64;
        if bytes < 1e6 || micros < 1e5 {
            return 30e6;
        }
        bytes / (micros / 1e6)
    }

    /// At close, after the last flush: merges the parts of every partition that has
    /// several into one (up to eight at a time), smallest partitions first, so that a
    /// stopped store holds each series once per partition — short series would pay
    /// their per-series overhead once per flush otherwise. Gives up at `deadline`; a
    /// merge under way then is thrown away (its inputs stay), so a stop is bounded.
    /// Returns how many merges were installed.
    pub(crate) fn merge_at_close(&self, deadline: Instant) -> Result<u64, StoreError> {
        let _m = self.parts.lock_maint();
        let deleted = self.index.read().deleted_ids();
        // nothing else runs at a stop: every core merges a big run
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WAYS));
        let split = self.opts.close_merge_split_bytes.max(1);
        let mut merged = 0;
        while Instant::now() < deadline {
            let version = self.parts.current();
            let mut best: Option<(u64, Vec<PartRef>)> = None;
            for levels in &version.levels {
                for parts in levels {
                    for p in parts.values() {
                        for kind in [Kind::Direct, Kind::Rollup] {
                            let list = p.list(kind);
                            if !needs_merge(list) {
                                continue;
                            }
                            let run: Vec<PartRef> = list.iter().take(MAX_RUN).cloned().collect();
                            let bytes = run.iter().map(|r| r.part.bytes).sum();
                            if best.as_ref().is_none_or(|(b, _)| bytes < *b) {
                                best = Some((bytes, run));
                            }
                        }
                    }
                }
            }
            let Some((bytes, run)) = best else { break };
            let ways = cores.min(usize::try_from(bytes / split).unwrap_or(usize::MAX).max(1));
            // a merge that would not end in time is not started (the smallest is
            // tried first, so none would)
            let need = Duration::from_secs_f64(bytes as f64 / (self.stop_rate() * ways as f64));
            if Instant::now() + need > deadline {
                tracing::info!(
                    bytes,
                    secs = need.as_secs_f64(),
                    "parts left unmerged at close: the merge would outlast close_merge"
                );
                break;
            }
            if !self.merge_run(Job { run }, &deleted, &|| Instant::now() >= deadline, ways)? {
                break;
            }
            merged += 1;
        }
        Ok(merged)
    }

    /// Merges one run into one part (or, with `ways` > 1, into up to `ways` parts of
    /// disjoint series ranges, merged on as many threads) and installs it; false when
    /// `cancel` said so first (asked every 4096 series; nothing changes then).
    fn merge_run(
        &self,
        job: Job,
        deleted: &DeletedSet,
        cancel: &(dyn Fn() -> bool + Sync),
        ways: usize,
    ) -> Result<bool, StoreError> {
        let _op = crate::failpoint::Op::start("compaction");
        let t = Instant::now();
        let Some(h0) = job.run.first().map(|r| r.part.header) else {
            return Ok(false);
        };
        let bytes_in: u64 = job.run.iter().map(|r| r.part.bytes).sum();
        // cut the series ids where the biggest input's chunks cut it into even runs
        let cuts = match job.run.iter().max_by_key(|r| r.part.bytes) {
            Some(big) if ways > 1 => big.part.split_points(ways),
            _ => Vec::new(),
        };
        let mut ranges = Vec::with_capacity(cuts.len() + 1);
        let mut lo = 0u32;
        for &c in &cuts {
            ranges.push((lo, Some(c)));
            lo = c;
        }
        ranges.push((lo, None));
        let run = &job.run;
        let one = |(from, to): (u32, Option<u32>)| -> Result<Option<PartWriter>, StoreError> {
            let header = Header {
                file_id: self.parts.new_file_id(),
                ..h0
            };
            self.merge_range(run, header, deleted, cancel, from, to)
        };
        let results: Vec<Result<Option<PartWriter>, StoreError>> = if ranges.len() == 1 {
            ranges.iter().map(|&r| one(r)).collect()
        } else {
            std::thread::scope(|s| {
                let (last, rest) = ranges.split_last().unwrap_or((&(0, None), &[]));
                let handles: Vec<_> = rest
                    .iter()
                    .map(|&r| {
                        std::thread::Builder::new()
                            .name("sumi-merge".into())
                            .spawn_scoped(s, move || one(r))
                    })
                    .collect();
                let mut out = vec![one(*last)];
                for (h, &r) in handles.into_iter().zip(rest) {
                    // a thread that could not start: this one merges its range
                    out.push(match h {
                        Ok(h) => h.join().unwrap_or_else(|_| {
                            Err(StoreError::Poisoned("a merge thread panicked".into()))
                        }),
                        Err(_) => one(r),
                    });
                }
                out
            })
        };
        let mut writers = Vec::with_capacity(results.len());
        let mut cancelled = false;
        for r in results {
            match r? {
                Some(w) => writers.push(w),
                None => cancelled = true,
            }
        }
        if cancelled {
            // dropping the writers removes their temporary files
            return Ok(false);
        }
        let out = self.parts.finish(writers)?;
        crate::failpoint::hit("compact:after_write");
        self.install_merge(&job, out, bytes_in, t)
    }

    /// Merges the series `from..to` (to the end for `None`) of `run` into a new part
    /// with `header`; `None` when `cancel` said so first.
    fn merge_range(
        &self,
        run: &[PartRef],
        header: Header,
        deleted: &DeletedSet,
        cancel: &(dyn Fn() -> bool + Sync),
        from: u32,
        to: Option<u32>,
    ) -> Result<Option<PartWriter>, StoreError> {
        let mut w = PartWriter::create(self.parts.parts_dir(), header)?;
        // oldest first, so that a later value for a slot overrides an earlier one
        let mut cursors: Vec<Cursor<'_>> = run
            .iter()
            .map(|r| {
                if from == 0 {
                    Cursor::new(&r.part)
                } else {
                    Cursor::starting_at(&r.part, from)
                }
            })
            .collect();
        let (mut slots, mut values) = (Vec::new(), Vec::new());
        let mut merged: Vec<(i64, f64)> = Vec::new();
        let mut holders: Vec<usize> = Vec::new();
        let (mut out_s, mut out_v) = (Vec::new(), Vec::new());
        let mut seen = 0u32;
        while let Some(s) = min_series(&cursors).filter(|&s| to.is_none_or(|t| s < t)) {
            seen = seen.wrapping_add(1);
            if seen.is_multiple_of(4096) && cancel() {
                return Ok(None);
            }
            if deleted.contains(s) {
                for c in cursors.iter_mut().filter(|c| c.series() == Some(s)) {
                    c.advance();
                }
                continue;
            }
            holders.clear();
            holders.extend(
                cursors
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.series() == Some(s))
                    .map(|(i, _)| i),
            );
            if let [only] = holders[..] {
                let c = &mut cursors[only];
                if let Some(e) = c.cur {
                    match c.scan.block(&e) {
                        Ok(b) => {
                            w.add_block(s, e.count, e.first_slot, e.last_slot, b, c.part.rel_slots)?
                        }
                        Err(err) => {
                            self.metrics.blocks_corrupt.fetch_add(1, Ordering::Relaxed);
                            tracing::error!(part = %c.part.path().display(), %err, "compaction drops a corrupt block");
                        }
                    }
                }
                c.advance();
                continue;
            }
            merged.clear();
            for &i in &holders {
                let c = &mut cursors[i];
                if let Some(e) = c.cur {
                    slots.clear();
                    values.clear();
                    match c.scan.read(&e, &mut slots, &mut values) {
                        Ok(()) => merged.extend(slots.iter().copied().zip(values.iter().copied())),
                        Err(err) => {
                            self.metrics.blocks_corrupt.fetch_add(1, Ordering::Relaxed);
                            tracing::error!(part = %c.part.path().display(), %err, "compaction drops a corrupt block");
                        }
                    }
                }
                c.advance();
            }
            merged.sort_by_key(|x| x.0); // stable: newer parts come later
            out_s.clear();
            out_v.clear();
            for (i, &(sl, v)) in merged.iter().enumerate() {
                if merged.get(i + 1).is_some_and(|n| n.0 == sl) {
                    continue;
                }
                out_s.push(sl);
                out_v.push(v);
            }
            w.add(s, &out_s, &out_v)?;
        }
        for c in &cursors {
            if let Some(e) = c.error() {
                return Err(StoreError::corrupt("part", c.part.path(), 0, e.to_string()));
            }
        }
        drop(cursors);
        Ok(Some(w))
    }

    /// Installs the parts a merge of `job` wrote in its place (or throws them away when
    /// retention dropped part of the run meanwhile).
    fn install_merge(
        &self,
        job: &Job,
        out: Vec<std::sync::Arc<crate::part::Part>>,
        bytes_in: u64,
        t: Instant,
    ) -> Result<bool, StoreError> {
        let bytes_out: u64 = out.iter().map(|p| p.bytes).sum();
        let n_out = out.len() as u64;
        let order = job.run.iter().map(|r| r.order).max().unwrap_or(0);
        let ids: Vec<u64> = job.run.iter().map(|r| r.part.header.file_id).collect();

        let ed = self.parts.lock_edit();
        let mut v = self.parts.to_edit(&ed);
        let present = v
            .parts()
            .filter(|r| ids.contains(&r.part.header.file_id))
            .count();
        if present != ids.len() {
            // retention dropped part of the run meanwhile: throw the merge away
            drop(ed);
            self.parts.delete_parts(
                &out.into_iter()
                    .map(|part| PartRef { part, order })
                    .collect::<Vec<_>>(),
            );
            return Ok(true);
        }
        let removed = v.remove(&ids);
        let out_ids: Vec<u64> = out.iter().map(|p| p.header.file_id).collect();
        for part in out {
            v.add(PartRef { part, order });
        }
        if let Err(e) = self.parts.write_manifest(&ed, &v) {
            // not installed: remove the merged part, the inputs stay live
            for id in &out_ids {
                let _ = std::fs::remove_file(crate::part::writer::part_path(
                    self.parts.parts_dir(),
                    *id,
                ));
            }
            return Err(e);
        }
        crate::failpoint::hit("compact:after_manifest");
        self.parts.publish(&ed, v);
        drop(ed);
        self.parts.delete_parts(&removed);
        self.metrics.compactions.fetch_add(1, Ordering::Relaxed);
        self.metrics
            .parts_written
            .fetch_add(n_out, Ordering::Relaxed);
        self.metrics
            .compaction_bytes_in
            .fetch_add(bytes_in, Ordering::Relaxed);
        self.metrics
            .compaction_bytes_out
            .fetch_add(bytes_out, Ordering::Relaxed);
        self.metrics
            .compaction_micros
            .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(true)
    }

    /// A run of parts to merge: in the partition (and kind) with the most parts, all of
    /// a closed partition's (up to eight) or an open one's most balanced run once it has
    /// more than `max_parts_per_partition`.
    fn pick_merge(&self) -> Option<Job> {
        let version = self.parts.current();
        let now = self.now();
        let grace = self.opts.rollup_grace_secs;
        let max_parts = self.opts.max_parts_per_partition;
        let mut best: Option<(u64, Vec<PartRef>)> = None;
        for levels in &version.levels {
            for parts in levels {
                for (&start, p) in parts {
                    for kind in [Kind::Direct, Kind::Rollup] {
                        let list = p.list(kind);
                        if list.len() < 2 {
                            continue;
                        }
                        let width = list.first().map_or(0, |r| r.part.header.width);
                        let closed = start.saturating_add(width).saturating_add(grace) <= now;
                        if closed && !needs_merge(list) {
                            // the ranges of one merge hold each series once already
                            continue;
                        }
                        let run: Vec<PartRef> = if closed {
                            list.iter().take(MAX_RUN).cloned().collect()
                        } else if list.len() > max_parts {
                            match balanced_run(list) {
                                Some(r) => r,
                                None => continue,
                            }
                        } else {
                            continue;
                        };
                        // prefer the partition with the most parts
                        let score = list.len() as u64;
                        if best.as_ref().is_none_or(|(s, _)| score > *s) {
                            best = Some((score, run));
                        }
                    }
                }
            }
        }
        best.map(|(_, run)| Job { run })
    }

    /// A part that still holds rows of a deleted series, to be rewritten alone. Parts
    /// found clean are remembered with the number of deletes they were checked against
    /// (deletes only grow), so each part's index is scanned once per delete.
    fn pick_purge(&self, deleted: &DeletedSet) -> Option<Job> {
        if deleted.is_empty() {
            return None;
        }
        let gen = deleted.len();
        let version = self.parts.current();
        let mut checked = self.parts.lock_purge_checked();
        let live: HashSet<u64> = version.parts().map(|r| r.part.header.file_id).collect();
        checked.retain(|id, _| live.contains(id));
        for r in version.parts() {
            let id = r.part.header.file_id;
            if checked.get(&id) == Some(&gen) {
                continue;
            }
            let mut c = Cursor::new(&r.part);
            let mut dirty = false;
            while let Some(s) = c.series() {
                if deleted.contains(s) {
                    dirty = true;
                    break;
                }
                c.advance();
            }
            if dirty {
                return Some(Job {
                    run: vec![r.clone()],
                });
            }
            if c.error().is_none() {
                checked.insert(id, gen);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::writer::PartWriter;
    use crate::part::{Header, Kind, Part};
    use crate::testutil::TempDir;
    use std::sync::Arc;

    fn parts(dir: &std::path::Path, sizes: &[usize]) -> Vec<PartRef> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let h = Header {
                    kind: Kind::Direct,
                    level: 0,
                    class: 0,
                    step: 10,
                    partition: 0,
                    width: 1 << 20,
                    file_id: i as u64 + 1,
                };
                let mut w = PartWriter::create(dir, h).unwrap();
                for s in 0..n as u32 {
                    w.add(s, &[0], &[1.0]).unwrap();
                }
                PartRef {
                    part: Arc::new(Part::open(&w.finish().unwrap()).unwrap()),
                    order: i as u64,
                }
            })
            .collect()
    }

    #[test]
    fn balanced_runs_leave_the_big_part_alone() {
        let dir = TempDir::new("compact-pick");
        let list = parts(dir.path(), &[10_000, 10, 10, 10, 10]);
        let run = balanced_run(&list).unwrap();
        let ids: Vec<u64> = run.iter().map(|r| r.order).collect();
        assert_eq!(
            ids,
            vec![1, 2, 3, 4],
            "the four small parts, not the big one"
        );
        // one big part and one tiny one: not worth merging yet
        let list = parts(dir.path(), &[10_000, 10]);
        assert!(balanced_run(&list).is_none());
    }
}
