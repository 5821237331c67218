//! The store: opening (series log, manifest, parts, WAL replay), the shared state every
//! path works on ([`Inner`], with the table of every lock and its order), reads
//! (`find`, `fetch`), metrics and `close`.

use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use sumi_model::glob::PathPattern;
use sumi_model::Clock;

use crate::admission::Admission;
use crate::background::Workers;
use crate::head::{FrozenGen, Head, HeadBuf};
use crate::manifest::{Manifest, ManifestPart};
use crate::metrics::{Gauges, Metrics};
use crate::part::writer::part_path;
use crate::part::Part;
use crate::partset::PartSet;
use crate::read::{whisper_window, Fetched, Scratch, SeriesView};
use crate::series::{FindEntry, SeriesIndex};
use crate::version::{PartRef, Version};
use crate::wal::{self, Wal};
use crate::{fsutil, StoreError, StoreOptions};

/// The state every path works on, in owned parts: the series index and the WAL (each
/// its own type), the [`Head`], the [`PartSet`], [`Admission`] and the background
/// [`Workers`].
///
/// # Locks
///
/// Every lock of the store, in the order they may be taken: a thread holding one may
/// take only locks below it (a leaf takes none).
///
/// | # | lock | kind | guards | taken under it |
/// |---|------|------|--------|----------------|
/// | 1 | `Store::close_result` | mutex | the first `close`'s result | 16 and 2 (stopping the workers), then 4 and below (the final flush and WAL sync) |
/// | 2 | `Workers::threads` | mutex | the join handles | none (joins threads that take 3 and below) |
/// | 3 | `PartSet::maint_lock` | mutex | one compaction, rollup or retention at a time | 4 and below (a rollup flushes first) |
/// | 4 | `PartSet::flush_lock` | mutex | one freeze + flush at a time | 5 and below |
/// | 5 | `Head::append` | mutex | WAL order = append order; the roll state's master copy | 6 and below |
/// | 6 | `PartSet::edit` | mutex | the version edit and manifest write | 12, 13, 14 (one at a time) |
/// | 7 | `Inner::index` | rwlock | the series index (names, tree, tags, `series.log`) | 8 (write lock only) |
/// | 8 | `Admission::create_budget` | mutex | the new-series token bucket | leaf |
/// | 9 | a WAL record's turn (`Wal::turn` until its `Turn` drops) | ticket, in LSN order | head order = WAL order; a record whose write failed is never applied | 11, then 10 to end the turn |
/// | 10 | `Wal::state` | mutex (+ 2 condvars) | the queue, the segment, the LSNs, the applied mark | leaf |
/// | 11 | `Head::shards[i]` | rwlock each | one shard's rows | 12, 13, 14 |
/// | 12 | `Head::frozen` | rwlock | the frozen generations | 13, 14 |
/// | 13 | `PartSet::version` | rwlock | the published version | 14 |
/// | 14 | `PartSet::roll` | rwlock | the published roll state | leaf |
/// | 15 | `PartSet::purge_checked` | mutex | parts found free of deleted series | leaf (under 3) |
/// | 16 | `Workers::stop` | mutex (+ condvar) | the stop flag | leaf |
///
/// Where each order is used: an append holds 5 while it reads 7, publishes 14 and
/// enqueues into 10; then, holding no lock, it waits for its write and for its turn (9),
/// and applies its rows to 11 during the turn. A freeze holds 4 then 5 while it waits
/// for every queued record's turn to end (`Wal::wait_applied`), rotates 10 and swaps
/// every 11 (held together, in index order) into 12. A flush holds 4 then 6 while it
/// reads and publishes 13 and drops the generation from 12. A rollup holds 3, then 5
/// (to move a horizon and publish 14), then 4 (the flush), then 5 and 6 together to
/// install its parts; compaction and retention hold 3, then 6 to install. Readers take
/// a shard's read lock, then 12, 13 and 14 (cloning each, or holding all three in
/// `read_plan`), so a flush that moves rows from a frozen generation into parts is never
/// seen half-done; they read 7 before and release it. The series log has no lock of its
/// own (it is written under 7's write lock; the WAL fsyncs it through an atomic flag);
/// the disk guard and the metrics are atomics.
pub(crate) struct Inner {
    pub(crate) opts: StoreOptions,
    clock: Arc<dyn Clock>,
    pub(crate) index: RwLock<SeriesIndex>,
    pub(crate) wal: Wal,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) head: Head,
    pub(crate) parts: PartSet,
    pub(crate) admission: Admission,
    pub(crate) workers: Workers,
    /// Deletes and renames so far (in this process): a caller keeping its own state by
    /// series id ([`Store::write_ids`]) checks its ids' names again when this moves.
    pub(crate) name_changes: std::sync::atomic::AtomicU64,
    /// The log's time (`StoreOptions::log_time_retention`), `i64::MIN` until said.
    log_time: std::sync::atomic::AtomicI64,
    _lock_file: fs::File,
}

/// The embedded storage engine. Shared as `Arc<Store>` by every thread.
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    close_result: Mutex<Option<Result<(), String>>>,
}

pub(crate) fn lock_dir(dir: &Path) -> Result<fs::File, StoreError> {
    let path = dir.join("LOCK");
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::io("create", &path, e))?;
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        return Err(StoreError::io(
            "lock (is another sumi using this data dir?)",
            &path,
            std::io::Error::last_os_error(),
        ));
    }
    Ok(f)
}

impl Store {
    /// Opens (creating when new) the store in `opts.data_dir`: loads the series log and
    /// the manifest, opens the parts (a corrupt part is reported, counted and set aside),
    /// replays the WAL from the checkpoint and starts the background threads.
    pub fn open(opts: StoreOptions, clock: Arc<dyn Clock>) -> Result<Arc<Store>, StoreError> {
        opts.validate()?;
        crate::failpoint::init();
        let dir = opts.data_dir.clone();
        fsutil::ensure_dir(&dir)?;
        let lock = lock_dir(&dir)?;
        let wal_dir = dir.join("wal");
        let parts_dir = dir.join("parts");
        fsutil::ensure_dir(&wal_dir)?;
        fsutil::ensure_dir(&parts_dir)?;
        let metrics = Arc::new(Metrics::default());

        let (mut index, report) =
            SeriesIndex::open_without_tree(&dir, opts.partitions_per_level, opts.wal_repair)?;
        metrics
            .series_log_cut_bytes
            .store(report.cut_bytes, Ordering::Relaxed);
        metrics
            .series_log_cuts
            .store(u64::from(report.cut_bytes > 0), Ordering::Relaxed);
        // the metric tree (what `find` needs) is built on a thread of its own while the
        // parts are opened and the WAL replayed (which need the names and rules only):
        // at ten million series each is seconds of work
        let index_ref = &index;
        let (opened, tree) = std::thread::scope(|s| {
            let builder = (!index_ref.tree_ready()).then(|| {
                std::thread::Builder::new()
                    .name("sumi-open-tree".into())
                    .spawn_scoped(s, || index_ref.build_tree())
            });
            let opened = (|| -> Result<_, StoreError> {
                let index = index_ref;
                let manifest = match Manifest::load(&dir) {
                    Ok(m) => m.unwrap_or_default(),
                    Err(e @ StoreError::Corrupt { .. }) => {
                        // the parts carry their own headers: rebuild rather than refuse to start
                        metrics.manifest_corrupt.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(error = %e, "the manifest is corrupt: quarantining it and rebuilding it from the part files");
                        crate::quarantine::move_aside(
                            &dir,
                            &dir.join(crate::manifest::FILE),
                            false,
                        )?;
                        let m = Manifest::rebuild(&dir, &parts_dir, &metrics)?;
                        m.store(&dir)?;
                        m
                    }
                    Err(e) => return Err(e),
                };
                let (version, max_file_id) = open_parts(&dir, &parts_dir, &manifest, &metrics)?;

                let shards = opts.shards;
                let series_hint = index.len();
                let mut head: Vec<HeadBuf> = (0..shards)
                    .map(|_| HeadBuf::new(shards as u32, series_hint))
                    .collect();
                let mut roll = manifest.rolls.clone();
                let mut replayed = 0u64;
                let mut skipped = 0u64;
                // a segment cut at a corrupt record is first copied to the quarantine
                let (qd, from, repair) =
                    (Some(dir.as_path()), manifest.checkpoint, opts.wal_repair);
                let rep = wal::replay::replay_with(&wal_dir, from, repair, qd, |p| {
                    let Some(meta) = index.meta(p.series) else {
                        skipped += 1;
                        return;
                    };
                    let Some(class) = index.class(meta.class) else {
                        skipped += 1;
                        return;
                    };
                    let level = usize::from(p.level);
                    if level >= class.levels.len() {
                        skipped += 1;
                        return;
                    }
                    roll.mark_write(class, level, p.slot);
                    if let Some(h) = head.get_mut(p.series as usize % shards) {
                        h.push(p.series, meta.class, p.level, p.slot, p.value);
                    }
                    replayed += 1;
                })?;
                if skipped > 0 {
                    tracing::warn!(
                        skipped,
                        "WAL points naming unknown series or levels were skipped"
                    );
                }
                metrics
                    .wal_replayed_points
                    .store(replayed, Ordering::Relaxed);
                metrics
                    .wal_corrupt_tail
                    .store(rep.corrupt_tails, Ordering::Relaxed);
                let next_seg = rep
                    .last_segment
                    .map_or(manifest.checkpoint, |s| s + 1)
                    .max(manifest.checkpoint);
                let wal = Wal::open(
                    &wal_dir,
                    next_seg,
                    opts.fsync,
                    opts.wal_segment_bytes,
                    index.log_sync(),
                    metrics.clone(),
                )?;
                Ok((
                    manifest,
                    version,
                    max_file_id,
                    head,
                    roll,
                    replayed,
                    rep,
                    wal,
                ))
            })();
            let tree = match builder {
                Some(Ok(h)) => h.join().ok(),
                _ => None,
            };
            (opened, tree)
        });
        let (manifest, version, max_file_id, head, roll, replayed, rep, wal) = opened?;
        // a failed spawn (or a panic in it) leaves the tree to this thread
        if !index.tree_ready() {
            let tree = tree.unwrap_or_else(|| index.build_tree());
            index.set_tree(tree);
        }
        tracing::info!(
            series = index.len(),
            parts = version.parts().count(),
            replayed_points = replayed,
            wal_segments = rep.segments,
            corrupt_tails = rep.corrupt_tails,
            "store opened"
        );
        let next_file_id = manifest.next_file_id.max(max_file_id + 1);
        let inner = Arc::new(Inner {
            clock,
            index: RwLock::new(index),
            wal,
            metrics,
            head: Head::new(head, roll.clone()),
            parts: PartSet::new(dir, parts_dir, version, roll, &manifest, next_file_id),
            admission: Admission::new(&opts),
            workers: Workers::new(),
            name_changes: std::sync::atomic::AtomicU64::new(0),
            log_time: std::sync::atomic::AtomicI64::new(i64::MIN),
            opts,
            _lock_file: lock,
        });
        let store = Arc::new(Store {
            inner: inner.clone(),
            close_result: Mutex::new(None),
        });
        if inner.opts.background {
            Workers::start(&inner)?;
        }
        Ok(store)
    }

    /// Nodes matching a Graphite glob, sorted by path (leaf before branch for a path that
    /// is both), with graphite-web's standard-finder semantics.
    pub fn find(&self, pattern: &PathPattern) -> Vec<FindEntry> {
        self.inner.index.read().find(pattern)
    }

    /// [`find`](Self::find) that also notes the series of the leaves in `hint`, so
    /// that a [`plan_fetch_hinted`](Self::plan_fetch_hinted) of these paths need not
    /// look each name up again among all the names.
    pub fn find_hinted(&self, pattern: &PathPattern, hint: &mut crate::LeafHint) -> Vec<FindEntry> {
        let mut ids = Vec::new();
        let entries = self.inner.index.read().find_noting(pattern, &mut ids);
        hint.add(ids);
        entries
    }

    /// The series of the leaves matching `pattern`, in path order, for a read of
    /// millions of them a chunk at a time: 4 bytes a leaf instead of its path (the
    /// paths of a chunk come from [`leaf_paths`](Self::leaf_paths)). Leaves whose path
    /// `keep` refuses are left out. The ids are noted in `hint` as
    /// [`find_hinted`](Self::find_hinted) notes them.
    pub fn find_leaf_ids(
        &self,
        pattern: &PathPattern,
        hint: &mut crate::LeafHint,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Vec<u32> {
        let ids = {
            let idx = self.inner.index.read();
            let mut ids = idx.find_leaf_ids(pattern);
            ids.retain(|&id| keep(idx.name_bytes(id)));
            ids
        };
        hint.add(ids.clone());
        ids
    }

    /// The paths (names) of series found by [`find_leaf_ids`](Self::find_leaf_ids),
    /// in the same order; a series deleted since is left out.
    pub fn leaf_paths(&self, ids: &[u32]) -> Vec<String> {
        let idx = self.inner.index.read();
        ids.iter()
            .filter(|&&id| idx.meta(id).is_some())
            .map(|&id| idx.name_str(id).to_string())
            .collect()
    }

    /// whisper's `fetch(path, from, until, now)`: `None` where whisper returns `None`
    /// (or raises for `from > until`), and for an unknown path.
    pub fn fetch(&self, path: &str, from: i64, until: i64, now: i64) -> Option<Fetched> {
        let mut sc = Scratch::default();
        let mut head = Vec::new();
        self.inner
            .fetch_one(path, from, until, now, &mut sc, &mut head)
    }

    /// [`fetch`](Self::fetch) for many paths, answered in order: a
    /// [`plan_fetch`](Self::plan_fetch) and a [`read_plan`](Self::read_plan), which
    /// reads the series in id order with the parts' indexes merge-joined. Callers that
    /// keep the values in their own form should use those two directly and skip the
    /// `Vec` per series.
    ///
    /// One thread: with glibc's allocator, spreading this over threads measured 3-4x
    /// slower (1,000 series x 8,640 points: 39 ms on one thread, 155 ms on two), the
    /// fresh output pages faulting in under contention; per-series work is about a
    /// microsecond.
    pub fn fetch_many(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
    ) -> Vec<Option<Fetched>> {
        let plan = self.plan_fetch(paths, from, until, now);
        let mut out = vec![None; paths.len()];
        self.read_plan(&plan, |i, f| {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(Fetched {
                    start: f.start,
                    end: f.end,
                    step: f.step,
                    values: f.values.to_vec(),
                });
            }
        });
        out
    }

    /// [`fetch`](Self::fetch) into a caller's buffer (cleared first), so that a caller
    /// combining many series (sumSeries) reuses one allocation. Returns `(start, end,
    /// step)`, or `None` where `fetch` returns `None`.
    pub fn fetch_into(
        &self,
        path: &str,
        from: i64,
        until: i64,
        now: i64,
        values: &mut Vec<Option<f64>>,
    ) -> Option<(i64, i64, i64)> {
        let mut sc = Scratch::default();
        let mut head = Vec::new();
        self.inner
            .fetch_with(path, from, until, now, &mut sc, &mut head, values)
    }

    /// The id of the live series `name` (ids are dense, from 0, and never reused: a
    /// deleted series' name comes back under a new id; a renamed series keeps its id).
    pub fn series_id(&self, name: &str) -> Option<u32> {
        self.inner.index.read().lookup(name.as_bytes())
    }

    /// The current name of the live series `id`; `None` for a deleted or unknown id.
    pub fn series_name(&self, id: u32) -> Option<String> {
        let idx = self.inner.index.read();
        idx.meta(id)?;
        Some(idx.name_of(id).to_string())
    }

    /// How many deletes and renames this store has done since it opened: state kept by
    /// series id is checked against [`series_name`](Self::series_name) when it moves.
    pub fn name_changes(&self) -> u64 {
        self.inner
            .name_changes
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Series in the index.
    pub fn series_count(&self) -> usize {
        self.inner.index.read().live_len()
    }

    /// Prometheus text lines for the store's counters and gauges.
    pub fn write_prometheus(&self, out: &mut String) {
        let g = self.inner.gauges();
        self.inner.metrics.write_prometheus(&g, out);
    }

    /// Sets the log's time (Unix seconds) that retention judges by when the store was
    /// opened with `log_time_retention`: no point written after this call carries an
    /// arrival time before it (a storage node's consumer: the earliest arrival time its
    /// partitions can still bring). Ignored otherwise.
    pub fn set_log_time(&self, t: i64) {
        self.inner
            .log_time
            .store(t, std::sync::atomic::Ordering::Release);
    }

    /// Writes what the WAL has queued and fsyncs it (unless the policy is `never`):
    /// every append that returned before this call is then on disk.
    pub fn sync_wal(&self) -> Result<(), StoreError> {
        self.inner.wal.sync()
    }

    /// True while the store takes writes.
    pub fn is_healthy(&self) -> bool {
        self.inner.is_healthy()
    }

    /// Runs every background job once, now: freezes and flushes the head, rolls up
    /// closed partitions, applies retention and compacts. For tests (with background
    /// threads off) and administration.
    pub fn run_maintenance(&self) -> Result<(), StoreError> {
        self.inner.flush_all(true)?;
        self.inner.roll_up()?;
        self.inner.apply_retention()?;
        while self.inner.compact_once()? {}
        Ok(())
    }

    /// Flushes the head to disk parts, syncs, writes the manifest and stops the
    /// background threads. Idempotent: later calls return the first call's result.
    pub fn close(&self) -> Result<(), StoreError> {
        let mut done = self.close_result.lock();
        if let Some(r) = &*done {
            return r.clone().map_err(StoreError::Poisoned);
        }
        self.inner.admission.close();
        self.inner.workers.stop();
        let r = self
            .inner
            .flush_all(true)
            .and_then(|_| self.inner.wal.sync());
        if r.is_ok() && !self.inner.opts.close_merge.is_zero() {
            self.merge_at_close();
        }
        *done = Some(r.as_ref().map(|_| ()).map_err(|e| e.to_string()));
        r
    }
}

impl Store {
    /// The close's merge (see [`StoreOptions::close_merge`](crate::StoreOptions)):
    /// everything is in parts and the WAL already, so a failed merge costs only disk
    /// space and the close still succeeds. The budget counts from the stop, which may
    /// have let a background merge finish first.
    fn merge_at_close(&self) {
        let t = self
            .inner
            .workers
            .stopped_at()
            .unwrap_or_else(std::time::Instant::now);
        match self.inner.merge_at_close(t + self.inner.opts.close_merge) {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                merges = n,
                secs = t.elapsed().as_secs_f64(),
                "merged parts at close"
            ),
            Err(e) => tracing::warn!(error = %e, "merging parts at close failed"),
        }
    }
}

impl Drop for Store {
    /// A backstop: stops the background threads but flushes nothing (what is not in
    /// parts is in the WAL, replayed at the next open). Call [`Store::close`].
    fn drop(&mut self) {
        self.inner.workers.stop();
    }
}

/// Opens the parts the manifest lists; parts that fail their checks are moved to the
/// quarantine directory and left out; files the manifest does not list are leftovers
/// of an interrupted flush or compaction and are deleted.
fn open_parts(
    data_dir: &Path,
    dir: &Path,
    m: &Manifest,
    metrics: &Metrics,
) -> Result<(Version, u64), StoreError> {
    let mut version = Version::default();
    let mut max_id = 0u64;
    let listed: std::collections::HashSet<u64> = m.parts.iter().map(|p| p.file_id).collect();
    let rd = fs::read_dir(dir).map_err(|e| StoreError::io("list", dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let id = name
            .strip_suffix(".part")
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        if let Some(id) = id {
            max_id = max_id.max(id);
            if listed.contains(&id) {
                continue;
            }
        }
        if name.ends_with(".corrupt") {
            continue;
        }
        let p = entry.path();
        tracing::info!(path = %p.display(), "removing a part file the manifest does not list");
        fs::remove_file(&p).map_err(|e| StoreError::io("remove", &p, e))?;
    }
    // each open reads and checks a part's whole index (about 10 bytes a series): the
    // parts are opened on every core, then taken in the manifest's order
    let check = |mp: &ManifestPart| {
        let path = part_path(dir, mp.file_id);
        Part::open(&path).and_then(|part| {
            let h = part.header;
            let want = ManifestPart {
                file_id: h.file_id,
                order: mp.order,
                kind: h.kind,
                class: h.class,
                level: h.level,
                partition: h.partition,
            };
            if want != *mp {
                return Err(StoreError::corrupt(
                    "part",
                    &path,
                    0,
                    format!("header {h:?} does not match the manifest entry {mp:?}"),
                ));
            }
            Ok(part)
        })
    };
    let mut opened: Vec<Option<Result<Part, StoreError>>> = Vec::new();
    opened.resize_with(m.parts.len(), || None);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(m.parts.len())
        .min(8);
    if threads > 1 {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let work = || {
            let mut got = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(mp) = m.parts.get(i) else { break };
                got.push((i, check(mp)));
            }
            got
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .filter_map(|_| {
                    std::thread::Builder::new()
                        .name("sumi-open-parts".into())
                        .spawn_scoped(s, work)
                        .ok()
                })
                .collect();
            let mut all = work();
            for h in handles {
                all.extend(h.join().unwrap_or_default());
            }
            for (i, r) in all {
                if let Some(slot) = opened.get_mut(i) {
                    *slot = Some(r);
                }
            }
        });
    }
    for (mp, done) in m.parts.iter().zip(opened) {
        let path = part_path(dir, mp.file_id);
        // a part no thread reached (one thread, or a panic) is opened here
        let opened = done.unwrap_or_else(|| check(mp));
        match opened {
            Ok(part) => version.add(PartRef {
                part: Arc::new(part),
                order: mp.order,
            }),
            Err(e) => {
                metrics.parts_corrupt.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %e, "skipping a part that failed its checks: the series it held lose that partition's points");
                if path.exists() {
                    crate::quarantine::move_aside(data_dir, &path, false)?;
                }
            }
        }
    }
    Ok((version, max_id))
}

impl Inner {
    fn fetch_one(
        &self,
        path: &str,
        from: i64,
        until: i64,
        now: i64,
        sc: &mut Scratch,
        head: &mut Vec<(u64, f64)>,
    ) -> Option<Fetched> {
        let mut values = Vec::new();
        let (start, end, step) = self.fetch_with(path, from, until, now, sc, head, &mut values)?;
        Some(Fetched {
            start,
            end,
            step,
            values,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn fetch_with(
        &self,
        path: &str,
        from: i64,
        until: i64,
        now: i64,
        sc: &mut Scratch,
        head: &mut Vec<(u64, f64)>,
        values: &mut Vec<Option<f64>>,
    ) -> Option<(i64, i64, i64)> {
        let (id, meta, class) = {
            let idx = self.index.read();
            let id = idx.lookup(path.as_bytes())?;
            let meta = idx.meta(id)?;
            (id, meta, idx.class(meta.class)?.clone())
        };
        let w = whisper_window(&class, from, until, now)?;
        head.clear();
        let (_frozen, version) = self.snapshot_series(id, head);
        let roll = self.parts.roll();
        let view = SeriesView {
            series: id,
            class: &class,
            meta,
            head,
            version: &version,
            roll: &roll,
            metrics: &self.metrics,
        };
        values.clear();
        values.resize(w.len(), None);
        view.read_level(w.level, w.start, w.end, values, sc);
        Some((w.start, w.end, w.step))
    }

    /// The series' head rows (newest first) and the version to read parts from, taken
    /// consistently with each other.
    pub(crate) fn snapshot_series(
        &self,
        id: u32,
        head: &mut Vec<(u64, f64)>,
    ) -> (Vec<Arc<FrozenGen>>, Arc<Version>) {
        let g = self.head.shard_of(id).read();
        let frozen = self.head.frozen();
        let version = self.parts.current();
        g.rows_of(id, head);
        drop(g);
        for gen in frozen.iter().rev() {
            gen.rows_of(id, head);
        }
        (frozen, version)
    }

    /// Open and with a WAL that takes writes.
    fn is_healthy(&self) -> bool {
        !self.admission.is_closed() && self.wal.failure().is_none()
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now()
    }

    /// "Now" for what expires: the clock, or with `log_time_retention` no later than
    /// the log's time.
    pub(crate) fn expiry_now(&self) -> i64 {
        let now = self.now();
        if self.opts.log_time_retention {
            now.min(self.log_time.load(std::sync::atomic::Ordering::Acquire))
        } else {
            now
        }
    }

    fn gauges(&self) -> Gauges {
        let mut g = Gauges::default();
        let levels;
        {
            let idx = self.index.read();
            levels = idx
                .classes()
                .iter()
                .map(|c| c.levels.len())
                .max()
                .unwrap_or(0);
            g.series = idx.live_len() as u64;
            g.tree_nodes = idx.tree_nodes() as u64;
            g.index_bytes = idx.heap_bytes() as u64;
            g.series_log_bytes = idx.log_bytes();
        }
        self.head.gauges(&mut g);
        g.wal_segment = self.wal.current_segment();
        let version = self.parts.current();
        let mut by_level: Vec<(usize, u64, u64, u64)> = (0..levels).map(|i| (i, 0, 0, 0)).collect();
        for r in version.parts() {
            let l = usize::from(r.part.header.level);
            if by_level.len() <= l {
                by_level.extend((by_level.len()..=l).map(|i| (i, 0, 0, 0)));
            }
            if let Some(e) = by_level.get_mut(l) {
                e.1 += 1;
                e.2 += r.part.bytes;
                e.3 += r.part.footer.points;
            }
        }
        g.parts = by_level;
        g.dirty_partitions = self.parts.roll().dirty_count() as u64;
        g.healthy = self.is_healthy();
        g
    }
}
