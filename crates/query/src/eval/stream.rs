//! Aggregates evaluated as a stream: `sumSeries(isNonNull(host*.*.*))` over a million
//! series without holding a million series.
//!
//! An aggregating call (`sumSeries`, `averageSeries`, `minSeries`, `maxSeries`,
//! `diffSeries`, `multiplySeries`, `rangeOfSeries`, `stddevSeries`, `countSeries`,
//! `aggregate(…, 'func'[, xFilesFactor])` with literal arguments) whose arguments are
//! path patterns (or `seriesByTag`), possibly under per-series functions with literal
//! arguments (`isNonNull`, `absolute`, `scale`, `offset`, `transformNull`), is not
//! prefetched: the leaves of each argument are found, then fetched a chunk at a time in
//! name order, argument after argument (graphite-web's `sumSeries(a.*, b.*)` aggregates
//! the lists joined in that order), each chunk run through the per-series functions and
//! folded into the aggregate's accumulators ([`Fold`]). What is held is the output, one
//! chunk of input series and the leaves, whatever the number of series: as the
//! source's 4-byte handles when it has them (the store's series ids), each chunk's
//! paths asked for when it is read, else as paths.
//!
//! graphite-web reads every series at the least common multiple of their steps
//! (`normalize`), which is known only once every series has been seen: the first pass
//! reads at the first series' step and, should a later series' step not divide it,
//! finishes learning the steps and reads again at their multiple. Rows meet their
//! values in the list's order, so the answer is bit for bit the one the materialising
//! path gives (and graphite-web's).
//!
//! The groupings fold one aggregate per group, in order of first appearance: the
//! `…WithWildcards` functions (literal positions) and `groupByNode(s)` (literal nodes,
//! a callback that is one of the aggregates above or an aggregation name), each group
//! at the multiple of its own steps.
//!
//! `stddev` reads the list twice: the sums first, then the squared deviations from
//! each row's average. `median` (which needs whole rows), an argument that is not a
//! path under per-series calls, keyword arguments and `template()` substitutions take
//! the ordinary path.

use std::collections::HashMap;

use crate::error::QueryError;
use crate::functions::{agg_func, bind, call_function, input_error, lcm, AggFunc, Fold, Registry};
use crate::grammar::{Arg, Call, Expr, Literal};
use crate::series::Tags;
use crate::source::SourceError;
use sumi_model::glob::PathPattern;

use super::{substitute, RequestContext, Session, Substituted, Value};

/// Series fetched and folded at a time, at first: 256 series of a day at 30 s take
/// 2.7 MB of values (16 bytes a slot), whatever the glob matches.
pub(super) const FIRST_CHUNK: usize = 256;
/// Then as many series as make about this many values (4 MiB), within the bounds
/// below: short series in larger chunks, so that a million of them are not read in
/// 4,000 fetches, each with its own plan and snapshot of the store.
const CHUNK_VALUES: usize = 1 << 18;
const MIN_CHUNK: usize = 16;
const MAX_CHUNK: usize = 4096;

/// Walks the lists' leaves a chunk at a time, each chunk sized after what the one
/// before held.
struct Chunks {
    input: usize,
    at: usize,
    len: usize,
}

impl Chunks {
    fn new() -> Chunks {
        Chunks {
            input: 0,
            at: 0,
            len: FIRST_CHUNK,
        }
    }

    /// The next chunk: its list's index and leaves.
    fn next<'n>(&mut self, lists: &'n [Leaves]) -> Option<(usize, Chunk<'n>)> {
        loop {
            let list = lists.get(self.input)?;
            let end = (self.at + self.len).min(list.len());
            let chunk = match list {
                Leaves::Paths(p) => p.get(self.at..end).map(Chunk::Paths),
                Leaves::Ids(i) => i.get(self.at..end).map(Chunk::Ids),
            };
            match chunk.filter(|c| !c.is_empty()) {
                Some(chunk) => {
                    self.at = end;
                    return Some((self.input, chunk));
                }
                None => {
                    self.input += 1;
                    self.at = 0;
                }
            }
        }
    }

    /// Sizes the next chunks after one of `series` series holding `values` values.
    fn observe(&mut self, series: &[crate::series::TimeSeries]) {
        let values: usize = series.iter().map(|s| s.values.len()).sum();
        if let Some(per) = values.checked_div(series.len()) {
            self.len = (CHUNK_VALUES / per.max(1)).clamp(MIN_CHUNK, MAX_CHUNK);
        }
    }
}

/// A list's leaves, sorted by path: their paths, or the source's handles of them
/// ([`crate::source::SeriesSource::find_leaf_ids`]), 4 bytes a leaf, whose paths are
/// asked for a chunk at a time so that a million leaves are not held as paths.
enum Leaves {
    Paths(Vec<String>),
    Ids(Vec<u32>),
}

impl Leaves {
    fn len(&self) -> usize {
        match self {
            Leaves::Paths(p) => p.len(),
            Leaves::Ids(i) => i.len(),
        }
    }
}

/// Some leaves of a list.
#[derive(Clone, Copy)]
enum Chunk<'n> {
    Paths(&'n [String]),
    Ids(&'n [u32]),
}

impl Chunk<'_> {
    fn is_empty(&self) -> bool {
        match self {
            Chunk::Paths(p) => p.is_empty(),
            Chunk::Ids(i) => i.is_empty(),
        }
    }
}

/// How many times the fold may start again at a new step (twice is enough unless
/// series of new steps appear while the query runs).
const MAX_PASSES: usize = 4;

/// Per-series functions that may sit between the aggregate and the pattern: each
/// output point depends on its own input point only, and each series on itself.
const PER_SERIES: &[&str] = &["isNonNull", "absolute", "scale", "offset", "transformNull"];

/// What a streamable call does.
pub(super) struct Plan<'c> {
    /// The aggregation's name after `Series` was stripped (`sum`, `rangeOf`, `count`).
    func_name: &'c str,
    /// `None` for `countSeries`.
    func: Option<AggFunc>,
    /// `multiplySeries` answers a single series as it is.
    single_as_is: bool,
    /// The lists, in the order of the arguments (several for `sumSeries(a.*, b.*)`).
    inputs: Vec<Input<'c>>,
    group: Group,
}

/// One list an aggregate reads: a path pattern or `seriesByTag`, under per-series
/// calls.
struct Input<'c> {
    pattern: String,
    /// `seriesByTag(…)`'s expressions, when the series come from it (`pattern` is then
    /// the call's text, their path expression).
    tagged: Option<Vec<String>>,
    /// The per-series calls, outermost first.
    chain: Vec<&'c Call>,
}

/// How the series are grouped, each group aggregated into one series named after its
/// key, groups in order of first appearance.
enum Group {
    /// One group, named after the aggregate.
    One,
    /// `…WithWildcards`: the name without the nodes at these positions.
    Wildcards(Vec<i64>),
    /// `groupByNode(s)`: these nodes (or tags) of the name.
    Nodes(Vec<Value>),
    /// `groupByTags`: the values of these tags (`tag=value`, sorted), after the `name`
    /// tag when it is one of them; otherwise the name is added at the end (the list's
    /// common `name`, or the callback's name).
    Tags {
        tags: Vec<String>,
        by_name: bool,
        callback: String,
    },
}

impl Group {
    fn key(&self, s: &crate::series::TimeSeries) -> String {
        match self {
            Group::One => String::new(),
            Group::Wildcards(positions) => {
                let nodes: Vec<&str> = s
                    .name
                    .split('.')
                    .enumerate()
                    .filter(|(i, _)| !positions.contains(&(*i as i64)))
                    .map(|(_, node)| node)
                    .collect();
                nodes.join(".")
            }
            Group::Nodes(nodes) => crate::functions::agg_key(s, nodes),
            Group::Tags { tags, by_name, .. } => {
                let mut parts: Vec<String> = tags
                    .iter()
                    .filter(|t| !by_name || t.as_str() != "name")
                    .map(|t| format!("{t}={}", s.tags.get(t).unwrap_or("")))
                    .collect();
                parts.sort();
                if *by_name {
                    parts.insert(0, s.tags.get("name").unwrap_or("").to_string());
                }
                parts.join(";")
            }
        }
    }
}

/// An aggregating series function a stream can fold: its aggregation's name, the
/// function (`None`: `countSeries`) and whether one series is answered as it is.
fn series_function(name: &str) -> Option<(&'static str, Option<AggFunc>, bool)> {
    Some(match name {
        // `sum` and `avg` are graphite-web's short names of the first two
        "sumSeries" | "sum" => ("sum", Some(AggFunc::Sum), false),
        "averageSeries" | "avg" => ("average", Some(AggFunc::Average), false),
        "minSeries" => ("min", Some(AggFunc::Min), false),
        "maxSeries" => ("max", Some(AggFunc::Max), false),
        "diffSeries" => ("diff", Some(AggFunc::Diff), false),
        "multiplySeries" => ("multiply", Some(AggFunc::Multiply), true),
        "rangeOfSeries" => ("rangeOf", Some(AggFunc::Range), false),
        "stddevSeries" => ("stddev", Some(AggFunc::Stddev), false),
        "countSeries" => ("count", None, false),
        _ => return None,
    })
}

/// A `groupByNode(s)` callback: a registered function first (as graphite-web looks it
/// up), else an aggregation.
fn callback<'c>(name: &'c str, functions: &Registry) -> Option<(&'c str, Option<AggFunc>, bool)> {
    if functions.get(name).is_some() {
        return series_function(name);
    }
    let (stripped, func) = agg_func(name)?;
    static_name(func)?;
    Some((stripped, Some(func), false))
}

/// A literal integer (a node position).
fn int_literal(arg: &Arg) -> Option<i64> {
    match arg {
        Arg::Literal(Literal::Int(i)) => Some(*i),
        _ => None,
    }
}

/// A literal node: an integer or a tag name.
fn node_literal(arg: &Arg) -> Option<Value> {
    match arg {
        Arg::Literal(Literal::Int(i)) => Some(Value::Int(*i)),
        Arg::Literal(Literal::Str(s)) => Some(Value::Str(s.clone())),
        _ => None,
    }
}

/// Whether `call` can be evaluated as a stream, and how.
pub(super) fn plan<'c>(call: &'c Call, functions: &Registry) -> Option<Plan<'c>> {
    if !call.kwargs.is_empty() || functions.get(&call.name).is_none() {
        return None;
    }
    let mut group = Group::One;
    let (func_name, func, single_as_is, args) = match call.name.as_str() {
        "sumSeriesWithWildcards" | "averageSeriesWithWildcards" | "multiplySeriesWithWildcards" => {
            let (series, positions) = call.args.split_first()?;
            let positions: Option<Vec<i64>> = positions.iter().map(int_literal).collect();
            group = Group::Wildcards(positions?);
            let (name, func) = match call.name.as_str() {
                "sumSeriesWithWildcards" => ("sum", AggFunc::Sum),
                "averageSeriesWithWildcards" => ("average", AggFunc::Average),
                _ => ("multiply", AggFunc::Multiply),
            };
            (name, Some(func), false, std::slice::from_ref(series))
        }
        "aggregateWithWildcards" => {
            let [series, Arg::Literal(Literal::Str(raw)), positions @ ..] = call.args.as_slice()
            else {
                return None;
            };
            let positions: Option<Vec<i64>> = positions.iter().map(int_literal).collect();
            group = Group::Wildcards(positions?);
            let (name, func) = agg_func(raw)?;
            static_name(func)?;
            (name, Some(func), false, std::slice::from_ref(series))
        }
        "groupByNode" => {
            let (series, node, cb) = match call.args.as_slice() {
                [series, node] => (series, node, "average"),
                [series, node, Arg::Literal(Literal::Str(cb))] => (series, node, cb.as_str()),
                _ => return None,
            };
            group = Group::Nodes(vec![node_literal(node)?]);
            let (name, func, single) = callback(cb, functions)?;
            (name, func, single, std::slice::from_ref(series))
        }
        "groupByTags" => {
            let [series, Arg::Literal(Literal::Str(cb)), tags @ ..] = call.args.as_slice() else {
                return None;
            };
            let tags: Option<Vec<String>> = tags
                .iter()
                .map(|t| match t {
                    Arg::Literal(Literal::Str(t)) => Some(t.clone()),
                    _ => None,
                })
                .collect();
            let tags = tags.filter(|t| !t.is_empty())?;
            let by_name = tags.iter().any(|t| t == "name");
            group = Group::Tags {
                tags,
                by_name,
                callback: cb.clone(),
            };
            let (name, func, single) = callback(cb, functions)?;
            (name, func, single, std::slice::from_ref(series))
        }
        "groupByNodes" => {
            let [series, Arg::Literal(Literal::Str(cb)), nodes @ ..] = call.args.as_slice() else {
                return None;
            };
            let nodes: Option<Vec<Value>> = nodes.iter().map(node_literal).collect();
            group = Group::Nodes(nodes?);
            let (name, func, single) = callback(cb, functions)?;
            (name, func, single, std::slice::from_ref(series))
        }
        "aggregate" => {
            let [series, Arg::Literal(Literal::Str(raw)), rest @ ..] = call.args.as_slice() else {
                return None;
            };
            if rest.len() > 1 || !rest.iter().all(|a| matches!(a, Arg::Literal(_))) {
                return None;
            }
            let (name, func) = agg_func(raw)?;
            static_name(func)?;
            (name, Some(func), false, std::slice::from_ref(series))
        }
        name => {
            let (name, func, single) = series_function(name)?;
            (name, func, single, call.args.as_slice())
        }
    };
    // graphite-web's `multiplySeries` answers a single series as it is only when it
    // was given one list
    let single_as_is = single_as_is && args.len() == 1;
    let inputs: Option<Vec<Input<'c>>> = args.iter().map(|a| input(a, functions)).collect();
    let inputs = inputs.filter(|i| !i.is_empty())?;
    Some(Plan {
        func_name,
        func,
        single_as_is,
        inputs,
        group,
    })
}

/// The list an argument streams: a path or `seriesByTag` under per-series calls.
fn input<'c>(series: &'c Arg, functions: &Registry) -> Option<Input<'c>> {
    let mut chain = Vec::new();
    let mut arg = series;
    loop {
        match arg {
            Arg::Expr(Expr::Path(path)) => {
                let Ok(Substituted::Pattern(pattern)) = substitute(path, None) else {
                    return None;
                };
                return Some(Input {
                    pattern,
                    tagged: None,
                    chain,
                });
            }
            Arg::Expr(Expr::Call(inner))
                if inner.name == "seriesByTag" && inner.kwargs.is_empty() =>
            {
                // as `series_by_tag`: the string arguments only
                let exprs = inner
                    .args
                    .iter()
                    .filter_map(|a| match a {
                        Arg::Literal(Literal::Str(s)) => Some(s.clone()),
                        _ => None,
                    })
                    .collect();
                return Some(Input {
                    pattern: inner.raw.as_str().to_string(),
                    tagged: Some(exprs),
                    chain,
                });
            }
            Arg::Expr(Expr::Call(inner))
                if PER_SERIES.contains(&inner.name.as_str())
                    && inner.kwargs.is_empty()
                    && functions.get(&inner.name).is_some() =>
            {
                let (first, rest) = inner.args.split_first()?;
                if !rest.iter().all(|a| matches!(a, Arg::Literal(_))) {
                    return None;
                }
                chain.push(inner);
                arg = first;
            }
            _ => return None,
        }
    }
}

/// The name an aggregate is called after (`sumSeries(…)`); `None` for the functions
/// a stream cannot fold.
fn static_name(func: AggFunc) -> Option<&'static str> {
    Some(match func {
        AggFunc::Sum => "sum",
        AggFunc::Average => "average",
        AggFunc::AvgZero => "avg_zero",
        AggFunc::Min => "min",
        AggFunc::Max => "max",
        AggFunc::Diff => "diff",
        AggFunc::Multiply => "multiply",
        AggFunc::Range => "rangeOf",
        AggFunc::Count => "count",
        AggFunc::Last => "last",
        AggFunc::Stddev => "stddev",
        AggFunc::Median => return None,
    })
}

fn literals(args: &[Arg]) -> impl Iterator<Item = Value> + '_ {
    args.iter().filter_map(|a| match a {
        Arg::Literal(lit) => Some(Value::from(lit)),
        Arg::Expr(_) => None,
    })
}

impl Session<'_> {
    /// Evaluates a call [`plan`] accepted.
    pub(super) fn stream_aggregate(
        &mut self,
        ctx: &RequestContext,
        call: &Call,
        plan: &Plan<'_>,
    ) -> Result<Value, QueryError> {
        // the call's own arguments are checked as they would be, with an empty list
        let Some(def) = self.functions.get(&call.name).copied() else {
            return Err(QueryError::UnknownFunction {
                name: call.name.clone(),
            });
        };
        let mut args = vec![Value::SeriesList(Vec::new())];
        args.extend(literals(call.args.get(1..).unwrap_or(&[])));
        let functions = self.functions;
        let bound = bind(&call.name, def.params, args, Vec::new(), &|n| {
            functions.is_aggregator(n)
        })?;
        let xff = match call.name.as_str() {
            "aggregate" => bound.float(2),
            _ => None,
        }
        .unwrap_or_else(|| self.x_files_factor(ctx));

        // each list's leaves, found once: every pass reads the same series
        let mut names: Vec<Leaves> = Vec::with_capacity(plan.inputs.len());
        for input in &plan.inputs {
            names.push(self.input_names(input)?);
        }
        // per group (in order of first appearance): the step to read it at, learnt
        // by the pass before (`None` at first: the step of its first series)
        let mut steps: HashMap<String, i64> = HashMap::new();
        for _ in 0..MAX_PASSES {
            let mut groups = Groups::default();
            let mut again = false;
            // groupByTags: the `name` tag of every series so far, if they agree
            let mut common_name: Option<Option<String>> = None;
            let mut chunks = Chunks::new();
            while let Some((i, chunk)) = chunks.next(&names) {
                let Some(input) = plan.inputs.get(i) else {
                    break;
                };
                let series = self.read_chunk(ctx, input, chunk)?;
                chunks.observe(&series);
                for s in series {
                    if matches!(plan.group, Group::Tags { by_name: false, .. }) {
                        let name = s.tags.get("name").unwrap_or("");
                        common_name = match common_name {
                            None => Some(Some(name.to_string())),
                            Some(Some(n)) if n == name => Some(Some(n)),
                            Some(_) => Some(None),
                        };
                    }
                    let g = groups.of(plan.group.key(&s));
                    g.all_steps = match g.all_steps {
                        None => Some(Some(s.step).filter(|&l| l > 0)),
                        Some(l) => Some(l.and_then(|l| lcm(l, s.step))),
                    };
                    if g.failed || g.all_steps == Some(None) {
                        // graphite-web's normalize fails: the group has no answer
                        g.failed = true;
                        g.fold = None;
                        continue;
                    }
                    if g.stale {
                        continue;
                    }
                    if g.fold.is_none() {
                        let step = steps.get(&g.key).copied().unwrap_or(s.step);
                        let Some(f) = Fold::new(plan.func_name, plan.func, step) else {
                            g.failed = true;
                            continue;
                        };
                        g.fold = Some(if plan.single_as_is {
                            f.single_as_is()
                        } else {
                            f
                        });
                    }
                    if let Some(f) = g.fold.as_mut() {
                        if !f.add(s) {
                            // a step that does not divide the one read at: this group
                            // is read again once all its steps are known
                            g.stale = true;
                            g.fold = None;
                            again = true;
                        }
                    }
                }
            }
            if again {
                for g in &groups.list {
                    if let Some(Some(step)) = g.all_steps {
                        steps.insert(g.key.clone(), step);
                    }
                }
                continue;
            }
            // every fold is told (no short circuit)
            let mut twice = false;
            for f in groups.list.iter_mut().filter_map(|g| g.fold.as_mut()) {
                twice |= f.second_pass();
            }
            if twice {
                self.second_pass(ctx, plan, &names, &mut groups)?;
            }
            // the leaf names are not needed for the output
            drop(std::mem::take(&mut names));
            let mut out = Vec::with_capacity(groups.list.len());
            for g in groups.list {
                let Some(mut result) = g.fold.and_then(|f| f.finish(xff)) else {
                    continue;
                };
                match &plan.group {
                    Group::One => {}
                    Group::Wildcards(_) | Group::Nodes(_) => result.name = g.key,
                    Group::Tags {
                        by_name, callback, ..
                    } => {
                        let key = if *by_name {
                            g.key
                        } else {
                            let head = match &common_name {
                                Some(Some(name)) => name.as_str(),
                                _ => callback.as_str(),
                            };
                            format!("{head};{}", g.key)
                        };
                        let tags = Tags::from_name(&key);
                        if key.contains(';') && tags.len() < 2 {
                            return Err(input_error(
                                &call.name,
                                format!(
                                    "the group name {key:?} is not a valid tagged name (does \
                                     every series have the tags?)"
                                ),
                            ));
                        }
                        result.tags = tags;
                        result.path_expression = key.clone();
                        result.name = key;
                    }
                }
                out.push(result);
            }
            return Ok(Value::SeriesList(out));
        }
        Err(QueryError::Function {
            function: call.name.clone(),
            message: "the steps of the series kept changing while they were read".to_string(),
            input: false,
        })
    }
}

impl Session<'_> {
    /// The leaves a list reads, sorted by name: as the source's handles when it has
    /// them.
    fn input_names(&self, input: &Input<'_>) -> Result<Leaves, QueryError> {
        if let Some(exprs) = &input.tagged {
            return Ok(Leaves::Paths(self.source.find_tagged(exprs)?));
        }
        PathPattern::check(&input.pattern).map_err(|e| SourceError::Invalid(e.to_string()))?;
        if let Some(ids) = self
            .source
            .find_leaf_ids(&PathPattern::parse(&input.pattern))?
        {
            return Ok(Leaves::Ids(ids));
        }
        Ok(Leaves::Paths(
            self.leaves(std::slice::from_ref(&input.pattern))?.0,
        ))
    }

    /// Some of a list's leaves, fetched and run through its per-series calls.
    fn read_chunk(
        &mut self,
        ctx: &RequestContext,
        input: &Input<'_>,
        chunk: Chunk<'_>,
    ) -> Result<Vec<crate::series::TimeSeries>, QueryError> {
        let paths;
        let names = match chunk {
            Chunk::Paths(p) => p,
            Chunk::Ids(ids) => {
                paths = self.source.leaf_paths(ids)?;
                paths.as_slice()
            }
        };
        let mut series = self.fetch_leaves(ctx, &input.pattern, names)?;
        for inner in input.chain.iter().rev() {
            let mut args = vec![Value::SeriesList(series)];
            args.extend(literals(inner.args.get(1..).unwrap_or(&[])));
            series = call_function(self, ctx, &inner.name, args)?;
        }
        Ok(series)
    }

    /// The list read again for folds that need it (`stddev`), in the same order.
    fn second_pass(
        &mut self,
        ctx: &RequestContext,
        plan: &Plan<'_>,
        names: &[Leaves],
        groups: &mut Groups,
    ) -> Result<(), QueryError> {
        let mut chunks = Chunks::new();
        while let Some((i, chunk)) = chunks.next(names) {
            let Some(input) = plan.inputs.get(i) else {
                break;
            };
            let series = self.read_chunk(ctx, input, chunk)?;
            chunks.observe(&series);
            for s in series {
                let key = plan.group.key(&s);
                if let Some(f) = groups
                    .index
                    .get(&key)
                    .and_then(|&i| groups.list.get_mut(i))
                    .and_then(|g| g.fold.as_mut())
                {
                    f.add_deviations(s);
                }
            }
        }
        Ok(())
    }
}

/// One output group while the stream is read.
struct GroupState {
    key: String,
    fold: Option<Fold>,
    /// The least common multiple of its steps so far (`Some(None)`: none exists).
    all_steps: Option<Option<i64>>,
    /// A series' step did not divide the one read at: read again.
    stale: bool,
    failed: bool,
}

#[derive(Default)]
struct Groups {
    list: Vec<GroupState>,
    index: HashMap<String, usize>,
}

impl Groups {
    fn of(&mut self, key: String) -> &mut GroupState {
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.list.len();
                self.index.insert(key.clone(), i);
                self.list.push(GroupState {
                    key,
                    fold: None,
                    all_steps: None,
                    stale: false,
                    failed: false,
                });
                i
            }
        };
        &mut self.list[i]
    }
}

#[cfg(test)]
mod tests {
    use crate::attime::TimeRange;
    use crate::eval::{Evaluator, RequestContext};
    use crate::functions::Registry;
    use crate::memory::MemorySource;
    use crate::series::TimeSeries;

    const NOW: i64 = 1_700_000_000;

    /// 700 series (nearly three chunks) of an hour, at 60 s mostly, some at 120 s and
    /// 30 s further on in name order (so the fold starts again at their multiple), of
    /// different lengths, with nulls, negative values, zeros and ties.
    fn source(steps: &[i64]) -> MemorySource {
        let mut m = MemorySource::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for i in 0..700 {
            let step = steps[i * steps.len() / 700];
            let len = 3600 / step - next(5) as i64;
            let start = NOW - len * step + next(3) as i64 * step;
            let values: Vec<Option<f64>> = (0..len)
                .map(|_| match next(10) {
                    0 | 1 => None,
                    2 => Some(0.0),
                    3 => Some(-(next(100) as f64) / 4.0),
                    _ => Some(next(1000) as f64 / 8.0),
                })
                .collect();
            m.add(
                &format!("h{i:03}.cpu.{}", i % 3),
                step,
                86_400,
                start,
                &values,
            );
        }
        m
    }

    fn eval(m: &MemorySource, target: &str) -> Vec<TimeSeries> {
        let registry = Registry::standard();
        let ctx = RequestContext::new(
            TimeRange {
                from: NOW - 3600,
                until: NOW,
                now: NOW,
            },
            chrono_tz::UTC,
        );
        Evaluator::new(m, &registry)
            .evaluate_targets(&ctx, &[target])
            .unwrap_or_else(|e| panic!("{target}: {e}"))
    }

    fn same(a: &[TimeSeries], b: &[TimeSeries], what: &str) {
        assert_eq!(a.len(), b.len(), "{what}");
        for (a, b) in a.iter().zip(b) {
            assert_eq!(
                (&a.name, a.start, a.end, a.step, &a.path_expression),
                (&b.name, b.start, b.end, b.step, &b.path_expression),
                "{what}"
            );
            let tags = |s: &TimeSeries| -> Vec<(String, String)> {
                s.tags
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            };
            assert_eq!(tags(a), tags(b), "{what}");
            assert_eq!(
                a.x_files_factor.to_bits(),
                b.x_files_factor.to_bits(),
                "{what}"
            );
            let bits = |s: &TimeSeries| -> Vec<Option<u64>> {
                s.values.iter().map(|v| v.map(f64::to_bits)).collect()
            };
            assert_eq!(bits(a), bits(b), "{what}");
        }
    }

    /// Whether a target is evaluated as a stream.
    fn streams(target: &str) -> bool {
        let registry = Registry::standard();
        match crate::grammar::parse_strict(target) {
            Ok(crate::grammar::Expr::Call(call)) => super::plan(&call, &registry).is_some(),
            _ => false,
        }
    }

    /// Each streamed aggregate equals, bit for bit, the same aggregate over the
    /// materialised list (`group()` keeps the series as they are but is not
    /// streamable, so it takes the ordinary path).
    #[test]
    fn streamed_aggregates_equal_the_materialised_ones() {
        for steps in [&[60][..], &[60, 120, 30], &[120, 60]] {
            let m = source(steps);
            for (streamed, materialised) in [
                ("sumSeries(h*.cpu.*)", "sumSeries(group(h*.cpu.*))"),
                (
                    "sumSeries(isNonNull(h*.*.*))",
                    "sumSeries(group(isNonNull(h*.*.*)))",
                ),
                ("averageSeries(h*.cpu.1)", "averageSeries(group(h*.cpu.1))"),
                (
                    "minSeries(absolute(h*.cpu.*))",
                    "minSeries(group(absolute(h*.cpu.*)))",
                ),
                (
                    "maxSeries(scale(h*.cpu.*,-2))",
                    "maxSeries(group(scale(h*.cpu.*,-2)))",
                ),
                (
                    "diffSeries(offset(h*.cpu.*,3))",
                    "diffSeries(group(offset(h*.cpu.*,3)))",
                ),
                (
                    "multiplySeries(h00*.cpu.*)",
                    "multiplySeries(group(h00*.cpu.*))",
                ),
                (
                    "multiplySeries(h001.cpu.*)",
                    "multiplySeries(group(h001.cpu.*))",
                ),
                (
                    "rangeOfSeries(transformNull(h*.cpu.*,5))",
                    "rangeOfSeries(group(transformNull(h*.cpu.*,5)))",
                ),
                ("countSeries(h*.cpu.*)", "countSeries(group(h*.cpu.*))"),
                ("stddevSeries(h*.cpu.*)", "stddevSeries(group(h*.cpu.*))"),
                (
                    "aggregate(isNonNull(h*.cpu.*),'stddev',0.3)",
                    "aggregate(group(isNonNull(h*.cpu.*)),'stddev',0.3)",
                ),
                (
                    "groupByNode(h*.cpu.*,2,'stddevSeries')",
                    "groupByNode(group(h*.cpu.*),2,'stddevSeries')",
                ),
                (
                    "aggregate(h*.cpu.*,'avg',0.9)",
                    "aggregate(group(h*.cpu.*),'avg',0.9)",
                ),
                (
                    "aggregate(h*.cpu.*,'sum',0.5)",
                    "aggregate(group(h*.cpu.*),'sum',0.5)",
                ),
                (
                    "aggregate(h*.cpu.*,'last')",
                    "aggregate(group(h*.cpu.*),'last')",
                ),
                (
                    "aggregate(h*.cpu.*,'avg_zero')",
                    "aggregate(group(h*.cpu.*),'avg_zero')",
                ),
                (
                    "aggregate(h*.cpu.*,'countSeries')",
                    "aggregate(group(h*.cpu.*),'countSeries')",
                ),
                ("sumSeries(nothing.*)", "sumSeries(group(nothing.*))"),
                // several lists: joined in argument order (`group()` per argument
                // keeps them apart on the ordinary path)
                (
                    "sumSeries(isNonNull(h*.cpu.1),isNonNull(h0*.*.*),h00*.cpu.2)",
                    "sumSeries(group(isNonNull(h*.cpu.1)),group(isNonNull(h0*.*.*)),group(h00*.cpu.2))",
                ),
                (
                    "diffSeries(h01*.cpu.0,scale(h00*.cpu.*,2))",
                    "diffSeries(group(h01*.cpu.0),group(scale(h00*.cpu.*,2)))",
                ),
                (
                    "stddevSeries(h1*.cpu.0,h00*.cpu.*)",
                    "stddevSeries(group(h1*.cpu.0),group(h00*.cpu.*))",
                ),
                (
                    "countSeries(h*.cpu.0,nothing.*,h2*.cpu.1)",
                    "countSeries(group(h*.cpu.0),group(nothing.*),group(h2*.cpu.1))",
                ),
                (
                    "multiplySeries(h001.cpu.1,nothing.*)",
                    "multiplySeries(group(h001.cpu.1),group(nothing.*))",
                ),
                (
                    "averageSeries(h001.cpu.1,h001.cpu.1)",
                    "averageSeries(group(h001.cpu.1),group(h001.cpu.1))",
                ),
                (
                    "maxSeries(nothing.*,other.*)",
                    "maxSeries(group(nothing.*),group(other.*))",
                ),
                ("sum(h*.cpu.*)", "sum(group(h*.cpu.*))"),
                (
                    "avg(isNonNull(h*.cpu.*))",
                    "avg(group(isNonNull(h*.cpu.*)))",
                ),
                (
                    "sumSeriesWithWildcards(h*.cpu.*,0)",
                    "sumSeriesWithWildcards(group(h*.cpu.*),0)",
                ),
                (
                    "averageSeriesWithWildcards(h*.cpu.*,0,1)",
                    "averageSeriesWithWildcards(group(h*.cpu.*),0,1)",
                ),
                (
                    "multiplySeriesWithWildcards(h00*.cpu.*,0)",
                    "multiplySeriesWithWildcards(group(h00*.cpu.*),0)",
                ),
                (
                    "aggregateWithWildcards(isNonNull(h*.cpu.*),'avg',0)",
                    "aggregateWithWildcards(group(isNonNull(h*.cpu.*)),'avg',0)",
                ),
                ("groupByNode(h*.cpu.*,2)", "groupByNode(group(h*.cpu.*),2)"),
                (
                    "groupByNode(h*.cpu.*,2,'sumSeries')",
                    "groupByNode(group(h*.cpu.*),2,'sumSeries')",
                ),
                (
                    "groupByNode(h00*.cpu.*,0,'multiplySeries')",
                    "groupByNode(group(h00*.cpu.*),0,'multiplySeries')",
                ),
                (
                    "groupByNode(scale(h*.cpu.*,2),2,'countSeries')",
                    "groupByNode(group(scale(h*.cpu.*,2)),2,'countSeries')",
                ),
                (
                    "groupByNodes(h*.cpu.*,'max',1,2)",
                    "groupByNodes(group(h*.cpu.*),'max',1,2)",
                ),
                (
                    "groupByNodes(absolute(h*.cpu.*),'rangeOf',2)",
                    "groupByNodes(group(absolute(h*.cpu.*)),'rangeOf',2)",
                ),
            ] {
                assert!(streams(streamed), "{streamed} is not streamed");
                assert!(!streams(materialised), "{materialised} is streamed");
                let got = eval(&m, streamed);
                assert!(
                    !got.is_empty() || streamed.contains("nothing"),
                    "{streamed}"
                );
                same(
                    &got,
                    &eval(&m, materialised),
                    &format!("{streamed} {steps:?}"),
                );
            }
        }
    }

    /// Tagged series in memory; `find_tagged` answers `name=<metric>` and `name=~.*`.
    struct Tagged(MemorySource);

    impl crate::source::SeriesSource for Tagged {
        fn find(
            &self,
            pattern: &sumi_model::glob::PathPattern,
        ) -> Result<Vec<crate::source::FindNode>, crate::source::SourceError> {
            self.0.find(pattern)
        }

        fn fetch(
            &self,
            paths: &[String],
            from: i64,
            until: i64,
            now: i64,
        ) -> Result<Vec<crate::source::FetchedSeries>, crate::source::SourceError> {
            self.0.fetch(paths, from, until, now)
        }

        fn find_tagged(&self, exprs: &[String]) -> Result<Vec<String>, crate::source::SourceError> {
            let all = self
                .0
                .find(&sumi_model::glob::PathPattern::parse("*.*"))?
                .into_iter()
                .map(|n| n.path);
            Ok(match exprs.first().map(String::as_str) {
                Some("name=~.*") => all.collect(),
                Some(e) => {
                    let metric = e.strip_prefix("name=").unwrap_or("").to_string() + ";";
                    all.filter(|p| p.starts_with(&metric)).collect()
                }
                None => Vec::new(),
            })
        }
    }

    #[test]
    fn streamed_tag_groupings_equal_the_materialised_ones() {
        let mut m = MemorySource::new();
        for i in 0..600 {
            let step = if i % 7 == 3 { 120 } else { 60 };
            let values: Vec<Option<f64>> = (0..3600 / step)
                .map(|k| ((i + k) % 5 != 0).then_some(((i * 13 + k * 7) % 97) as f64 / 4.0))
                .collect();
            let metric = if i % 4 == 0 { "mem.free" } else { "cpu.load" };
            let name = format!("{metric};dc=dc{};host=h{i:03}", i % 3);
            m.add(&name, step, 86_400, NOW - 3600, &values);
        }
        let m = Tagged(m);
        for (streamed, materialised) in [
            (
                "groupByTags(seriesByTag('name=cpu.load'),'sum','dc')",
                "groupByTags(group(seriesByTag('name=cpu.load')),'sum','dc')",
            ),
            (
                "groupByTags(seriesByTag('name=~.*'),'averageSeries','dc','name')",
                "groupByTags(group(seriesByTag('name=~.*')),'averageSeries','dc','name')",
            ),
            (
                "groupByTags(seriesByTag('name=~.*'),'max','dc')",
                "groupByTags(group(seriesByTag('name=~.*')),'max','dc')",
            ),
            (
                "groupByTags(isNonNull(seriesByTag('name=mem.free')),'stddevSeries','host')",
                "groupByTags(group(isNonNull(seriesByTag('name=mem.free'))),'stddevSeries','host')",
            ),
            (
                "sumSeries(seriesByTag('name=cpu.load'))",
                "sumSeries(group(seriesByTag('name=cpu.load')))",
            ),
        ] {
            let registry = Registry::standard();
            let ctx = RequestContext::new(
                TimeRange {
                    from: NOW - 3600,
                    until: NOW,
                    now: NOW,
                },
                chrono_tz::UTC,
            );
            let eval = |t: &str| {
                Evaluator::new(&m, &registry)
                    .evaluate_targets(&ctx, &[t])
                    .unwrap_or_else(|e| panic!("{t}: {e}"))
            };
            let got = eval(streamed);
            assert!(!got.is_empty(), "{streamed}");
            same(&got, &eval(materialised), streamed);
        }
    }
}
