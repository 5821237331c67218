//! The store seen through the query crate's [`SeriesSource`] seam.

use std::sync::Arc;

use sumi_model::glob::PathPattern;
use sumi_query::source::{FetchedSeries, FindNode, SeriesSource, SourceError};
use sumi_store::Store;

/// [`SeriesSource`] over the embedded store.
pub struct StoreSource {
    store: Arc<Store>,
}

impl StoreSource {
    pub fn new(store: Arc<Store>) -> StoreSource {
        StoreSource { store }
    }
}

impl SeriesSource for StoreSource {
    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        Ok(self
            .store
            .find(pattern)
            .into_iter()
            .map(|e| FindNode {
                path: e.path,
                is_leaf: e.is_leaf,
            })
            .collect())
    }

    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        Ok(self
            .store
            .fetch_many(&refs, from, until, now)
            .into_iter()
            .zip(paths)
            .filter_map(|(f, path)| {
                f.map(|f| FetchedSeries {
                    path: path.clone(),
                    start: f.start,
                    end: f.end,
                    step: f.step,
                    values: f.values,
                })
            })
            .collect())
    }
}
