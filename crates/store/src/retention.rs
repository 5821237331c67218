//! Retention: a level-k partition whose every slot is older than the level's retention
//! (by at least one step, so no new point can land in it) is dropped whole — once its
//! rollup into level k+1 is materialised and clean, and once the head holds nothing of
//! it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::series::ClassInfo;
use crate::store::Inner;
use crate::StoreError;

/// Drops every expired partition.
pub(crate) fn run(inner: &Inner) -> Result<(), StoreError> {
    let _m = inner.maint_lock.lock();
    let now = inner.now();
    let classes: Vec<Arc<ClassInfo>> = inner.index.read().classes().to_vec();
    let version = inner.version.read().clone();
    let roll = inner.roll_view.read().clone();
    let frozen = inner.frozen.read().clone();
    let mut drop_ids = Vec::new();
    let mut partitions = 0u64;
    for class in &classes {
        let last = class.levels.len().saturating_sub(1);
        for (k, lvl) in class.levels.iter().enumerate() {
            let Some(parts) = version.level(class.id, k) else {
                continue;
            };
            let cutoff = now.saturating_sub(lvl.retention).saturating_sub(lvl.step);
            let head_min = inner
                .shards
                .iter()
                .filter_map(|s| s.read().min_slot(class.id, k))
                .chain(frozen.iter().filter_map(|f| f.min_slot(class.id, k)))
                .min();
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
    let ed = inner.edit.lock();
    let mut v = (**inner.version.read()).clone();
    let removed = v.remove(&drop_ids);
    crate::failpoint::hit("retention:before_manifest");
    inner.write_manifest(&ed, &v)?;
    crate::failpoint::hit("retention:after_manifest");
    inner.publish(v);
    drop(ed);
    inner.delete_parts(&removed);
    inner
        .metrics
        .retention_drops
        .fetch_add(partitions, Ordering::Relaxed);
    inner
        .metrics
        .retention_parts_dropped
        .fetch_add(removed.len() as u64, Ordering::Relaxed);
    Ok(())
}
