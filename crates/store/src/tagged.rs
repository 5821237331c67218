//! The store's tag API: graphite-web's `TagDB` operations (`graphite/tags/base.py`)
//! over the tag index kept with the series index (`series/tags.rs`).

use sumi_model::tagged::{canonicalize, parse_carbon, TagError};

pub use crate::series::tags::{TagExpr, TagInfo, TagOp, TagQueryError, TagValueInfo};
use crate::{Store, StoreError};

/// Why `tag_series`/`untag_series` failed.
#[derive(Debug, thiserror::Error)]
pub enum TagSeriesError {
    /// A path carbon would refuse.
    #[error("cannot parse path {path:?}: {source}")]
    Invalid {
        path: String,
        #[source]
        source: TagError,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// graphite-web's default `TAGDB_AUTOCOMPLETE_LIMIT`.
pub const AUTOCOMPLETE_LIMIT: usize = 100;

fn canonical(path: &str) -> Result<String, TagSeriesError> {
    let mut tags = Vec::new();
    let mut out = String::new();
    canonicalize(path, [], &mut tags, &mut out).map_err(|source| TagSeriesError::Invalid {
        path: path.to_string(),
        source,
    })?;
    Ok(out)
}

/// Keeps the `limit` smallest distinct strings, sorted.
fn sorted_limited(mut v: Vec<String>, limit: usize) -> Vec<String> {
    v.sort_unstable();
    v.dedup();
    v.truncate(limit);
    v
}

impl Store {
    /// Canonical names of the tagged series matching every expression, sorted
    /// (graphite-web's `TagDB.find_series`).
    pub fn find_tagged(&self, exprs: &[TagExpr]) -> Result<Vec<String>, TagQueryError> {
        let idx = self.inner.index.read();
        let ids = idx.tags().find(exprs, |id| idx.name_str(id))?;
        let mut names: Vec<&str> = ids.iter().map(|&id| idx.name_str(id)).collect();
        names.sort_unstable();
        Ok(names.into_iter().map(str::to_string).collect())
    }

    /// Every tag, sorted, those matching the regex `filter` (anchored at the start),
    /// at most `limit` (`/tags`).
    pub fn tags(
        &self,
        filter: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<TagInfo>, TagQueryError> {
        self.inner.index.read().tags().list_tags(filter, limit)
    }

    /// The id of `tag` and its values with their series counts, sorted, filtered and
    /// limited like [`tags`](Self::tags); `None` for an unknown tag (`/tags/<tag>`).
    pub fn tag_values(
        &self,
        tag: &str,
        filter: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Option<(u32, Vec<TagValueInfo>)>, TagQueryError> {
        self.inner
            .index
            .read()
            .tags()
            .list_values(tag, filter, limit)
    }

    /// Tags of the series matching `exprs` (all tags when there are none), except the
    /// ones the expressions name, starting with `prefix`: sorted, at most `limit`
    /// (graphite-web's `auto_complete_tags`).
    pub fn auto_complete_tags(
        &self,
        exprs: &[TagExpr],
        prefix: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, TagQueryError> {
        let prefix = prefix.filter(|p| !p.is_empty());
        if exprs.is_empty() {
            let filter = prefix.map(|p| format!("^({})", regex::escape(p)));
            return Ok(self
                .tags(filter.as_deref(), Some(limit))?
                .into_iter()
                .map(|t| t.tag)
                .collect());
        }
        let mut out = Vec::new();
        for name in self.find_tagged(exprs)? {
            let Some(tags) = parse_carbon(&name) else {
                continue;
            };
            for (tag, _) in tags {
                if exprs.iter().any(|e| e.tag == tag) {
                    continue;
                }
                if prefix.is_some_and(|p| !tag.starts_with(p)) {
                    continue;
                }
                out.push(tag.to_string());
            }
        }
        Ok(sorted_limited(out, limit))
    }

    /// Values of `tag` on the series matching `exprs` (all its values when there are
    /// none) starting with `prefix`: sorted, at most `limit` (graphite-web's
    /// `auto_complete_values`).
    pub fn auto_complete_values(
        &self,
        exprs: &[TagExpr],
        tag: &str,
        prefix: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, TagQueryError> {
        let prefix = prefix.filter(|p| !p.is_empty());
        if exprs.is_empty() {
            let filter = prefix.map(|p| format!("^({})", regex::escape(p)));
            return Ok(self
                .tag_values(tag, filter.as_deref(), Some(limit))?
                .map(|(_, v)| v.into_iter().map(|v| v.value).collect())
                .unwrap_or_default());
        }
        let mut all = exprs.to_vec();
        all.push(TagExpr {
            tag: tag.to_string(),
            op: TagOp::Ne,
            spec: String::new(),
        });
        let mut out = Vec::new();
        for name in self.find_tagged(&all)? {
            let Some(tags) = parse_carbon(&name) else {
                continue;
            };
            if let Some((_, v)) = tags.into_iter().find(|(t, _)| *t == tag) {
                if prefix.is_none_or(|p| v.starts_with(p)) {
                    out.push(v.to_string());
                }
            }
        }
        Ok(sorted_limited(out, limit))
    }

    /// graphite-web's `tag_series`: puts `path` in canonical form, creates the series
    /// when new (with the rules' retention, as a first write would) and enters it in
    /// the tag index; returns the canonical path.
    pub fn tag_series(&self, path: &str) -> Result<String, TagSeriesError> {
        let name = canonical(path)?;
        let mut idx = self.inner.index.write();
        let id = match idx.lookup(name.as_bytes()) {
            Some(id) => id,
            None => {
                let cfg = self.inner.opts.rules.config_for(&name);
                let id = idx.create(&name, &cfg)?;
                idx.write_log()?;
                self.inner
                    .metrics
                    .series_created
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                id
            }
        };
        // a series back after a delSeries, or an untagged one, is not in the index
        // the series log rebuilds: note it
        if idx.tags_mut().register(id, &name) {
            idx.tags().persist(true, id, &name)?;
        }
        Ok(name)
    }

    /// graphite-web's `del_series`: takes the series out of the tag index (its data
    /// stays, as in graphite-web), persistently. Unknown series are not an error.
    pub fn untag_series(&self, path: &str) -> Result<(), TagSeriesError> {
        let name = canonical(path)?;
        let mut idx = self.inner.index.write();
        if let Some(id) = idx.lookup(name.as_bytes()) {
            if idx.tags_mut().remove(id, &name) {
                idx.tags().persist(false, id, &name)?;
            }
        }
        Ok(())
    }

    /// Series in the tag index and its approximate heap bytes.
    pub fn tag_index_stats(&self) -> (usize, usize) {
        let idx = self.inner.index.read();
        (idx.tags().series(), idx.tags().heap_bytes())
    }
}
