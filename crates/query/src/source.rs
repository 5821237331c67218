//! The query → store seam: everything query needs from storage, as a trait, so that
//! functions can be tested on generated series and a cluster can fan out.

use sumi_model::glob::PathPattern;

/// A node of the metric tree, as graphite-web's finders yield them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FindNode {
    /// The full dotted path (`servers.web01.cpu`).
    pub path: String,
    /// A series (whisper's `.wsp` file) rather than a branch (a directory).
    pub is_leaf: bool,
}

/// One series as whisper's `fetch` returns it: values for the slots
/// `start, start + step, ..., end - step` (`end` exclusive), `None` where nothing is
/// stored.
#[derive(Clone, Debug, PartialEq)]
pub struct FetchedSeries {
    pub path: String,
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
}

/// One answer of [`SeriesSource::fetch_each`], borrowed from the source for the
/// duration of the callback: the same fields as [`FetchedSeries`] without the path
/// (the callback gets its index) and without owning anything.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FetchedRef<'a> {
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub values: &'a [Option<f64>],
}

/// Why a source could not answer.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The request would touch more than the configured limit (series or points).
    #[error("query too large: {0}")]
    TooLarge(String),
    #[error("storage error: {0}")]
    Storage(String),
    /// The request asked something the source cannot answer as given (a tag
    /// expression that does not parse, a bad regex): the client's fault.
    #[error("{0}")]
    Invalid(String),
}

/// One event as `events(tags…)` counts it (sumi's anomaly events, as graphite-web's
/// events API shows them).
#[derive(Clone, Debug, PartialEq)]
pub struct SourceEvent {
    /// Epoch seconds.
    pub when: i64,
    pub tags: Vec<String>,
}

/// What the query engine needs from storage.
pub trait SeriesSource: Send + Sync {
    /// Every node matching `pattern`, sorted by path. A path that is both a leaf and a
    /// branch (`a.b` stored and `a.b.c` stored) is returned once per kind, leaf first.
    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError>;

    /// Whisper-style fetch of leaf paths (as [`find`](Self::find) returned them). Each
    /// series is answered from the archive whisper would pick: the first whose
    /// retention covers `now - from`; the interval and step follow whisper's `fetch`
    /// (`from` and `until` clamped to the retention and to `now`, slots aligned to the
    /// archive step, the slot holding `from` excluded and the one holding `until`
    /// included). A path with nothing to return (range entirely outside the retention,
    /// `from > now`, unknown path) is left out of the result.
    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError>;

    /// The leaves of `pattern` as handles that cost less to hold than their paths
    /// (4 bytes each), in the order of [`find`](Self::find)'s leaves (by path, each
    /// once), for a streamed aggregate that reads millions of them a chunk at a time
    /// ([`leaf_paths`](Self::leaf_paths) gives a chunk's paths). `None` (the default):
    /// the source has no such handles and the caller holds the paths.
    fn find_leaf_ids(&self, pattern: &PathPattern) -> Result<Option<Vec<u32>>, SourceError> {
        let _ = pattern;
        Ok(None)
    }

    /// The paths of leaves [`find_leaf_ids`](Self::find_leaf_ids) answered, in the
    /// same order; a leaf gone since is left out.
    fn leaf_paths(&self, ids: &[u32]) -> Result<Vec<String>, SourceError> {
        let _ = ids;
        Ok(Vec::new())
    }

    /// The tagged series (canonical names, sorted) matching every one of graphite's tag
    /// expressions (`tag=value`, `tag!=value`, `tag=~regex`, `tag!=~regex`), as
    /// graphite-web's `TagDB.find_series`. A source without a tag index has no tagged
    /// series.
    fn find_tagged(&self, exprs: &[String]) -> Result<Vec<String>, SourceError> {
        let _ = exprs;
        Ok(Vec::new())
    }

    /// [`fetch`](Self::fetch) without collecting: each answer is handed to `each`
    /// with the index of its path in `paths`, in any order, and may be dropped when
    /// `each` returns, so that a source reading a million series allocates nothing per
    /// series and the caller keeps the values in whatever form it likes. A path may
    /// be answered more than once (several finders) or not at all. The default
    /// collects [`fetch`](Self::fetch); sources that can stream override it.
    fn fetch_each(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(), SourceError> {
        let owned: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        let mut index: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::with_capacity(paths.len());
        for (i, p) in paths.iter().enumerate() {
            index.entry(p).or_insert(i);
        }
        for f in self.fetch(&owned, from, until, now)? {
            if let Some(&i) = index.get(f.path.as_str()) {
                each(
                    i,
                    FetchedRef {
                        start: f.start,
                        end: f.end,
                        step: f.step,
                        values: &f.values,
                    },
                );
            }
        }
        Ok(())
    }

    /// For `events(tags…)`: the events (graphite-web's events: a time and tags) whose
    /// time is in `[from, until]`, in any order. The default: no events.
    fn events(&self, from: i64, until: i64) -> Vec<SourceEvent> {
        let _ = (from, until);
        Vec::new()
    }

    /// For `anomalyScore`: when the server's anomaly detector watching `name` gave its
    /// first score (epoch seconds), or `None` when no detector watches it. The score
    /// series stores no point for a score of 0, so from this time on a point of the
    /// series without a stored score scored 0. The default: nothing is watched.
    fn anomaly_scored_from(&self, name: &str) -> Option<i64> {
        let _ = name;
        None
    }

    /// [`fetch_each`](Self::fetch_each) for a caller that holds nothing of these
    /// answers once it has folded them (a streaming aggregate reading a glob a chunk
    /// at a time): a source with a per-request budget counts them only while the call
    /// runs, so that the budget bounds what a request holds at once rather than what
    /// it reads in all. The default is `fetch_each`.
    fn fetch_each_transient(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(), SourceError> {
        self.fetch_each(paths, from, until, now, each)
    }
}
