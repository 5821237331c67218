//! An in-memory [`SeriesSource`] with whisper's fetch rules and one archive per
//! series: for tests of query functions and renderers, and for anyone who needs a
//! source without a store.

use std::collections::{BTreeMap, BTreeSet};

use sumi_model::glob::PathPattern;

use crate::source::{FetchedSeries, FindNode, SeriesSource, SourceError};

/// Series held in memory, each with one archive (`step`, `retention` seconds).
#[derive(Clone, Debug, Default)]
pub struct MemorySource {
    series: BTreeMap<String, Archive>,
}

#[derive(Clone, Debug)]
struct Archive {
    step: i64,
    retention: i64,
    /// slot → value
    points: BTreeMap<i64, f64>,
}

impl MemorySource {
    pub fn new() -> MemorySource {
        MemorySource::default()
    }

    /// Creates (or resets) a series with one archive of `step` seconds kept for
    /// `retention` seconds.
    pub fn create(&mut self, path: &str, step: i64, retention: i64) {
        self.series.insert(
            path.to_string(),
            Archive {
                step: step.max(1),
                retention: retention.max(step.max(1)),
                points: BTreeMap::new(),
            },
        );
    }

    /// Writes points, aligned down to the step; within a slot the last write wins.
    /// Creates the series (step 60, retention one day) when it does not exist.
    pub fn write(&mut self, path: &str, points: impl IntoIterator<Item = (i64, f64)>) {
        if !self.series.contains_key(path) {
            self.create(path, 60, 86_400);
        }
        if let Some(archive) = self.series.get_mut(path) {
            for (ts, v) in points {
                archive.points.insert(ts - ts.rem_euclid(archive.step), v);
            }
        }
    }

    /// A series with `values` at `start, start + step, …` (`None` leaves a gap).
    pub fn add(
        &mut self,
        path: &str,
        step: i64,
        retention: i64,
        start: i64,
        values: &[Option<f64>],
    ) {
        self.create(path, step, retention);
        let points = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (start + i as i64 * step, v)));
        self.write(path, points);
    }

    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

impl SeriesSource for MemorySource {
    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        let mut branches: BTreeSet<&str> = BTreeSet::new();
        let mut nodes: Vec<FindNode> = Vec::new();
        for path in self.series.keys() {
            if pattern.matches_path(path) {
                nodes.push(FindNode {
                    path: path.clone(),
                    is_leaf: true,
                });
            }
            for (i, _) in path.match_indices('.') {
                let prefix = &path[..i];
                if !branches.contains(prefix) && pattern.matches_path(prefix) {
                    branches.insert(prefix);
                }
            }
        }
        nodes.extend(branches.into_iter().map(|b| FindNode {
            path: b.to_string(),
            is_leaf: false,
        }));
        // sorted by path, the leaf first when a path is both
        nodes.sort_by(|a, b| a.path.cmp(&b.path).then(b.is_leaf.cmp(&a.is_leaf)));
        Ok(nodes)
    }

    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        let mut out = Vec::new();
        for path in paths {
            let Some(archive) = self.series.get(path) else {
                continue;
            };
            if let Some(series) = archive.fetch(path, from, until, now) {
                out.push(series);
            }
        }
        Ok(out)
    }
}

impl Archive {
    /// whisper's `file_fetch` + `__archive_fetch` for a single archive.
    fn fetch(&self, path: &str, from: i64, until: i64, now: i64) -> Option<FetchedSeries> {
        if from > until || from > now {
            return None;
        }
        let oldest = now - self.retention;
        if until < oldest {
            return None;
        }
        let from = from.max(oldest);
        let until = until.min(now);
        let step = self.step;
        let start = from - from.rem_euclid(step) + step;
        let mut end = until - until.rem_euclid(step) + step;
        if start == end {
            end += step;
        }
        let values = (start..end)
            .step_by(step as usize)
            .map(|slot| self.points.get(&slot).copied())
            .collect();
        Some(FetchedSeries {
            path: path.to_string(),
            start,
            end,
            step,
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whisper_intervals() {
        let mut m = MemorySource::new();
        m.add("a.b", 60, 3600, 1_000_020, &[Some(1.0), None, Some(3.0)]);
        let got = m
            .fetch(&["a.b".to_string()], 1_000_000, 1_000_200, 1_000_300)
            .unwrap();
        // from 1_000_000 → first slot after it; until 1_000_200 → its slot included
        assert_eq!(got[0].start, 1_000_020);
        assert_eq!(got[0].end, 1_000_260);
        assert_eq!(got[0].values, vec![Some(1.0), None, Some(3.0), None]);
        // from after now, or until before the retention: nothing
        assert!(m
            .fetch(&["a.b".to_string()], 1_000_400, 1_000_500, 1_000_300)
            .unwrap()
            .is_empty());
        assert!(m
            .fetch(&["a.b".to_string()], 0, 10, 1_000_300)
            .unwrap()
            .is_empty());
        // unknown paths are left out
        assert!(m.fetch(&["x".to_string()], 0, 10, 20).unwrap().is_empty());
    }

    #[test]
    fn find_leaves_and_branches() {
        let mut m = MemorySource::new();
        for p in ["a.b", "a.b.c", "a.d", "x.y"] {
            m.create(p, 60, 3600);
        }
        let found = m.find(&PathPattern::parse("a.*")).unwrap();
        let got: Vec<(&str, bool)> = found.iter().map(|n| (n.path.as_str(), n.is_leaf)).collect();
        assert_eq!(got, vec![("a.b", true), ("a.b", false), ("a.d", true)]);
        let found = m.find(&PathPattern::parse("*")).unwrap();
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|n| !n.is_leaf));
    }
}
