//! Fetching path expressions: graphite-web's `prefetchData`, `fetchData` and
//! `_merge_results`.
//!
//! Before evaluating, every path expression of the request is found (leaves only) and
//! all leaves are fetched in one `SeriesSource::fetch_each` call into one compact
//! [`FetchedSet`] (each distinct leaf once: the patterns' sorted leaf lists are merged,
//! no hashing of a million names). Each pattern's series are built from it with the
//! pattern as their `path_expression` and the request's xFilesFactor, de-duplicated by
//! name (of two answers for one name graphite-web keeps the one with fewer `None`s) and
//! sorted by name. Results are kept per (pattern, from, until, now) for as many uses as
//! the targets have; a function that evaluates an argument over another interval
//! fetches it then. Targets that are nothing but a path keep their series in the set
//! until a renderer reads them (`targets.rs`).
//!
//! One deliberate difference: graphite-web prefetches only the paths in positional
//! arguments, so a path given as a keyword argument (`asPercent(a.*, total=b.c)`)
//! evaluates to no series at all there. sumi fetches it.

use sumi_model::glob::PathPattern;

use crate::error::QueryError;
use crate::functions::Registry;
use crate::grammar::{Arg, Expr};
use crate::series::fetched::replaces;
use crate::series::{FetchedSet, TimeSeries};
use crate::source::{FetchedRef, SourceError};

use super::stream::FIRST_CHUNK;
use super::{substitute, Replacements, RequestContext, Session, Substituted};

/// (pattern, from, until, now)
pub(super) type Key = (String, i64, i64, i64);

pub(super) struct Entry {
    series: Vec<TimeSeries>,
    /// Evaluations still expected to ask for it; the last one takes the series.
    uses: usize,
}

fn key(ctx: &RequestContext, pattern: &str) -> Key {
    (pattern.to_string(), ctx.from, ctx.until, ctx.now)
}

impl Session<'_> {
    /// The series of a path pattern over the context's interval, sorted by name.
    pub fn fetch(
        &mut self,
        ctx: &RequestContext,
        pattern: &str,
    ) -> Result<Vec<TimeSeries>, QueryError> {
        let mut series = self.fetch_unadjusted(ctx, pattern)?;
        // graphite-web builds the series when a path is evaluated, with the
        // xFilesFactor in force then (a `setXFilesFactor()` evaluated earlier changes it)
        if let Some(xff) = self.x_files_factor {
            for s in &mut series {
                s.x_files_factor = xff;
            }
        }
        Ok(series)
    }

    fn fetch_unadjusted(
        &mut self,
        ctx: &RequestContext,
        pattern: &str,
    ) -> Result<Vec<TimeSeries>, QueryError> {
        let k = key(ctx, pattern);
        if let Some(entry) = self.prefetched.get_mut(&k) {
            entry.uses = entry.uses.saturating_sub(1);
            if entry.uses > 0 {
                return Ok(entry.series.clone());
            }
            return Ok(self
                .prefetched
                .remove(&k)
                .map(|e| e.series)
                .unwrap_or_default());
        }
        let mut found = self.fetch_patterns(ctx, &[pattern.to_string()])?;
        Ok(found.pop().unwrap_or_default())
    }

    /// Finds and fetches, in one batch, every path the expressions will evaluate.
    pub(super) fn prefetch<'e>(
        &mut self,
        ctx: &RequestContext,
        exprs: impl Iterator<Item = &'e Expr>,
    ) -> Result<(), QueryError> {
        let mut uses: Vec<(String, usize)> = Vec::new();
        for e in exprs {
            collect(e, None, ctx, self.functions, &mut uses);
        }
        if uses.is_empty() {
            return Ok(());
        }
        let patterns: Vec<String> = uses.iter().map(|(p, _)| p.clone()).collect();
        let results = self.fetch_patterns(ctx, &patterns)?;
        for ((pattern, n), series) in uses.into_iter().zip(results) {
            self.prefetched
                .insert(key(ctx, &pattern), Entry { series, uses: n });
        }
        Ok(())
    }

    /// Each pattern's series, in the order of `patterns`.
    ///
    /// Function arguments become [`TimeSeries`] anyway, so each answer is copied
    /// straight into the values its series will own, not through the compact
    /// [`FetchedSet`] that plain-path targets use: `sumSeries` over 1,000 series x
    /// 8,640 points spent a fifth of its time packing and unpacking that set.
    fn fetch_patterns(
        &self,
        ctx: &RequestContext,
        patterns: &[String],
    ) -> Result<Vec<Vec<TimeSeries>>, QueryError> {
        let (mut names, lists) = self.leaves(patterns)?;
        let mut answers: Vec<Option<Answer>> = Vec::new();
        answers.resize_with(names.len(), || None);
        if !names.is_empty() {
            let paths: Vec<&str> = names.iter().map(String::as_str).collect();
            self.source
                .fetch_each(&paths, ctx.from, ctx.until, ctx.now, &mut |i, f| {
                    if let Some(slot) = answers.get_mut(i) {
                        Answer::keep_more_complete(slot, f);
                    }
                })?;
        }
        // the last pattern reading a path takes its name and values, the others copy
        let mut uses = vec![0u32; names.len()];
        for &i in lists.iter().flatten() {
            if let Some(u) = uses.get_mut(i as usize) {
                *u += 1;
            }
        }
        Ok(patterns
            .iter()
            .zip(&lists)
            .map(|(pattern, list)| {
                list.iter()
                    .filter_map(|&i| {
                        let i = i as usize;
                        let last = uses.get_mut(i).is_none_or(|u| {
                            *u = u.saturating_sub(1);
                            *u == 0
                        });
                        let slot = answers.get_mut(i)?;
                        let name = names.get_mut(i)?;
                        let (name, a) = if last {
                            (std::mem::take(name), slot.take()?)
                        } else {
                            (name.clone(), slot.clone()?)
                        };
                        let mut s = TimeSeries::new(name, a.start, a.end, a.step, a.values);
                        s.path_expression = pattern.clone();
                        s.x_files_factor = ctx.x_files_factor;
                        Some(s)
                    })
                    .collect()
            })
            .collect())
    }

    /// Finds the leaves of every pattern and fetches them all in one
    /// [`SeriesSource::fetch_each`](crate::source::SeriesSource::fetch_each) call,
    /// each distinct path once, into one compact set.
    pub(super) fn fetch_batch(
        &self,
        ctx: &RequestContext,
        patterns: &[String],
    ) -> Result<Batch, QueryError> {
        let (names, lists) = self.leaves(patterns)?;
        let mut set = FetchedSet::new(names);
        if !set.is_empty() {
            set.fill(|paths, each| {
                self.source
                    .fetch_each(paths, ctx.from, ctx.until, ctx.now, each)
            })?;
        }
        Ok(Batch { set, lists })
    }

    /// The leaves of every pattern, each distinct path once (sorted), and per pattern
    /// its leaves as indexes into them.
    pub(super) fn leaves(
        &self,
        patterns: &[String],
    ) -> Result<(Vec<String>, Vec<Vec<u32>>), QueryError> {
        let mut leaves_of: Vec<Vec<String>> = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            PathPattern::check(pattern).map_err(|e| SourceError::Invalid(e.to_string()))?;
            let nodes = self.source.find(&PathPattern::parse(pattern))?;
            // moved out of the nodes, not copied; sorted and unique as find promises
            let mut leaves: Vec<String> = nodes
                .into_iter()
                .filter(|n| n.is_leaf)
                .map(|n| n.path)
                .collect();
            if !leaves.is_sorted() {
                leaves.sort_unstable();
            }
            leaves.dedup();
            leaves_of.push(leaves);
        }
        Ok(union_sorted(leaves_of))
    }
}

impl Session<'_> {
    /// The source's events in `[from, until]` ([`crate::source::SeriesSource::events`]).
    pub(crate) fn events(&self, from: i64, until: i64) -> Vec<crate::source::SourceEvent> {
        self.source.events(from, until)
    }

    /// When the anomaly detector watching `name` gave its first score, or `None` when
    /// none watches it ([`crate::source::SeriesSource::anomaly_scored_from`]).
    pub(crate) fn anomaly_scored_from(&self, name: &str) -> Option<i64> {
        self.source.anomaly_scored_from(name)
    }

    /// One stored series by its exact name (no glob expansion, tagged names too) over
    /// the context's interval, or `None` when the source has nothing for it: for
    /// functions that read a companion series of their input (`anomalyScore`).
    pub(crate) fn fetch_exact(
        &self,
        ctx: &RequestContext,
        path: &str,
    ) -> Result<Option<TimeSeries>, QueryError> {
        let mut answer: Option<Answer> = None;
        self.source
            .fetch_each(&[path], ctx.from, ctx.until, ctx.now, &mut |_, f| {
                Answer::keep_more_complete(&mut answer, f);
            })?;
        let xff = self.x_files_factor(ctx);
        Ok(answer.map(|a| {
            let mut s = TimeSeries::new(path.to_string(), a.start, a.end, a.step, a.values);
            s.x_files_factor = xff;
            s
        }))
    }
}

impl Session<'_> {
    /// The series of `names` (leaves of `pattern`, sorted), built as
    /// [`Session::fetch`] builds a pattern's series: for streaming evaluation, which
    /// reads a pattern's leaves a chunk at a time.
    pub(super) fn fetch_leaves(
        &self,
        ctx: &RequestContext,
        pattern: &str,
        names: &[String],
    ) -> Result<Vec<TimeSeries>, QueryError> {
        let mut answers: Vec<Option<Answer>> = Vec::new();
        answers.resize_with(names.len(), || None);
        let paths: Vec<&str> = names.iter().map(String::as_str).collect();
        // the caller folds these series and drops them before it reads the next chunk
        self.fetch_fitting(ctx, &paths, 0, &mut |i, f| {
            if let Some(slot) = answers.get_mut(i) {
                Answer::keep_more_complete(slot, f);
            }
        })?;
        let xff = self.x_files_factor(ctx);
        Ok(names
            .iter()
            .zip(answers)
            .filter_map(|(name, a)| {
                let a = a?;
                let mut s = TimeSeries::with_path_expression(
                    name.clone(),
                    pattern.to_string(),
                    a.start,
                    a.end,
                    a.step,
                    a.values,
                );
                s.x_files_factor = xff;
                Some(s)
            })
            .collect())
    }
}

/// One path's answer, as its series will own it.
#[derive(Clone)]
struct Answer {
    start: i64,
    end: i64,
    step: i64,
    values: Vec<Option<f64>>,
}

impl Answer {
    /// Records `f` in `slot`, unless an earlier answer is more complete
    /// ([`replaces`]).
    fn keep_more_complete(slot: &mut Option<Answer>, f: FetchedRef<'_>) {
        if let Some(old) = slot {
            let missing = old.values.iter().filter(|x| x.is_none()).count();
            if !replaces(missing, f.values) {
                return;
            }
        }
        *slot = Some(Answer {
            start: f.start,
            end: f.end,
            step: f.step,
            values: f.values.to_vec(),
        });
    }
}

/// Patterns' leaves fetched together (see [`Session::fetch_batch`]).
pub(super) struct Batch {
    pub(super) set: FetchedSet,
    /// Per pattern, its leaves as indexes into `set`, sorted by name.
    pub(super) lists: Vec<Vec<u32>>,
}

/// The union of sorted lists of names, each name once, and each list as indexes into
/// the union. Names are moved, not copied: a name in several lists is kept from the
/// first. Merging sorted lists needs no hashing, which matters at a million names.
fn union_sorted(mut lists: Vec<Vec<String>>) -> (Vec<String>, Vec<Vec<u32>>) {
    if lists.len() == 1 {
        let names = lists.pop().unwrap_or_default();
        let n = u32::try_from(names.len()).unwrap_or(u32::MAX);
        return (names, vec![(0..n).collect()]);
    }
    let total = lists.iter().map(Vec::len).sum();
    let mut names: Vec<String> = Vec::with_capacity(total);
    let mut out: Vec<Vec<u32>> = lists.iter().map(|l| Vec::with_capacity(l.len())).collect();
    let mut pos = vec![0usize; lists.len()];
    loop {
        // the list whose head is the smallest name
        let mut min: Option<(usize, &str)> = None;
        for (j, list) in lists.iter().enumerate() {
            if let Some(name) = pos.get(j).and_then(|&p| list.get(p)) {
                if min.is_none_or(|(_, m)| name.as_str() < m) {
                    min = Some((j, name.as_str()));
                }
            }
        }
        let Some((first, _)) = min else { break };
        let Ok(id) = u32::try_from(names.len()) else {
            break;
        };
        let name = lists
            .get_mut(first)
            .zip(pos.get(first))
            .and_then(|(l, &p)| l.get_mut(p))
            .map(std::mem::take)
            .unwrap_or_default();
        for (j, list) in lists.iter().enumerate() {
            let Some(p) = pos.get_mut(j) else { continue };
            if j == first || list.get(*p).is_some_and(|h| *h == name) {
                *p += 1;
                if let Some(o) = out.get_mut(j) {
                    o.push(id);
                }
            }
        }
        names.push(name);
    }
    (names, out)
}

/// The patterns an expression will fetch, with how often.
fn collect(
    expr: &Expr,
    replacements: Option<&Replacements>,
    ctx: &RequestContext,
    functions: &Registry,
    uses: &mut Vec<(String, usize)>,
) {
    match expr {
        Expr::Template(t) => {
            let own = Replacements::for_template(t, ctx);
            collect(&t.inner, Some(&own), ctx, functions, uses);
        }
        Expr::Path(path) => {
            if let Ok(Substituted::Pattern(p)) = substitute(path, replacements) {
                match uses.iter_mut().find(|(q, _)| *q == p) {
                    Some(slot) => slot.1 += 1,
                    None => uses.push((p, 1)),
                }
            }
        }
        Expr::Call(call) => {
            if call.name == "seriesByTag" {
                return;
            }
            // an aggregate evaluated as a stream reads its glob itself, a chunk at a time
            if replacements.is_none() && super::stream::plan(call, functions).is_some() {
                return;
            }
            let kwargs = call.kwargs.iter().map(|(_, a)| a);
            for arg in call.args.iter().chain(kwargs) {
                if let Arg::Expr(e) = arg {
                    collect(e, replacements, ctx, functions, uses);
                }
            }
        }
    }
}

impl Session<'_> {
    /// A transient fetch of `paths` (indexes offset by `base`), cut in halves while the
    /// source says a piece would hold more than the request's budget: a chunk grows past
    /// [`FIRST_CHUNK`] series by its values, not by the budget, and only what one piece
    /// holds at a time counts. A piece of `FIRST_CHUNK` series or fewer is not cut: a
    /// budget that cannot hold the first chunk refuses the aggregate, as it always did.
    fn fetch_fitting(
        &self,
        ctx: &RequestContext,
        paths: &[&str],
        base: usize,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(), SourceError> {
        let result =
            self.source
                .fetch_each_transient(paths, ctx.from, ctx.until, ctx.now, &mut |i, f| {
                    each(base + i, f)
                });
        match result {
            Err(SourceError::TooLarge(_)) if paths.len() > FIRST_CHUNK => {
                let (first, second) = paths.split_at(paths.len() / 2);
                self.fetch_fitting(ctx, first, base, each)?;
                self.fetch_fitting(ctx, second, base + first.len(), each)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::union_sorted;

    fn lists(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter()
            .map(|l| l.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn union_of_sorted_lists() {
        let (names, idx) = union_sorted(lists(&[
            &["a.b", "a.c", "b.a"],
            &[],
            &["a.a", "a.c", "c"],
            &["a.c"],
        ]));
        assert_eq!(names, ["a.a", "a.b", "a.c", "b.a", "c"]);
        assert_eq!(idx, vec![vec![1, 2, 3], vec![], vec![0, 2, 4], vec![2]]);
        let (names, idx) = union_sorted(lists(&[&["x", "y"]]));
        assert_eq!(names, ["x", "y"]);
        assert_eq!(idx, vec![vec![0, 1]]);
        let (names, idx) = union_sorted(Vec::new());
        assert!(names.is_empty() && idx.is_empty());
    }
}
