//! Rollups: when a level-k partition is closed (its end plus the grace period is in the
//! past; with `lazy_rollups`, the default, only once it is within a partition width of
//! level k's retention) its level-(k+1) values are computed once — whisper's propagation, in batch —
//! and written as rollup parts of level k+1. Late points into a rolled partition mark
//! it dirty; it is rolled again. Readers use the materialised rollup only for clean
//! rolled partitions and compute the rest on the fly, so results never depend on
//! whether this job has run.
//!
//! Level k is rolled over a partition only when every level k-1 partition inside it is
//! rolled and clean, so the level-k values of the partition are all in level-k parts
//! (direct writes, then rollups of level k-1): the job merges those parts in series
//! order with sequential reads and needs no on-the-fly recursion.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::part::writer::PartWriter;
use crate::part::{min_series, Cursor, Header, Kind};
use crate::series::{ClassInfo, SeriesMeta};
use crate::store::Inner;
use crate::version::Version;
use crate::StoreError;

fn floor_to(x: i64, w: i64) -> i64 {
    x.saturating_sub(x.rem_euclid(w.max(1)))
}

struct Plan {
    from: i64,
    target: i64,
    rerolls: Vec<(i64, u64)>,
}

impl Inner {
    /// Rolls up every closed or dirty partition of every class, finest level first.
    pub(crate) fn roll_up(&self) -> Result<(), StoreError> {
        let _m = self.parts.lock_maint();
        let classes: Vec<Arc<ClassInfo>> = self.index.read().classes().to_vec();
        for class in classes {
            for k in 0..class.levels.len().saturating_sub(1) {
                self.roll_level(&class, k)?;
            }
        }
        Ok(())
    }

    fn plan_roll(&self, class: &ClassInfo, k: usize) -> Option<Plan> {
        let now = self.now();
        let w = class.width(k);
        let mut ap = self.head.lock_append();
        let lr = ap.roll.get(class.id, k).cloned().unwrap_or_default();
        let mut closed = now.saturating_sub(self.opts.rollup_grace_secs);
        if self.opts.lazy_rollups {
            // one partition ahead of retention's cutoff (`now - retention - step`), so the
            // rollup is in place before the partition may be dropped
            let retention = class.levels.get(k).map_or(0, |l| l.retention);
            closed = closed.min(
                self.expiry_now()
                    .saturating_sub(retention)
                    .saturating_add(w),
            );
        }
        let mut target = floor_to(closed, w);
        let lower_ok = |start: i64, end: i64| -> bool {
            if k == 0 {
                return true;
            }
            let Some(l) = ap.roll.get(class.id, k - 1) else {
                return false;
            };
            l.installed >= end && l.dirty.range(start..end).next().is_none()
        };
        if k > 0 {
            let l = ap.roll.get(class.id, k - 1).cloned().unwrap_or_default();
            target = target.min(floor_to(l.installed, w));
            if let Some((&d, _)) = l.dirty.iter().next() {
                target = target.min(floor_to(d, w));
            }
        }
        let rerolls: Vec<(i64, u64)> = lr
            .dirty
            .iter()
            .filter(|(&d, _)| lower_ok(d, d.saturating_add(w)))
            .map(|(&d, &e)| (d, e))
            .collect();
        // start from what is installed, not from the horizon: a roll that failed after
        // moving the horizon is simply done again
        let advance = target > lr.installed;
        if !advance && rerolls.is_empty() {
            return None;
        }
        let from = lr.installed;
        if target > lr.horizon {
            ap.roll.get_mut(class.id, k).horizon = target;
            self.parts.publish_roll(&ap.roll);
        }
        Some(Plan {
            from,
            target: target.max(from),
            rerolls,
        })
    }

    fn roll_level(&self, class: &ClassInfo, k: usize) -> Result<(), StoreError> {
        let Some(plan) = self.plan_roll(class, k) else {
            return Ok(());
        };
        let t = Instant::now();
        // everything written before the horizon moved is in the head: put it in parts
        self.flush_all(true)?;
        let version = self.parts.current();
        let mut todo: Vec<i64> = Vec::new();
        if plan.target > plan.from {
            if let Some(parts) = version.level(class.id, k) {
                todo.extend(parts.range(plan.from..plan.target).map(|(&p, _)| p));
            }
        }
        todo.extend(plan.rerolls.iter().map(|&(d, _)| d));
        todo.sort_unstable();
        todo.dedup();
        let metas: Vec<SeriesMeta> = if todo.is_empty() {
            Vec::new()
        } else {
            self.index.read().metas().to_vec()
        };
        let mut writers: HashMap<(i64, i64), PartWriter> = HashMap::new();
        let mut points = 0u64;
        for &p in &todo {
            points += self.roll_partition(&version, class, k, p, &metas, &mut writers)?;
        }
        let parts = self.parts.finish(writers.into_values().collect())?;
        let n_parts = parts.len() as u64;

        let mut ap = self.head.lock_append();
        let mut ed = self.parts.lock_edit();
        let mut v = self.parts.to_edit(&ed);
        ed.add_new(&mut v, parts);
        let mut roll = ap.roll.clone();
        let lr = roll.get_mut(class.id, k);
        if plan.target > plan.from {
            lr.installed = lr.installed.max(plan.target);
        }
        for (d, epoch) in &plan.rerolls {
            if lr.dirty.get(d) == Some(epoch) {
                lr.dirty.remove(d);
            }
        }
        // durable first; then the parts, then the roll state that sends readers to them
        self.parts.write_manifest_with(&ed, &v, &roll)?;
        self.parts.publish(&ed, v);
        self.parts.publish_roll(&roll);
        ap.roll = roll;
        drop(ap);
        drop(ed);
        self.metrics
            .rollups
            .fetch_add(todo.len() as u64, Ordering::Relaxed);
        self.metrics
            .rollup_points
            .fetch_add(points, Ordering::Relaxed);
        self.metrics
            .parts_written
            .fetch_add(n_parts, Ordering::Relaxed);
        self.metrics
            .rollup_micros
            .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the level-(k+1) rollup of level-k partition `p` for every series in it.
    fn roll_partition(
        &self,
        version: &Version,
        class: &ClassInfo,
        k: usize,
        p: i64,
        metas: &[SeriesMeta],
        writers: &mut HashMap<(i64, i64), PartWriter>,
    ) -> Result<u64, StoreError> {
        let Some(partition) = version.level(class.id, k).and_then(|m| m.get(&p)) else {
            return Ok(0);
        };
        let step = class.step(k);
        let cstep = class.step(k + 1);
        let w = class.width(k);
        let ratio = (cstep / step.max(1)).max(1) as usize;
        let n = (w / step.max(1)) as usize;
        // newest first within each kind; direct writes before rollups
        let mut cursors: Vec<Cursor<'_>> = partition
            .direct
            .iter()
            .rev()
            .chain(partition.rollup.iter().rev())
            .map(|r| Cursor::new(&r.part))
            .collect();
        let mut vals: Vec<Option<f64>> = vec![None; n];
        let (mut slots, mut values) = (Vec::new(), Vec::new());
        let (mut out_slots, mut out_values) = (Vec::new(), Vec::new());
        let mut known = Vec::with_capacity(ratio);
        let mut points = 0u64;
        while let Some(s) = min_series(&cursors) {
            vals.iter_mut().for_each(|v| *v = None);
            for c in cursors.iter_mut() {
                let Some(e) = c.seek(s) else { continue };
                slots.clear();
                values.clear();
                if let Err(err) = c.scan.read(&e, &mut slots, &mut values) {
                    self.metrics.blocks_corrupt.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(part = %c.part.path().display(), %err, "rollup skips a corrupt block");
                }
                for (&sl, &v) in slots.iter().zip(&values) {
                    if sl < p || sl >= p + w {
                        continue;
                    }
                    if let Some(o) = vals.get_mut(((sl - p) / step) as usize) {
                        if o.is_none() {
                            *o = Some(v);
                        }
                    }
                }
                c.advance();
            }
            let Some(meta) = metas.get(s as usize) else {
                continue;
            };
            out_slots.clear();
            out_values.clear();
            for (j, chunk) in vals.chunks(ratio).enumerate() {
                known.clear();
                known.extend(chunk.iter().flatten());
                if let Some(v) = meta.method.rollup(&known, ratio, meta.xff) {
                    out_slots.push(p + j as i64 * cstep);
                    out_values.push(v);
                }
            }
            // a level-k partition lies inside one level-(k+1) partition when widths nest;
            // split anyway so odd configurations stay correct
            let mut i = 0;
            while i < out_slots.len() {
                let cp = class.partition_of(k + 1, out_slots[i]);
                let ce = cp.saturating_add(class.width(k + 1));
                let j = i + out_slots[i..].iter().take_while(|&&x| x < ce).count();
                // one writer per source partition: each receives series in ascending order
                let wr = match writers.get_mut(&(p, cp)) {
                    Some(wr) => wr,
                    None => {
                        let h = Header {
                            kind: Kind::Rollup,
                            level: (k + 1) as u8,
                            class: class.id,
                            step: cstep,
                            partition: cp,
                            width: class.width(k + 1),
                            file_id: self.parts.new_file_id(),
                        };
                        writers
                            .entry((p, cp))
                            .or_insert(PartWriter::create(self.parts.parts_dir(), h)?)
                    }
                };
                wr.add(s, &out_slots[i..j], &out_values[i..j])?;
                points += (j - i) as u64;
                i = j;
            }
        }
        for c in &cursors {
            if let Some(e) = c.error() {
                return Err(StoreError::corrupt("part", c.part.path(), 0, e.to_string()));
            }
        }
        Ok(points)
    }
}
