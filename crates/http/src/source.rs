//! The store seen through the query crate's [`SeriesSource`] seam, and what one
//! request may read through it.
//!
//! A render's cost grows with series × slots, and a glob over a million names at a
//! fine step can ask for more points than the machine has memory. So each request
//! gets its own [`StoreSource`] with a budget ([`QueryLimits`]) that every fetch of the
//! request (the targets, and functions that fetch again over other intervals) draws
//! from. The check comes before any data is read: the series count is known from the
//! names, the point count from the store's plan (whisper's window per series), so a
//! refused request costs a `find` and a plan, not a read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sumi_model::glob::PathPattern;
use sumi_query::source::{FetchedRef, FetchedSeries, FindNode, SeriesSource, SourceError};
use sumi_store::Store;

/// What one request may read. See `crates/server/src/config.rs` for how the defaults
/// were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLimits {
    /// Values (slots) over all fetched series: `[http] max_points_per_query`.
    pub max_points: u64,
    /// Series fetched: `[http] max_series_per_query`.
    pub max_series: u64,
}

impl QueryLimits {
    /// Default of `max_points`. Measured peak RSS above an idle server with a million
    /// series: 18 M points read as plain paths +150 MB, through `sumSeries` +430 MB;
    /// the 1M-series × 10-point benchmark query is 10 M points.
    pub const DEFAULT_MAX_POINTS: u64 = 20_000_000;
    /// Default of `max_series`: the 1M-series benchmark query took +280 MB as plain
    /// paths and +710 MB through `sumSeries` (a series costs a few hundred bytes
    /// before its values when a function holds it).
    pub const DEFAULT_MAX_SERIES: u64 = 2_000_000;

    /// No limit at all.
    pub const UNLIMITED: QueryLimits = QueryLimits {
        max_points: u64::MAX,
        max_series: u64::MAX,
    };
}

impl Default for QueryLimits {
    fn default() -> QueryLimits {
        QueryLimits {
            max_points: QueryLimits::DEFAULT_MAX_POINTS,
            max_series: QueryLimits::DEFAULT_MAX_SERIES,
        }
    }
}

/// [`SeriesSource`] over the embedded store, with a budget for one request.
pub struct StoreSource {
    store: Arc<Store>,
    limits: QueryLimits,
    /// Series and points held against the budget: everything fetched, less what
    /// transient fetches (streaming aggregates) have given back.
    series: AtomicU64,
    held_points: AtomicU64,
    /// Points read in all.
    points: AtomicU64,
    /// The server's anomaly detectors, for `anomalyScore` (`None`: none).
    anomalies: Option<Arc<dyn crate::anomaly_api::AnomalyFeed>>,
    /// The series of the leaves this request's finds answered, so that fetching them
    /// does not look every name up again among all the names.
    leaf_hint: parking_lot::Mutex<sumi_store::LeafHint>,
}

impl StoreSource {
    /// A source without limits.
    pub fn new(store: Arc<Store>) -> StoreSource {
        StoreSource::with_limits(store, QueryLimits::UNLIMITED)
    }

    /// A source for one request: its fetches together may read at most `limits`.
    pub fn with_limits(store: Arc<Store>, limits: QueryLimits) -> StoreSource {
        StoreSource {
            store,
            limits,
            series: AtomicU64::new(0),
            held_points: AtomicU64::new(0),
            points: AtomicU64::new(0),
            anomalies: None,
            leaf_hint: parking_lot::Mutex::new(sumi_store::LeafHint::default()),
        }
    }

    /// The same source, answering `anomalyScore`'s questions from `anomalies`.
    pub fn with_anomalies(
        mut self,
        anomalies: Option<Arc<dyn crate::anomaly_api::AnomalyFeed>>,
    ) -> StoreSource {
        self.anomalies = anomalies;
        self
    }

    /// Points read so far through this source.
    pub fn points_read(&self) -> u64 {
        self.points.load(Ordering::Relaxed)
    }

    /// Takes `n` from `counter` when the total stays within `max`; otherwise the total
    /// it would have reached.
    fn draw(counter: &AtomicU64, n: u64, max: u64) -> Result<(), u64> {
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(n).filter(|&t| t <= max)
            })
            .map(|_| ())
            .map_err(|used| used.saturating_add(n))
    }
}

impl SeriesSource for StoreSource {
    fn anomaly_scored_from(&self, name: &str) -> Option<i64> {
        self.anomalies.as_ref()?.scored_from(name)
    }

    fn events(&self, from: i64, until: i64) -> Vec<sumi_query::source::SourceEvent> {
        let Some(feed) = &self.anomalies else {
            return Vec::new();
        };
        feed.events(from, until)
            .iter()
            .filter(|e| (from..=until).contains(&e.start))
            .map(|e| sumi_query::source::SourceEvent {
                when: e.start,
                tags: crate::anomaly_api::event_tags(e),
            })
            .collect()
    }

    fn find_tagged(&self, exprs: &[String]) -> Result<Vec<String>, SourceError> {
        let exprs = exprs
            .iter()
            .map(|e| sumi_store::TagExpr::parse(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SourceError::Invalid(e.to_string()))?;
        self.store
            .find_tagged(&exprs)
            .map_err(|e| SourceError::Invalid(e.to_string()))
    }

    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        // globs do not reach the anomaly scores unless they name them
        // (`anomalyScore()` reads them by exact name, not through find)
        let scores = sumi_query::functions::anomaly::pattern_shows_scores(pattern.as_str());
        let found = self.store.find_hinted(pattern, &mut self.leaf_hint.lock());
        Ok(found
            .into_iter()
            .filter(|e| scores || !sumi_query::functions::anomaly::is_score_path(&e.path))
            .map(|e| FindNode {
                path: e.path,
                is_leaf: e.is_leaf,
            })
            .collect())
    }

    fn find_leaf_ids(&self, pattern: &PathPattern) -> Result<Option<Vec<u32>>, SourceError> {
        // as `find`: the anomaly scores only when the pattern names them
        let scores = sumi_query::functions::anomaly::pattern_shows_scores(pattern.as_str());
        let ids = self
            .store
            .find_leaf_ids(pattern, &mut self.leaf_hint.lock(), |name: &[u8]| {
                scores
                    || std::str::from_utf8(name)
                        .map_or(true, |n| !sumi_query::functions::anomaly::is_score_path(n))
            });
        Ok(Some(ids))
    }

    fn leaf_paths(&self, ids: &[u32]) -> Result<Vec<String>, SourceError> {
        Ok(self.store.leaf_paths(ids))
    }

    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let mut out: Vec<Option<FetchedSeries>> = vec![None; paths.len()];
        self.fetch_each(&refs, from, until, now, &mut |i, f| {
            if let (Some(slot), Some(path)) = (out.get_mut(i), paths.get(i)) {
                *slot = Some(FetchedSeries {
                    path: path.clone(),
                    start: f.start,
                    end: f.end,
                    step: f.step,
                    values: f.values.to_vec(),
                });
            }
        })?;
        Ok(out.into_iter().flatten().collect())
    }

    fn fetch_each(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(), SourceError> {
        self.fetch_counted(paths, from, until, now, each)
            .map(|_| ())
    }

    fn fetch_each_transient(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(), SourceError> {
        let (series, points) = self.fetch_counted(paths, from, until, now, each)?;
        // the caller holds none of it any more
        self.series.fetch_sub(series, Ordering::Relaxed);
        self.held_points.fetch_sub(points, Ordering::Relaxed);
        Ok(())
    }
}

impl StoreSource {
    /// `fetch_each`, answering the series and points it drew from the budget.
    fn fetch_counted(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(u64, u64), SourceError> {
        let max_series = self.limits.max_series;
        StoreSource::draw(&self.series, paths.len() as u64, max_series).map_err(|total| {
            SourceError::TooLarge(format!(
                "the targets match {total} series, more than the {max_series} one request \
                 may read (http.max_series_per_query); use narrower path globs or fewer \
                 targets"
            ))
        })?;
        let plan =
            self.store
                .plan_fetch_hinted(paths, from, until, now, &mut self.leaf_hint.lock());
        let max_points = self.limits.max_points;
        StoreSource::draw(&self.held_points, plan.points(), max_points).map_err(|total| {
            // nothing is read: the series drawn above are not held
            self.series.fetch_sub(paths.len() as u64, Ordering::Relaxed);
            SourceError::TooLarge(format!(
                "the targets would read {total} points ({} series from {from} to {until}), \
                 more than the {max_points} one request may read \
                 (http.max_points_per_query); ask for a shorter time range (from/until) or \
                 fewer series (narrower path globs)",
                plan.series()
            ))
        })?;
        self.store.read_plan(&plan, |i, f| {
            each(
                i,
                FetchedRef {
                    start: f.start,
                    end: f.end,
                    step: f.step,
                    values: f.values,
                },
            )
        });
        self.points.fetch_add(plan.points(), Ordering::Relaxed);
        Ok((paths.len() as u64, plan.points()))
    }
}
