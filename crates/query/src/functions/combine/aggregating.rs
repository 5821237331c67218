//! The functions of the Combine group that reduce many series to one per group with an
//! aggregation function: `aggregate` and its named forms (`sumSeries`,
//! `averageSeries`, …), the pairwise `…SeriesLists`, the `…WithWildcards` groupings,
//! and `countSeries`, `powSeries`, `percentileOfSeries`, `group`.

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{percentile, AggFunc};
use crate::functions::align::normalize_list;
use crate::functions::args::{input_error, take_series};
use crate::functions::naming::format_path_expressions;
use crate::functions::Invocation;
use crate::py::format::format_g;
use crate::py::number::py_pow;

use crate::series::TimeSeries;

use super::aggregate::{agg_func, aggregate, new_series, views};

type Output = Result<Value, QueryError>;

fn list(series: Vec<TimeSeries>) -> Output {
    Ok(Value::SeriesList(series))
}

fn one(series: Option<TimeSeries>) -> Output {
    list(series.into_iter().collect())
}

/// The aggregation function named by parameter `i` (`aggFunc`-typed, so valid).
fn func_param<'a>(inv: &'a Invocation<'_>, i: usize) -> Result<(&'a str, AggFunc), QueryError> {
    let raw = inv.args.str(i).unwrap_or("");
    agg_func(raw).ok_or_else(|| {
        input_error(
            inv.name,
            format!("unsupported aggregation function: {raw:?}"),
        )
    })
}

/// An optional float parameter (absent, or an explicit `None`: `None`).
fn opt_float(inv: &Invocation<'_>, i: usize) -> Option<f64> {
    inv.args.float(i)
}

/// `aggregate(seriesList, func, xFilesFactor=None)`.
pub(super) fn aggregate_fn(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (name, func) = func_param(&inv, 1)?;
    let name = name.to_string();
    let xff = opt_float(&inv, 2).unwrap_or_else(|| session.x_files_factor(ctx));
    let series = take_series(&mut inv, 0);
    one(aggregate(series, &name, func, xff))
}

/// `sumSeries(*seriesLists)` and the others that call `aggregate()` with a fixed
/// function: every list's series together.
fn named(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
    func_name: &str,
) -> Output {
    let Some((name, func)) = agg_func(func_name) else {
        return list(Vec::new());
    };
    let xff = session.x_files_factor(ctx);
    one(aggregate(take_series(&mut inv, 0), name, func, xff))
}

pub(super) fn sum_series(s: &mut Session<'_>, ctx: &RequestContext, inv: Invocation<'_>) -> Output {
    named(s, ctx, inv, "sum")
}

pub(super) fn average_series(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    named(s, ctx, inv, "average")
}

pub(super) fn diff_series(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    named(s, ctx, inv, "diff")
}

pub(super) fn stddev_series(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    named(s, ctx, inv, "stddev")
}

pub(super) fn min_series(s: &mut Session<'_>, ctx: &RequestContext, inv: Invocation<'_>) -> Output {
    named(s, ctx, inv, "min")
}

pub(super) fn max_series(s: &mut Session<'_>, ctx: &RequestContext, inv: Invocation<'_>) -> Output {
    named(s, ctx, inv, "max")
}

pub(super) fn range_of_series(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    named(s, ctx, inv, "rangeOf")
}

/// `multiplySeries`: a single series alone is returned as it is (graphite-web's
/// "legacy behavior").
pub(super) fn multiply_series(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    let lists = inv.args.all(0);
    if let [Value::SeriesList(only)] = lists {
        if only.len() == 1 {
            return list(only.clone());
        }
    }
    named(s, ctx, inv, "multiply")
}

/// `aggregateSeriesLists(first, second, func, xFilesFactor=None)`: `first[i]` with
/// `second[i]`, named `<func>Series(<first[i]>,<second[i]>)` (their names, not path
/// expressions; the path expression and the `name` tag keep the latter).
pub(super) fn aggregate_series_lists(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (name, func) = func_param(&inv, 2)?;
    let name = name.to_string();
    let xff = opt_float(&inv, 3).unwrap_or_else(|| session.x_files_factor(ctx));
    pairwise(&mut inv, &name, func, xff)
}

fn pairwise(inv: &mut Invocation<'_>, func_name: &str, func: AggFunc, xff: f64) -> Output {
    let first = take_series(inv, 0);
    let second = take_series(inv, 1);
    if first.len() != second.len() {
        return Err(input_error(
            inv.name,
            format!(
                "seriesListFirstPos and seriesListSecondPos must have the same number of series (got {} and {})",
                first.len(),
                second.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(first.len());
    for (a, b) in first.into_iter().zip(second) {
        let names = format!("{},{}", a.name, b.name);
        if let Some(mut result) = aggregate(vec![a, b], func_name, func, xff) {
            // graphite-web: result.name[:result.name.find('Series(')] + 'Series(a,b)'
            let prefix_len = result.name.find("Series(").unwrap_or(result.name.len());
            let prefix = result.name.get(..prefix_len).unwrap_or("").to_string();
            result.name = format!("{prefix}Series({names})");
            out.push(result);
        }
    }
    list(out)
}

fn pairwise_named(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
    func_name: &str,
) -> Output {
    let Some((name, func)) = agg_func(func_name) else {
        return list(Vec::new());
    };
    let xff = session.x_files_factor(ctx);
    pairwise(&mut inv, name, func, xff)
}

pub(super) fn sum_series_lists(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    pairwise_named(s, ctx, inv, "sum")
}

pub(super) fn diff_series_lists(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    pairwise_named(s, ctx, inv, "diff")
}

pub(super) fn multiply_series_lists(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    pairwise_named(s, ctx, inv, "multiply")
}

/// `aggregateWithWildcards(seriesList, func, *positions)`: series grouped by their
/// name without the nodes at `positions`, each group aggregated and named after the
/// remaining nodes, groups in order of first appearance.
pub(super) fn aggregate_with_wildcards(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (name, func) = func_param(&inv, 1)?;
    let name = name.to_string();
    let positions = node_list(inv.args.all(2));
    let xff = session.x_files_factor(ctx);
    with_wildcards(take_series(&mut inv, 0), &positions, &name, func, xff)
}

/// The integers of a `node` list (graphite-web compares positions with `in`, so a
/// position that is not an integer never matches).
fn node_list(values: &[Value]) -> Vec<i64> {
    values
        .iter()
        .filter_map(|v| match v {
            Value::Int(i) => Some(*i),
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Some(*x as i64),
            _ => None,
        })
        .collect()
}

fn with_wildcards(
    series: Vec<TimeSeries>,
    positions: &[i64],
    func_name: &str,
    func: AggFunc,
    xff: f64,
) -> Output {
    let mut keys: Vec<String> = Vec::new();
    let mut groups: Vec<Vec<TimeSeries>> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for s in series {
        let key: Vec<&str> = s
            .name
            .split('.')
            .enumerate()
            .filter(|(i, _)| !positions.contains(&(*i as i64)))
            .map(|(_, node)| node)
            .collect();
        let key = key.join(".");
        match index.get(&key) {
            Some(&g) => groups[g].push(s),
            None => {
                index.insert(key.clone(), groups.len());
                keys.push(key);
                groups.push(vec![s]);
            }
        }
    }
    let mut out = Vec::with_capacity(groups.len());
    for (key, group) in keys.into_iter().zip(groups) {
        if let Some(mut result) = aggregate(group, func_name, func, xff) {
            result.name = key;
            out.push(result);
        }
    }
    list(out)
}

fn wildcards_named(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
    func_name: &str,
) -> Output {
    let Some((name, func)) = agg_func(func_name) else {
        return list(Vec::new());
    };
    let positions = node_list(inv.args.all(1));
    let xff = session.x_files_factor(ctx);
    with_wildcards(take_series(&mut inv, 0), &positions, name, func, xff)
}

pub(super) fn sum_series_with_wildcards(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    wildcards_named(s, ctx, inv, "sum")
}

pub(super) fn average_series_with_wildcards(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    wildcards_named(s, ctx, inv, "average")
}

pub(super) fn multiply_series_with_wildcards(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Output {
    wildcards_named(s, ctx, inv, "multiply")
}

/// `countSeries(*seriesLists)`: how many series there are, at every timestamp of the
/// aligned interval. With no argument at all, graphite-web answers `constantLine(0)`
/// named `0`.
pub(super) fn count_series(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let xff = session.x_files_factor(ctx);
    if inv.args.all(0).is_empty() {
        let step = (ctx.until - ctx.from) / 2;
        let mut s = TimeSeries::new("0", ctx.from, ctx.until, step, vec![Some(0.0); 3]);
        s.path_expression = "countSeries()".to_string();
        s.x_files_factor = xff;
        return list(vec![s]);
    }
    let mut series = take_series(&mut inv, 0);
    let Some(span) = normalize_list(&mut series) else {
        return list(Vec::new());
    };
    let name = format!("countSeries({})", format_path_expressions(&series));
    let len = views(&series).iter().map(|v| v.len()).max().unwrap_or(0);
    let values = vec![Some(series.len() as f64); len];
    list(vec![new_series(name, span, values, xff, None)])
}

/// `powSeries(*seriesLists)`: the first series to the power of the second, that to
/// the power of the third, … (`math.pow`, `None` where it fails), named after the
/// series' names.
pub(super) fn pow_series(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let mut series = take_series(&mut inv, 0);
    let Some(span) = normalize_list(&mut series) else {
        return list(Vec::new());
    };
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    let name = format!("powSeries({})", names.join(","));
    let views = views(&series);
    let len = views.iter().map(|v| v.len()).max().unwrap_or(0);
    let values = (0..len)
        .map(|i| {
            let mut cells = views.iter().map(|v| v.get(i).copied().flatten());
            let first = cells.next().flatten();
            cells.fold(first, |acc, v| match (acc, v) {
                (Some(a), Some(b)) => py_pow(a, b),
                _ => None,
            })
        })
        .collect();
    list(vec![new_series(
        name,
        span,
        values,
        session.x_files_factor(ctx),
        None,
    )])
}

/// `percentileOfSeries(seriesList, n, interpolate=False)`: the `n`th percentile of
/// each aligned row, named after the first series' path expression.
pub(super) fn percentile_of_series(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let n = inv.args.float(1).unwrap_or(0.0);
    let interpolate = inv.args.bool(2).unwrap_or(false);
    if n <= 0.0 {
        return Err(input_error(
            inv.name,
            "the requested percent is required to be greater than 0",
        ));
    }
    let mut series = take_series(&mut inv, 0);
    let Some(first) = series.first() else {
        return list(Vec::new());
    };
    let name = format!(
        "percentileOfSeries({},{})",
        first.path_expression,
        format_g(n)
    );
    let Some(span) = normalize_list(&mut series) else {
        return list(Vec::new());
    };
    let views = views(&series);
    let len = views.iter().map(|v| v.len()).max().unwrap_or(0);
    let mut scratch = Vec::with_capacity(views.len());
    let mut values = Vec::with_capacity(len);
    for i in 0..len {
        scratch.clear();
        scratch.extend(views.iter().map(|v| v.get(i).copied().flatten()));
        values.push(percentile(&scratch, n, interpolate).map_err(|e| input_error(inv.name, e))?);
    }
    list(vec![new_series(
        name,
        span,
        values,
        session.x_files_factor(ctx),
        None,
    )])
}

/// `group(*seriesLists)`: the lists one after the other.
pub(super) fn group(_: &mut Session<'_>, _: &RequestContext, mut inv: Invocation<'_>) -> Output {
    list(take_series(&mut inv, 0))
}
