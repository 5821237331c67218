//! The part set: the published version (the live parts) and roll state that readers
//! clone, and the edits that replace them — flush, compaction, rollup and retention —
//! with the manifest that makes each edit durable, the file id counter, and the locks
//! that serialise those jobs. See [`crate::store`] for the lock order.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

use crate::manifest::{Manifest, ManifestPart};
use crate::part::writer::PartWriter;
use crate::part::Part;
use crate::version::{PartRef, RollState, Version};
use crate::{fsutil, StoreError};

/// Version edits (flush, compaction, rollup, retention) and manifest writes.
pub(crate) struct EditState {
    pub(crate) checkpoint: u64,
    pub(crate) next_order: u64,
}

impl EditState {
    /// Adds new parts to the edited version `v`, each newer than every part before it.
    pub(crate) fn add_new(&mut self, v: &mut Version, parts: Vec<Arc<Part>>) {
        for part in parts {
            v.add(PartRef {
                part,
                order: self.next_order,
            });
            self.next_order += 1;
        }
    }
}

pub(crate) struct PartSet {
    /// The data directory, where the manifest lives.
    dir: PathBuf,
    parts_dir: PathBuf,
    version: RwLock<Arc<Version>>,
    /// The published roll state; its master copy is in the head's append state.
    roll: RwLock<Arc<RollState>>,
    edit: Mutex<EditState>,
    next_file_id: AtomicU64,
    /// Serialises freeze + flush between the background thread, `run_maintenance` and
    /// `close`.
    flush_lock: Mutex<()>,
    /// Serialises compactions, rollups and retention.
    maint_lock: Mutex<()>,
    /// Parts compaction found free of deleted series: file id → deletes checked.
    purge_checked: Mutex<HashMap<u64, usize>>,
}

impl PartSet {
    /// The part set the manifest `m` describes, with `version` its opened parts.
    pub(crate) fn new(
        dir: PathBuf,
        parts_dir: PathBuf,
        version: Version,
        roll: RollState,
        m: &Manifest,
        next_file_id: u64,
    ) -> PartSet {
        PartSet {
            dir,
            parts_dir,
            version: RwLock::new(Arc::new(version)),
            roll: RwLock::new(Arc::new(roll)),
            edit: Mutex::new(EditState {
                checkpoint: m.checkpoint,
                next_order: m.next_order,
            }),
            next_file_id: AtomicU64::new(next_file_id),
            flush_lock: Mutex::new(()),
            maint_lock: Mutex::new(()),
            purge_checked: Mutex::new(HashMap::new()),
        }
    }

    /// The published version.
    #[inline]
    pub(crate) fn current(&self) -> Arc<Version> {
        self.version.read().clone()
    }

    /// The published version under its read lock, for a reader that compares it with
    /// what it holds before cloning.
    #[inline]
    pub(crate) fn current_guard(&self) -> RwLockReadGuard<'_, Arc<Version>> {
        self.version.read()
    }

    /// A copy of the published version to edit (the caller holds the edit lock).
    pub(crate) fn to_edit(&self, _ed: &EditState) -> Version {
        (**self.version.read()).clone()
    }

    /// Publishes a new version (the caller holds the edit lock).
    pub(crate) fn publish(&self, _ed: &EditState, v: Version) {
        *self.version.write() = Arc::new(v);
    }

    /// The published roll state.
    #[inline]
    pub(crate) fn roll(&self) -> Arc<RollState> {
        self.roll.read().clone()
    }

    /// The published roll state under its read lock.
    #[inline]
    pub(crate) fn roll_guard(&self) -> RwLockReadGuard<'_, Arc<RollState>> {
        self.roll.read()
    }

    /// Publishes the roll state (the caller holds the append lock, which guards the
    /// master copy `roll` is taken from).
    #[inline]
    pub(crate) fn publish_roll(&self, roll: &RollState) {
        *self.roll.write() = Arc::new(roll.clone());
    }

    /// Takes the edit lock.
    pub(crate) fn lock_edit(&self) -> MutexGuard<'_, EditState> {
        self.edit.lock()
    }

    /// Takes the flush lock (freeze + flush).
    pub(crate) fn lock_flush(&self) -> MutexGuard<'_, ()> {
        self.flush_lock.lock()
    }

    /// Takes the maintenance lock (compaction, rollup, retention).
    pub(crate) fn lock_maint(&self) -> MutexGuard<'_, ()> {
        self.maint_lock.lock()
    }

    /// Parts compaction found free of deleted series (the caller holds the
    /// maintenance lock).
    pub(crate) fn lock_purge_checked(&self) -> MutexGuard<'_, HashMap<u64, usize>> {
        self.purge_checked.lock()
    }

    /// Writes the manifest for `version` and the published roll state (the caller
    /// holds the edit lock).
    pub(crate) fn write_manifest(
        &self,
        ed: &EditState,
        version: &Version,
    ) -> Result<(), StoreError> {
        let roll = self.roll();
        self.write_manifest_with(ed, version, &roll)
    }

    /// Writes the manifest for `version` and `roll` (the caller holds the edit lock).
    pub(crate) fn write_manifest_with(
        &self,
        ed: &EditState,
        version: &Version,
        roll: &RollState,
    ) -> Result<(), StoreError> {
        let m = Manifest {
            checkpoint: ed.checkpoint,
            next_file_id: self.next_file_id.load(Ordering::Relaxed),
            next_order: ed.next_order,
            parts: version
                .parts()
                .map(|r| ManifestPart {
                    file_id: r.part.header.file_id,
                    order: r.order,
                    kind: r.part.header.kind,
                    class: r.part.header.class,
                    level: r.part.header.level,
                    partition: r.part.header.partition,
                })
                .collect(),
            rolls: roll.clone(),
        };
        m.store(&self.dir)
    }

    /// Deletes the files of parts no version references any more. Readers that still
    /// hold an older version keep their mappings: unlinking does not affect them.
    pub(crate) fn delete_parts(&self, parts: &[PartRef]) {
        for r in parts {
            let p = r.part.path();
            if let Err(e) = fs::remove_file(p) {
                tracing::warn!(path = %p.display(), error = %e, "could not delete a dropped part");
            }
        }
    }

    pub(crate) fn new_file_id(&self) -> u64 {
        self.next_file_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn parts_dir(&self) -> &Path {
        &self.parts_dir
    }

    /// Finishes writers, syncs the parts directory and opens the parts.
    pub(crate) fn finish(&self, writers: Vec<PartWriter>) -> Result<Vec<Arc<Part>>, StoreError> {
        let mut paths = Vec::new();
        let r = (|| {
            for w in writers {
                if w.is_empty() {
                    continue;
                }
                paths.push(w.finish()?);
            }
            if !paths.is_empty() {
                fsutil::sync_dir(self.parts_dir())?;
            }
            let mut parts = Vec::with_capacity(paths.len());
            for p in &paths {
                parts.push(Arc::new(Part::open(p)?));
            }
            Ok(parts)
        })();
        if r.is_err() {
            // a failed batch (ENOSPC, most likely) leaves no finished orphans behind: the
            // caller retries with new files, and a full disk must not fill further
            for p in &paths {
                let _ = std::fs::remove_file(p);
            }
        }
        r
    }
}
