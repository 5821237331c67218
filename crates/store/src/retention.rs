//! Retention: a level-k partition whose every slot is older than the level's retention
//! (by at least one step, so no new point can land in it) is dropped whole — once its
//! rollup into level k+1 is materialised and clean, and once the head holds nothing of
//! it. "Older" is judged by the clock, or by the log's time on a cluster's storage
//! node (`StoreOptions::log_time_retention`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::series::ClassInfo;
use crate::store::Inner;
use crate::StoreError;

impl Inner {
    /// Drops every expired partition.
    pub(crate) fn apply_retention(&self) -> Result<(), StoreError> {
        let _m = self.parts.lock_maint();
        let now = self.expiry_now();
        let classes: Vec<Arc<ClassInfo>> = self.index.read().classes().to_vec();
        let version = self.parts.current();
        let roll = self.parts.roll();
        let frozen = self.head.frozen();
        let mut drop_ids = Vec::new();
        let mut partitions = 0u64;
        for class in &classes {
            let last = class.levels.len().saturating_sub(1);
            for (k, lvl) in class.levels.iter().enumerate() {
                let Some(parts) = version.level(class.id, k) else {
                    continue;
                };
                let cutoff = now.saturating_sub(lvl.retention).saturating_sub(lvl.step);
                let head_min = self.head.min_slot(&frozen, class.id, k);
                for (&start, p) in parts {
                    let end = start.saturating_add(lvl.width);
                    if end > cutoff {
                        break;
                    }
                    if k < last && !roll.rolled_clean(class.id, k, start, end) {
                        continue;
                    }
                    if head_min.is_some_and(|m| m < end) {
                        continue;
                    }
                    drop_ids.extend(
                        p.direct
                            .iter()
                            .chain(&p.rollup)
                            .map(|r| r.part.header.file_id),
                    );
                    partitions += 1;
                }
            }
        }
        if drop_ids.is_empty() {
            return Ok(());
        }
        let ed = self.parts.lock_edit();
        let mut v = self.parts.to_edit(&ed);
        let removed = v.remove(&drop_ids);
        crate::failpoint::hit("retention:before_manifest");
        self.parts.write_manifest(&ed, &v)?;
        crate::failpoint::hit("retention:after_manifest");
        self.parts.publish(&ed, v);
        drop(ed);
        self.parts.delete_parts(&removed);
        self.metrics
            .retention_drops
            .fetch_add(partitions, Ordering::Relaxed);
        self.metrics
            .retention_parts_dropped
            .fetch_add(removed.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}
