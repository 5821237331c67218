//! Fetching path expressions: graphite-web's `prefetchData`, `fetchData` and
//! `_merge_results`.
//!
//! Before evaluating, every path expression of the request is found (leaves only) and
//! all leaves are fetched in one `SeriesSource::fetch` call. Each pattern's series are
//! built with the pattern as their `path_expression` and the request's xFilesFactor,
//! de-duplicated by name (of two answers for one name graphite-web keeps the one with
//! fewer `None`s) and sorted by name. Results are kept per (pattern, from, until, now)
//! for as many uses as the targets have; a function that evaluates an argument over
//! another interval fetches it then.
//!
//! One deliberate difference: graphite-web prefetches only the paths in positional
//! arguments, so a path given as a keyword argument (`asPercent(a.*, total=b.c)`)
//! evaluates to no series at all there. sumi fetches it.

use std::collections::{HashMap, HashSet};

use sumi_model::glob::PathPattern;

use crate::error::QueryError;
use crate::grammar::{Arg, Expr};
use crate::series::TimeSeries;
use crate::source::FetchedSeries;

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
            collect(e, None, ctx, &mut uses);
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
    fn fetch_patterns(
        &self,
        ctx: &RequestContext,
        patterns: &[String],
    ) -> Result<Vec<Vec<TimeSeries>>, QueryError> {
        let mut leaves_of: Vec<Vec<String>> = Vec::with_capacity(patterns.len());
        let mut all: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for pattern in patterns {
            let nodes = self.source.find(&PathPattern::parse(pattern))?;
            let mut leaves: Vec<String> = Vec::new();
            let mut mine: HashSet<&str> = HashSet::new();
            for node in nodes.iter().filter(|n| n.is_leaf) {
                if mine.insert(node.path.as_str()) {
                    if seen.insert(node.path.clone()) {
                        all.push(node.path.clone());
                    }
                    leaves.push(node.path.clone());
                }
            }
            leaves_of.push(leaves);
        }
        if all.is_empty() {
            return Ok(vec![Vec::new(); patterns.len()]);
        }
        let fetched = self.source.fetch(&all, ctx.from, ctx.until, ctx.now)?;
        // each answer is moved into the last pattern that uses it, copied for the others
        let mut by_path: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, f) in fetched.iter().enumerate() {
            by_path.entry(f.path.as_str()).or_default().push(i);
        }
        let mut uses = vec![0usize; fetched.len()];
        let answer_lists: Vec<Vec<usize>> = leaves_of
            .iter()
            .map(|leaves| {
                let list: Vec<usize> = leaves
                    .iter()
                    .filter_map(|l| by_path.get(l.as_str()))
                    .flatten()
                    .copied()
                    .collect();
                for &i in &list {
                    uses[i] += 1;
                }
                list
            })
            .collect();
        drop(by_path);
        let mut slots: Vec<Option<FetchedSeries>> = fetched.into_iter().map(Some).collect();
        Ok(patterns
            .iter()
            .zip(answer_lists)
            .map(|(pattern, list)| {
                let answers = list.into_iter().filter_map(|i| {
                    uses[i] -= 1;
                    if uses[i] == 0 {
                        slots[i].take()
                    } else {
                        slots[i].clone()
                    }
                });
                merge(pattern, answers.collect(), ctx.x_files_factor)
            })
            .collect())
    }
}

/// `_merge_results`: series named by path, de-duplicated, sorted by name.
fn merge(pattern: &str, answers: Vec<FetchedSeries>, xff: f64) -> Vec<TimeSeries> {
    let mut out: Vec<TimeSeries> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut best_nones: HashMap<String, usize> = HashMap::new();
    for f in answers {
        let mut series = TimeSeries::new(f.path, f.start, f.end, f.step, f.values);
        series.path_expression = pattern.to_string();
        series.x_files_factor = xff;
        match index.get(&series.name) {
            Some(&i) => {
                let candidate = nones(&series.values);
                let known = *best_nones
                    .entry(series.name.clone())
                    .or_insert_with(|| nones(&out[i].values));
                if known > candidate && !series.values.is_empty() {
                    best_nones.insert(series.name.clone(), candidate);
                    out[i] = series;
                }
            }
            None => {
                index.insert(series.name.clone(), out.len());
                out.push(series);
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn nones(values: &[Option<f64>]) -> usize {
    values.iter().filter(|v| v.is_none()).count()
}

/// The patterns an expression will fetch, with how often.
fn collect(
    expr: &Expr,
    replacements: Option<&Replacements>,
    ctx: &RequestContext,
    uses: &mut Vec<(String, usize)>,
) {
    match expr {
        Expr::Template(t) => {
            let own = Replacements::for_template(t, ctx);
            collect(&t.inner, Some(&own), ctx, uses);
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
            let kwargs = call.kwargs.iter().map(|(_, a)| a);
            for arg in call.args.iter().chain(kwargs) {
                if let Arg::Expr(e) = arg {
                    collect(e, replacements, ctx, uses);
                }
            }
        }
    }
}
