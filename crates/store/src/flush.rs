//! Head → disk parts. A freeze swaps every shard's buffer for an empty one (under the
//! append lock, after rotating the WAL, so the frozen rows are exactly the records
//! below the new segment). A flush turns one frozen generation into one part per
//! (class, level, partition) it touches — rows counting-sorted by series, each series'
//! rows sorted by slot with the last write winning — then installs the parts, moves the
//! WAL checkpoint and deletes the segments below it.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::head::{key_level, key_slot, FrozenGen};
use crate::part::writer::PartWriter;
use crate::part::{Header, Kind, Part};
use crate::series::ClassInfo;
use crate::store::Inner;

use crate::wal::segment;
use crate::StoreError;

impl Inner {
    /// Freezes the active head when it holds rows; returns whether it did.
    fn freeze(&self) -> Result<bool, StoreError> {
        let mut ap = self.head.lock_append();
        // records already in the WAL reach the head first, so that the frozen rows are
        // exactly the records below the new segment
        self.wal.wait_applied();
        if self.head.is_empty(&ap) {
            ap.last_freeze = Instant::now();
            return Ok(false);
        }
        let seg = self.wal.rotate()?;
        crate::failpoint::hit("seal:after_rotate");
        self.head.freeze(&mut ap, seg);
        ap.last_freeze = Instant::now();
        Ok(true)
    }

    /// True when the active head is due for a flush (by size or by age).
    fn flush_due(&self) -> bool {
        if self.head.rows() == 0 {
            return false;
        }
        self.head.active_bytes() >= self.opts.flush_bytes
            || self.head.lock_append().last_freeze.elapsed() >= self.opts.flush_interval
    }

    /// Freezes the head (always when `force`, else when due) and flushes every frozen
    /// generation, oldest first.
    pub(crate) fn flush_all(&self, force: bool) -> Result<(), StoreError> {
        let _g = self.parts.lock_flush();
        if force || self.flush_due() {
            self.freeze()?;
        }
        loop {
            let next = self.head.oldest_frozen();
            let Some(gen) = next else { break };
            self.flush_gen(&gen)?;
        }
        Ok(())
    }

    fn flush_gen(&self, gen: &Arc<FrozenGen>) -> Result<(), StoreError> {
        let _op = crate::failpoint::Op::start("seal");
        let t = Instant::now();
        let parts = self.write_gen(gen)?;
        crate::failpoint::hit("seal:after_parts");
        let n_parts = parts.len() as u64;
        let parts_ids: Vec<u64> = parts.iter().map(|p| p.header.file_id).collect();
        let mut ed = self.parts.lock_edit();
        let mut v = self.parts.to_edit(&ed);
        ed.add_new(&mut v, parts);
        let prev_checkpoint = ed.checkpoint;
        ed.checkpoint = ed.checkpoint.max(gen.replay_from);
        if let Err(e) = self.parts.write_manifest(&ed, &v) {
            // the generation stays frozen and its WAL stays live until a retry succeeds
            ed.checkpoint = prev_checkpoint;
            // the parts are not installed: remove them (a retry writes new ones), so a
            // full disk does not fill further with orphans
            for r in v
                .parts()
                .filter(|r| parts_ids.contains(&r.part.header.file_id))
            {
                let _ = std::fs::remove_file(r.part.path());
            }
            return Err(e);
        }
        crate::failpoint::hit("seal:after_manifest");
        self.parts.publish(&ed, v);
        // count before the rows leave the head, so that no reader sees them gone uncounted
        self.metrics.flushes.fetch_add(1, Ordering::Relaxed);
        self.metrics
            .flushed_rows
            .fetch_add(gen.rows() as u64, Ordering::Relaxed);
        self.metrics
            .parts_written
            .fetch_add(n_parts, Ordering::Relaxed);
        self.head.remove_frozen(gen);
        let checkpoint = ed.checkpoint;
        drop(ed);
        match segment::remove_below(self.wal.dir(), checkpoint) {
            Ok(n) => {
                self.metrics
                    .wal_segments_removed
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "could not delete old WAL segments"),
        }
        self.metrics
            .flush_micros
            .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the parts of one generation (fsynced, directory synced, opened).
    fn write_gen(&self, gen: &FrozenGen) -> Result<Vec<Arc<Part>>, StoreError> {
        let (class_of, classes): (Vec<u16>, Vec<Arc<ClassInfo>>) = {
            let idx = self.index.read();
            (
                idx.metas().iter().map(|m| m.class).collect(),
                idx.classes().to_vec(),
            )
        };
        let n = class_of.len();
        // counting sort by series; one series' rows all sit in one shard, in arrival order
        let mut starts = vec![0u32; n + 1];
        for b in &gen.bufs {
            for r in b.rows() {
                if let Some(c) = starts.get_mut(r.series as usize + 1) {
                    *c += 1;
                }
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let total = starts.last().copied().unwrap_or(0) as usize;
        let mut sorted = vec![(0u64, 0f64); total];
        let mut fill = starts.clone();
        for b in &gen.bufs {
            for r in b.rows() {
                if let Some(f) = fill.get_mut(r.series as usize) {
                    if let Some(slot) = sorted.get_mut(*f as usize) {
                        *slot = (r.key, r.value);
                    }
                    *f += 1;
                }
            }
        }
        drop(fill);

        let mut writers: HashMap<(u16, u8, i64), PartWriter> = HashMap::new();
        let mut scratch: Vec<(u64, f64)> = Vec::new();
        let (mut slots, mut values) = (Vec::new(), Vec::new());
        for s in 0..n {
            let (lo, hi) = (starts[s] as usize, starts[s + 1] as usize);
            let Some(rows) = sorted.get(lo..hi) else {
                continue;
            };
            if rows.is_empty() {
                continue;
            }
            let Some(class) = class_of.get(s).and_then(|&c| classes.get(usize::from(c))) else {
                continue;
            };
            let rows: &[(u64, f64)] = if rows.windows(2).all(|w| w[0].0 < w[1].0) {
                rows
            } else {
                scratch.clear();
                scratch.extend_from_slice(rows);
                scratch.sort_by_key(|r| r.0); // stable: equal keys keep arrival order
                let mut w = 0;
                for i in 0..scratch.len() {
                    if i + 1 < scratch.len() && scratch[i + 1].0 == scratch[i].0 {
                        continue; // a later write to the same slot wins
                    }
                    scratch[w] = scratch[i];
                    w += 1;
                }
                scratch.truncate(w);
                &scratch
            };
            let mut i = 0;
            while i < rows.len() {
                let level = key_level(rows[i].0);
                let lvl = usize::from(level);
                if lvl >= class.levels.len() {
                    i += 1;
                    continue;
                }
                let part_start = class.partition_of(lvl, key_slot(rows[i].0));
                let part_end = part_start.saturating_add(class.width(lvl));
                slots.clear();
                values.clear();
                while i < rows.len()
                    && key_level(rows[i].0) == level
                    && key_slot(rows[i].0) < part_end
                {
                    slots.push(key_slot(rows[i].0));
                    values.push(rows[i].1);
                    i += 1;
                }
                let key = (class.id, level, part_start);
                let w = match writers.get_mut(&key) {
                    Some(w) => w,
                    None => {
                        let h = Header {
                            kind: Kind::Direct,
                            level,
                            class: class.id,
                            step: class.step(lvl),
                            partition: part_start,
                            width: class.width(lvl),
                            file_id: self.parts.new_file_id(),
                        };
                        writers
                            .entry(key)
                            .or_insert(PartWriter::create(self.parts.parts_dir(), h)?)
                    }
                };
                w.add(s as u32, &slots, &values)?;
            }
        }
        drop(sorted);
        self.parts.finish(writers.into_values().collect())
    }
}
