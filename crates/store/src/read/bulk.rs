//! Reading many series in one pass: what `find` + `fetch` of a glob over a million
//! names needs.
//!
//! Two steps, so that a caller can refuse a request before any data is read:
//! - [`Store::plan_fetch`]: names to series ids and whisper windows, under the index
//!   lock taken a few thousand names at a time; the plan knows how many points the
//!   read will produce.
//! - [`Store::read_plan`]: the series in ascending id order, each handed to a callback
//!   as a borrowed slice (no allocation per series). Ascending ids let each part's
//!   index be merge-joined ([`IndexLookup`](crate::part::lookup::IndexLookup)) rather
//!   than searched per series.
//!
//! Each series is read from a consistent snapshot exactly as [`Store::fetch`] reads it
//! (its head shard's lock, then the frozen generations, the version and the roll
//! state); the snapshot is reused from one series to the next while none of them
//! changed, which is almost always, so a series costs a few uncontended lock
//! acquisitions on top of its decoding.
//!
//! One thread: per-series work is about a microsecond and the output is written in
//! order; spreading it measured slower (see [`Store::fetch_many`]).

use std::sync::Arc;

use crate::head::FrozenGen;
use crate::read::{whisper_window, Fetched, Scratch, SeriesView};
use crate::series::{ClassInfo, SeriesIndex, SeriesMeta};
use crate::store::{Inner, Store};
use crate::version::{RollState, Version};

/// Names resolved under one acquisition of the index lock, so that a plan over a
/// million names does not hold off series creation for its whole length.
const NAMES_PER_LOCK: usize = 16 * 1024;

/// One series of a plan.
#[derive(Clone, Copy, Debug)]
struct Planned {
    id: u32,
    /// Index of its path in the request.
    path: u32,
    meta: SeriesMeta,
}

/// A fetch of many paths, resolved but not read: see [`Store::plan_fetch`].
#[derive(Debug)]
pub struct FetchPlan {
    from: i64,
    until: i64,
    now: i64,
    /// Sorted by series id.
    series: Vec<Planned>,
    /// The index's retention classes, by id.
    classes: Vec<Arc<ClassInfo>>,
    points: u64,
}

impl FetchPlan {
    /// Paths that will be answered (known series whose retention covers the range).
    pub fn series(&self) -> usize {
        self.series.len()
    }

    /// Values the read will produce, over all series.
    pub fn points(&self) -> u64 {
        self.points
    }
}

/// One series of a bulk read, borrowed until the callback returns: whisper's `fetch`
/// result (values for `start, start + step, ..., end - step`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FetchedRef<'a> {
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub values: &'a [Option<f64>],
}

impl Store {
    /// Resolves `paths` for a read over `[from, until]` at `now` (whisper's rules, as
    /// [`fetch`](Self::fetch)) without reading any data. Unknown paths and paths whose
    /// retention does not cover the range are left out.
    pub fn plan_fetch(&self, paths: &[&str], from: i64, until: i64, now: i64) -> FetchPlan {
        self.plan_fetch_hinted(paths, from, until, now, &mut LeafHint::default())
    }

    /// [`plan_fetch`](Self::plan_fetch) taking the series of paths that
    /// [`find_hinted`](Self::find_hinted) noted in `hint` from there (checked against
    /// the series' name) rather than from the index of all names. The plan is the same.
    pub fn plan_fetch_hinted(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
        hint: &mut LeafHint,
    ) -> FetchPlan {
        let mut plan = FetchPlan {
            from,
            until,
            now,
            series: Vec::with_capacity(paths.len()),
            classes: Vec::new(),
            points: 0,
        };
        let mut base = 0usize;
        for names in paths.chunks(NAMES_PER_LOCK) {
            let idx = self.inner.index.read();
            if plan.classes.len() < idx.classes().len() {
                plan.classes = idx.classes().to_vec();
            }
            for (k, name) in names.iter().enumerate() {
                let Ok(path) = u32::try_from(base + k) else {
                    break;
                };
                let Some(id) = hint
                    .id_of(&idx, name.as_bytes())
                    .or_else(|| idx.lookup(name.as_bytes()))
                else {
                    continue;
                };
                let Some(meta) = idx.meta(id) else { continue };
                let Some(class) = plan.classes.get(usize::from(meta.class)) else {
                    continue;
                };
                let Some(w) = whisper_window(class, from, until, now) else {
                    continue;
                };
                plan.points += w.len() as u64;
                plan.series.push(Planned { id, path, meta });
            }
            base += names.len();
        }
        if !plan.series.is_sorted_by_key(|p| p.id) {
            plan.series.sort_unstable_by_key(|p| (p.id, p.path));
        }
        plan
    }

    /// Reads a plan: `each(path_index, series)` for every planned series, in
    /// ascending series id order (not path order).
    pub fn read_plan(&self, plan: &FetchPlan, mut each: impl FnMut(usize, FetchedRef<'_>)) {
        self.inner.read_plan(plan, &mut each);
    }
}

/// Leaves found by [`Store::find_hinted`] fewer than this are not noted: a small
/// find's names are looked up quickly enough.
const HINT_MIN: usize = 1024;

/// The series of the leaves a request's finds answered, as runs in path order (one a
/// find), for that request's fetches of those paths ([`Store::plan_fetch_hinted`]).
/// Fetches ask for paths in ascending order (a chunk at a time), so each run keeps a
/// cursor and a path costs a comparison with the name of the series at the cursor,
/// not a hash lookup among all names. 4 bytes a leaf.
#[derive(Default)]
pub struct LeafHint {
    /// `(series ids in path order, cursor)`.
    runs: Vec<(Vec<u32>, usize)>,
    /// The path asked for last: one before it starts a new pass.
    last: Vec<u8>,
    hits: u64,
}

impl LeafHint {
    /// Notes a find's leaves (their series, in path order).
    pub(crate) fn add(&mut self, ids: Vec<u32>) {
        if ids.len() >= HINT_MIN {
            self.runs.push((ids, 0));
        }
    }

    /// Paths whose series came from here rather than from the index of all names.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// The live series named `name` if a run holds it.
    fn id_of(&mut self, idx: &SeriesIndex, name: &[u8]) -> Option<u32> {
        if self.runs.is_empty() {
            return None;
        }
        // a path before the previous one: a new pass, each cursor found by bisection
        let restart = name < self.last.as_slice();
        self.last.clear();
        self.last.extend_from_slice(name);
        for (ids, cursor) in &mut self.runs {
            let name_at = |i: usize| ids.get(i).map(|&id| idx.name_bytes(id));
            if restart {
                *cursor = ids.partition_point(|&id| idx.name_bytes(id) < name);
            }
            // paths come in order: the cursor moves forward past names not asked for
            while name_at(*cursor).is_some_and(|n| n < name) {
                *cursor += 1;
            }
            if name_at(*cursor) == Some(name) {
                let id = ids.get(*cursor).copied()?;
                *cursor += 1;
                // a series deleted since the find (and maybe created again under
                // another id) is looked up as before
                if idx.meta(id).is_some() {
                    self.hits += 1;
                    return Some(id);
                }
            }
        }
        None
    }
}

/// Points a plan reads from which it is read by several threads: below it a second
/// thread costs more to start and feed than it saves.
const PARALLEL_MIN_POINTS: u64 = 500_000;
/// Threads reading one plan at most (the caller's included).
const MAX_READERS: usize = 4;

/// What one series is read against; shared by consecutive series while unchanged.
struct Snapshot {
    frozen: Vec<Arc<FrozenGen>>,
    version: Arc<Version>,
    roll: Arc<RollState>,
}

impl Inner {
    fn read_plan(&self, plan: &FetchPlan, each: &mut dyn FnMut(usize, FetchedRef<'_>)) {
        let helpers = if plan.points() >= PARALLEL_MIN_POINTS {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_READERS)) - 1
        } else {
            0
        };
        if helpers == 0 || plan.series.len() < 2 {
            return self.read_series(&plan.series, plan, each);
        }
        // the caller's thread reads the first share and hands its answers over as it
        // goes; helpers read the other shares and send theirs through a short queue,
        // which the caller drains between two of its own series
        let share = plan.series.len().div_ceil(helpers + 1);
        let mut chunks = plan.series.chunks(share);
        let own = chunks.next().unwrap_or(&[]);
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Fetched)>(64);
            for chunk in chunks {
                let tx = tx.clone();
                scope.spawn(move || {
                    self.read_series(chunk, plan, &mut |i, f| {
                        let _ = tx.send((
                            i,
                            Fetched {
                                start: f.start,
                                end: f.end,
                                step: f.step,
                                values: f.values.to_vec(),
                            },
                        ));
                    });
                });
            }
            drop(tx);
            let deliver = |(i, a): (usize, Fetched),
                           each: &mut dyn FnMut(usize, FetchedRef<'_>)| {
                each(
                    i,
                    FetchedRef {
                        start: a.start,
                        end: a.end,
                        step: a.step,
                        values: &a.values,
                    },
                )
            };
            self.read_series(own, plan, &mut |i, f| {
                each(i, f);
                while let Ok(a) = rx.try_recv() {
                    deliver(a, each);
                }
            });
            for a in rx {
                deliver(a, each);
            }
        });
    }

    /// Reads `series` of `plan` in order, handing each answer to `each`.
    fn read_series(
        &self,
        series: &[Planned],
        plan: &FetchPlan,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) {
        let mut sc = Scratch::bulk();
        let mut head: Vec<(u64, f64)> = Vec::new();
        let mut values: Vec<Option<f64>> = Vec::new();
        let mut snap: Option<Snapshot> = None;
        for p in series {
            let Some(class) = plan.classes.get(usize::from(p.meta.class)) else {
                continue;
            };
            let Some(w) = whisper_window(class, plan.from, plan.until, plan.now) else {
                continue;
            };
            head.clear();
            let s = {
                // the order of `snapshot_series`: shard, frozen, version, roll
                let shard = self.head.shard_of(p.id).read();
                let s = self.refresh(&mut snap, &mut sc);
                shard.rows_of(p.id, &mut head);
                s
            };
            for gen in s.frozen.iter().rev() {
                gen.rows_of(p.id, &mut head);
            }
            let view = SeriesView {
                series: p.id,
                class,
                meta: p.meta,
                head: &head,
                version: &s.version,
                roll: &s.roll,
                metrics: &self.metrics,
            };
            values.clear();
            values.resize(w.len(), None);
            view.read_level(w.level, w.start, w.end, &mut values, &mut sc);
            each(
                p.path as usize,
                FetchedRef {
                    start: w.start,
                    end: w.end,
                    step: w.step,
                    values: &values,
                },
            );
        }
    }

    /// The current snapshot, reusing `snap` when nothing in it changed (the caller
    /// holds the series' shard lock). Lookup positions are dropped with the version
    /// whose parts they point into.
    fn refresh<'s>(&self, snap: &'s mut Option<Snapshot>, sc: &mut Scratch) -> &'s Snapshot {
        let frozen = self.head.frozen_guard();
        let version = self.parts.current_guard();
        let roll = self.parts.roll_guard();
        let reuse = snap.as_ref().is_some_and(|s| {
            Arc::ptr_eq(&s.version, &version)
                && s.frozen.len() == frozen.len()
                && s.frozen
                    .iter()
                    .zip(frozen.iter())
                    .all(|(a, b)| Arc::ptr_eq(a, b))
        });
        if !reuse {
            sc.forget_parts();
            return snap.insert(Snapshot {
                frozen: frozen.clone(),
                version: version.clone(),
                roll: roll.clone(),
            });
        }
        let s = snap.get_or_insert_with(|| Snapshot {
            frozen: frozen.clone(),
            version: version.clone(),
            roll: roll.clone(),
        });
        if !Arc::ptr_eq(&s.roll, &roll) {
            s.roll = roll.clone();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sumi_model::Sink;
    use sumi_model::{Batch, ManualClock, SeriesRules, StorageAggregation, StorageSchemas};

    use crate::testutil::TempDir;
    use crate::{Fetched, Store, StoreOptions};

    const NOW: i64 = 1_700_000_000;

    fn append(store: &Store, points: &[(String, i64, f64)]) {
        let mut b = Batch::new();
        for (n, t, v) in points {
            b.push(n, *t, *v);
        }
        store.append(&b).unwrap();
    }

    /// Every series of a plan read in bulk equals its single `fetch`, wherever its
    /// points are: head, frozen or flushed, several parts a partition, direct writes
    /// at coarse levels, rollups materialised, dirty or computed on the fly.
    #[test]
    fn bulk_reads_equal_single_fetches() {
        let dir = TempDir::new("bulk");
        let clock = ManualClock::new(NOW);
        let mut opts = StoreOptions::for_tests(dir.path());
        opts.rules = SeriesRules {
            schemas: StorageSchemas::parse(
                "t",
                "[all]\npattern = .*\nretentions = 10s:1h,1m:1d,10m:30d\n",
            )
            .unwrap(),
            aggregation: StorageAggregation::builtin(),
        };
        opts.rollup_grace_secs = 0;
        let store = Store::open(opts, Arc::new(clock.clone())).unwrap();
        let names: Vec<String> = (0..150).map(|i| format!("h{}.m{}", i % 7, i)).collect();
        let round = |ages: &[i64], k: f64| {
            let pts: Vec<(String, i64, f64)> = names
                .iter()
                .enumerate()
                .flat_map(|(i, n)| {
                    ages.iter()
                        .filter(move |_| i % 3 != 2 || k > 1.0)
                        .map(move |a| (n.clone(), NOW - a - i as i64, k * i as f64 + *a as f64))
                })
                .collect();
            append(&store, &pts);
        };
        round(&[30, 600, 7200, 5 * 86_400], 1.0);
        store.run_maintenance().unwrap();
        round(&[40, 650, 7300], 2.0);
        store.run_maintenance().unwrap();
        // late writes into rolled partitions, and rows left in the head
        round(&[4000, 45, 20], 3.0);
        let mut paths: Vec<&str> = names.iter().rev().map(String::as_str).collect();
        paths.insert(5, "missing.series");
        paths.push(names[3].as_str());
        for (from, until) in [
            (NOW - 3600, NOW),
            (NOW - 86_400, NOW),
            // ~630,000 points: read by several threads where the machine has them
            (NOW - 30 * 86_400, NOW - 86_400),
            (NOW - 100, NOW - 50),
            (NOW + 10, NOW + 20),
        ] {
            let plan = store.plan_fetch(&paths, from, until, NOW);
            let mut got: Vec<Option<Fetched>> = vec![None; paths.len()];
            store.read_plan(&plan, |i, f| {
                assert!(got[i].is_none(), "path {i} answered twice");
                got[i] = Some(Fetched {
                    start: f.start,
                    end: f.end,
                    step: f.step,
                    values: f.values.to_vec(),
                });
            });
            let mut points = 0;
            for (p, g) in paths.iter().zip(&got) {
                let want = store.fetch(p, from, until, NOW);
                assert_eq!(g, &want, "{p} over {from}..{until}");
                points += want.map_or(0, |w| w.values.len() as u64);
            }
            assert_eq!(plan.points(), points);
            assert_eq!(plan.series(), got.iter().flatten().count());
            assert_eq!(store.fetch_many(&paths, from, until, NOW), got);
        }
        // some answers really came from every place
        let f = store.fetch(&names[0], NOW - 86_400, NOW, NOW).unwrap();
        assert!(f.values.iter().flatten().count() >= 2, "{f:?}");
        store.close().unwrap();
    }
}
