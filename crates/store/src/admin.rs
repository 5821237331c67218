//! Administration of series: which series a set of globs names, deleting them and
//! renaming a series or a subtree. The index work is in `series::admin`; this is the
//! public face, and the tag index hook.

use std::sync::atomic::Ordering;

use crate::series::Renamed;
use crate::store::Store;
use crate::StoreError;

impl Store {
    /// The series (leaves) matching any of `patterns`, sorted, without duplicates. A
    /// pattern is a Graphite glob (`a.**` names every series below `a`); one with `;`
    /// names a tagged series exactly.
    pub fn match_series(&self, patterns: &[&str]) -> Vec<String> {
        self.inner
            .index
            .read()
            .matching(patterns)
            .into_iter()
            .map(|(_, n)| n)
            .collect()
    }

    /// Deletes the series matching `patterns` (as [`match_series`](Self::match_series)
    /// picks them) and returns their names. The delete is in `series.log` and fsynced
    /// before this returns; the names vanish from `find` and `fetch` at once, their rows
    /// leave the disk at the next compaction of each part, and points arriving later
    /// under one of the names start a new, empty series.
    pub fn delete_series(&self, patterns: &[&str]) -> Result<Vec<String>, StoreError> {
        let mut idx = self.inner.index.write();
        let found = idx.matching(patterns);
        let ids: Vec<u32> = found.iter().map(|e| e.0).collect();
        idx.delete(&ids)?;
        self.inner.name_changes.fetch_add(1, Ordering::AcqRel);
        drop(idx);
        if !found.is_empty() {
            tracing::info!(series = found.len(), patterns = ?patterns, "series deleted");
            // wake the compactor so the space comes back soon
            self.inner.workers.wake();
        }
        Ok(found.into_iter().map(|(_, n)| n).collect())
    }

    /// Deletes the series with exactly these names (no glob expansion: for callers
    /// holding a series' name, such as GrowthForecast's graph delete); returns how
    /// many existed.
    pub fn delete_series_named(&self, names: &[&str]) -> Result<usize, StoreError> {
        let mut idx = self.inner.index.write();
        let ids: Vec<u32> = idx.named(names).into_iter().map(|e| e.0).collect();
        let n = idx.delete(&ids)?;
        self.inner.name_changes.fetch_add(1, Ordering::AcqRel);
        drop(idx);
        if n > 0 {
            self.inner.workers.wake();
        }
        Ok(n)
    }

    /// Renames the series `from` and every series below it to the same names under
    /// `to`, keeping their data (a `dry_run` only says what would move). Refused whole
    /// ([`StoreError::Admin`]) when a new name is taken or invalid,
    /// [`StoreError::NotFound`] when there is nothing at `from`.
    pub fn rename_series(
        &self,
        from: &str,
        to: &str,
        dry_run: bool,
    ) -> Result<Vec<Renamed>, StoreError> {
        if dry_run {
            let plan = self.inner.index.read().plan_rename(from, to)?;
            return Ok(plan.into_iter().map(|(_, m)| m).collect());
        }
        let moved = {
            let mut idx = self.inner.index.write();
            let moved = idx.rename(from, to)?;
            self.inner.name_changes.fetch_add(1, Ordering::AcqRel);
            moved
        };
        tracing::info!(from, to, series = moved.len(), "series renamed");
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sumi_model::Sink;
    use sumi_model::{Batch, ManualClock};

    use crate::testutil::TempDir;
    use crate::{Store, StoreOptions};

    const NOW: i64 = 1_700_000_000;

    fn open(dir: &TempDir) -> Arc<Store> {
        let opts = StoreOptions::for_tests(dir.path());
        Store::open(opts, Arc::new(ManualClock::new(NOW))).unwrap()
    }

    fn put(store: &Store, names: &[&str], ts: i64, v: f64) {
        let mut b = Batch::new();
        for n in names {
            b.push(n, ts, v);
        }
        store.append(&b).unwrap();
    }

    fn values(store: &Store, name: &str) -> Vec<f64> {
        store
            .fetch(name, NOW - 600, NOW, NOW)
            .map(|f| f.values.into_iter().flatten().collect())
            .unwrap_or_default()
    }

    fn part_bytes(dir: &TempDir) -> u64 {
        std::fs::read_dir(dir.path().join("parts"))
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    }

    #[test]
    fn delete_hides_at_once_drops_on_compaction_and_survives_replay() {
        let dir = TempDir::new("store-del");
        let many: Vec<String> = (0..2000).map(|i| format!("gone.h{i}.cpu")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        {
            let store = open(&dir);
            put(&store, &many, NOW - 120, 1.0);
            put(&store, &["keep.cpu"], NOW - 120, 2.0);
            store.run_maintenance().unwrap();
            let full = part_bytes(&dir);
            put(&store, &["gone.h1.cpu"], NOW - 60, 3.0); // only in the WAL
            assert_eq!(
                store.match_series(&["gone.h1*.cpu"]).len(),
                1 + 10 + 100 + 1000
            );
            let deleted = store.delete_series(&["gone.**"]).unwrap();
            assert_eq!(deleted.len(), 2000);
            assert!(store.find(&"gone".parse_glob()).is_empty());
            assert!(store.fetch("gone.h1.cpu", NOW - 600, NOW, NOW).is_none());
            assert_eq!(store.series_count(), 1);
            store.run_maintenance().unwrap();
            let after = part_bytes(&dir);
            assert!(
                after * 4 < full,
                "parts shrank from {full} to {after} bytes"
            );
            assert_eq!(values(&store, "keep.cpu"), [2.0]);
            put(&store, &["gone.h2.cpu"], NOW - 50, 4.0);
            assert_eq!(values(&store, "gone.h2.cpu"), [4.0], "a fresh series");
            let many = store.fetch_many(&["gone.h2.cpu", "keep.cpu"], NOW - 600, NOW, NOW);
            let got: Vec<Vec<f64>> = many
                .into_iter()
                .map(|f| {
                    f.map(|f| f.values.into_iter().flatten().collect())
                        .unwrap_or_default()
                })
                .collect();
            assert_eq!(got, [vec![4.0], vec![2.0]], "bulk reads agree");
            store.run_maintenance().unwrap();
            assert_eq!(
                values(&store, "gone.h2.cpu"),
                [4.0],
                "a fresh series, flushed"
            );
            // no close: the WAL still holds gone.h1.cpu's last point
        }
        let store = open(&dir);
        assert!(store.fetch("gone.h1.cpu", NOW - 600, NOW, NOW).is_none());
        assert_eq!(
            store.delete_series_named(&["keep.*", "nothing"]).unwrap(),
            0
        );
        assert_eq!(store.series_count(), 2);
        // the name again: a fresh, empty series
        put(&store, &["gone.h1.cpu"], NOW - 30, 9.0);
        assert_eq!(values(&store, "gone.h1.cpu"), [9.0]);
        store.close().unwrap();
    }

    #[test]
    fn rename_keeps_data_across_restart() {
        let dir = TempDir::new("store-ren");
        {
            let store = open(&dir);
            put(&store, &["a.x.cpu", "a.x.mem", "b.y"], NOW - 120, 5.0);
            store.run_maintenance().unwrap();
            put(&store, &["a.x.cpu"], NOW - 60, 6.0);
            let plan = store.rename_series("a.x", "c.z", true).unwrap();
            assert_eq!(plan.len(), 2);
            assert!(
                store.fetch("c.z.cpu", NOW - 600, NOW, NOW).is_none(),
                "dry run"
            );
            let r = store.rename_series("a.x", "c.z", false).unwrap();
            assert_eq!(r.len(), 2);
            assert_eq!(values(&store, "c.z.cpu"), [5.0, 6.0]);
            assert!(store.fetch("a.x.cpu", NOW - 600, NOW, NOW).is_none());
            let err = store.rename_series("b.y", "c.z.mem", false).unwrap_err();
            assert!(err.to_string().contains("already exists"), "{err}");
        }
        let store = open(&dir);
        assert_eq!(values(&store, "c.z.cpu"), [5.0, 6.0]);
        assert_eq!(values(&store, "c.z.mem"), [5.0]);
        store.close().unwrap();
    }

    trait ParseGlob {
        fn parse_glob(&self) -> sumi_model::glob::PathPattern;
    }
    impl ParseGlob for &str {
        fn parse_glob(&self) -> sumi_model::glob::PathPattern {
            sumi_model::glob::PathPattern::parse(self)
        }
    }
}
