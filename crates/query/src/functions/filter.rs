//! graphite-web's "Filter Series" group: functions that keep or drop whole series —
//! by an aggregate compared with a threshold (`filterSeries` and its shorthands
//! `averageAbove`, `currentBelow`, `maximumAbove`, …), by rank (`highest`, `lowest`
//! and shorthands, `mostDeviant`, `limit`), by name (`grep`, `exclude`, `unique`), by
//! percentile (`averageOutsidePercentile`, `removeBetweenPercentile`), by emptiness
//! (`removeEmptySeries`), or by looking up other series (`useSeriesAbove`).
//!
//! Ranks sort as Python's `list.sort` does (stable; `None` aggregates sort as `-inf`).
//!
//! Deliberate differences, all where graphite-web 1.1.10 fails with a server error
//! under Python 3 because it compares `None` with a number: `useSeriesAbove` uses the
//! maximum of the known values (graphite-web's `max(series)` fails on any null);
//! `averageOutsidePercentile` keeps series without an average;
//! `removeBetweenPercentile` ignores null values and points beyond the shortest
//! series. `mostDeviant` gives infinity where squaring overflows.

use std::collections::HashSet;

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{percentile, percentile_buf, row, sort_key, AggFunc};
use crate::functions::args::{eval_target_text, input_error, take_series};
use crate::functions::params::{DefaultValue as D, OnFloat, Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl, Invocation};
use crate::py::number::{py_square, py_sum};
use crate::py::re;
use crate::py::seq::py_slice;
use crate::py::sort::py_sort_by_keys;
use crate::series::TimeSeries;

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();
const N_FLOAT: Param = Param::new("n", T::Float).required();
const N_INT: Param = Param::new("n", T::Integer).required();
/// `highest` and its shorthands slice with `int(n)`; `limit` and `mostDeviant` slice with
/// `n` itself, which fails for a float.
const N_TRUNCATED: Param = N_INT.on_float(OnFloat::Truncate);
const OPERATORS: &[&str] = &["!=", "<", "<=", "=", ">", ">="];

static THRESHOLD_PARAMS: [Param; 2] = [SERIES, N_FLOAT];
static RANK_PARAMS: [Param; 2] = [SERIES, N_TRUNCATED];
static SLICE_PARAMS: [Param; 2] = [SERIES, N_INT];
static RANK_FUNC_PARAMS: [Param; 3] = [
    SERIES,
    N_TRUNCATED,
    Param::new("func", T::AggFunc).default(D::Str("average")),
];
static FILTER_SERIES_PARAMS: [Param; 4] = [
    SERIES,
    Param::new("func", T::AggFunc).required(),
    Param::new("operator", T::String)
        .required()
        .options(OPERATORS),
    Param::new("threshold", T::Float).required(),
];
static PATTERN_PARAMS: [Param; 2] = [SERIES, Param::new("pattern", T::String).required()];
static REMOVE_EMPTY_PARAMS: [Param; 2] = [SERIES, Param::new("xFilesFactor", T::Float)];
static UNIQUE_PARAMS: [Param; 1] = [Param::new("seriesLists", T::SeriesList)
    .required()
    .multiple()];
static USE_SERIES_ABOVE_PARAMS: [Param; 4] = [
    SERIES,
    Param::new("value", T::Float).required(),
    Param::new("search", T::String).required(),
    Param::new("replace", T::String).required(),
];

const fn def(
    name: &'static str,
    params: &'static [Param],
    description: &'static str,
    run: FunctionImpl,
) -> FunctionDef {
    FunctionDef {
        name,
        group: "Filter Series",
        description,
        params,
        aggregator: false,
        run,
    }
}

/// The series filters.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "filterSeries",
        &FILTER_SERIES_PARAMS,
        "Keeps the series whose aggregate passes a comparison.\n\n\
        The aggregate is any aggregation name (average, max, last, …), the operator one of \
        =, !=, >, >=, <, <=. A series without a known value has no aggregate: it passes != \
        and the < and <= comparisons only.",
        filter_series,
    ),
    def(
        "averageAbove",
        &THRESHOLD_PARAMS,
        "Keeps the series whose average is above n.",
        average_above,
    ),
    def(
        "averageBelow",
        &THRESHOLD_PARAMS,
        "Keeps the series whose average is at or below n.",
        average_below,
    ),
    def(
        "currentAbove",
        &THRESHOLD_PARAMS,
        "Keeps the series whose last known value is above n.",
        current_above,
    ),
    def(
        "currentBelow",
        &THRESHOLD_PARAMS,
        "Keeps the series whose last known value is at or below n.",
        current_below,
    ),
    def(
        "maximumAbove",
        &THRESHOLD_PARAMS,
        "Keeps the series whose maximum is above n.",
        maximum_above,
    ),
    def(
        "maximumBelow",
        &THRESHOLD_PARAMS,
        "Keeps the series whose maximum is at or below n.",
        maximum_below,
    ),
    def(
        "minimumAbove",
        &THRESHOLD_PARAMS,
        "Keeps the series whose minimum is above n.",
        minimum_above,
    ),
    def(
        "minimumBelow",
        &THRESHOLD_PARAMS,
        "Keeps the series whose minimum is at or below n.",
        minimum_below,
    ),
    def(
        "highest",
        &RANK_FUNC_PARAMS,
        "The n series with the highest aggregate.\n\n\
        The aggregate is average by default, or any aggregation name; ties keep their order.",
        highest,
    ),
    def(
        "lowest",
        &RANK_FUNC_PARAMS,
        "The n series with the lowest aggregate.\n\n\
        The aggregate is average by default, or any aggregation name; series without a \
        known value come first.",
        lowest,
    ),
    def(
        "highestAverage",
        &RANK_PARAMS,
        "The n series with the highest average.",
        highest_average,
    ),
    def(
        "highestCurrent",
        &RANK_PARAMS,
        "The n series with the highest last known value.",
        highest_current,
    ),
    def(
        "highestMax",
        &RANK_PARAMS,
        "The n series with the highest maximum.",
        highest_max,
    ),
    def(
        "lowestAverage",
        &RANK_PARAMS,
        "The n series with the lowest average.",
        lowest_average,
    ),
    def(
        "lowestCurrent",
        &RANK_PARAMS,
        "The n series with the lowest last known value.",
        lowest_current,
    ),
    def(
        "mostDeviant",
        &SLICE_PARAMS,
        "The n series with the largest variance.\n\n\
        Series without a known value are left out.",
        most_deviant,
    ),
    def(
        "limit",
        &SLICE_PARAMS,
        "The first n series of the list.",
        limit,
    ),
    def(
        "grep",
        &PATTERN_PARAMS,
        "Keeps the series whose name matches a regular expression.\n\n\
        Python regular expression syntax; the pattern may match anywhere in the name.",
        grep,
    ),
    def(
        "exclude",
        &PATTERN_PARAMS,
        "Drops the series whose name matches a regular expression.\n\n\
        Python regular expression syntax; the pattern may match anywhere in the name.",
        exclude,
    ),
    def(
        "unique",
        &UNIQUE_PARAMS,
        "The series of all the lists, each name once.\n\n\
        The first series of each name is kept, in order.",
        unique,
    ),
    def(
        "removeEmptySeries",
        &REMOVE_EMPTY_PARAMS,
        "Drops series without enough known values.\n\n\
        By default a series needs one known value; with xFilesFactor, that share of its points.",
        remove_empty_series,
    ),
    def(
        "averageOutsidePercentile",
        &THRESHOLD_PARAMS,
        "Keeps the series whose average is outside the n-th percentile band.\n\n\
        The band runs from the (100 - n)th to the n-th percentile of all the series' averages; \
        series strictly inside it are dropped.",
        average_outside_percentile,
    ),
    def(
        "removeBetweenPercentile",
        &THRESHOLD_PARAMS,
        "Keeps the series that leave the n-th percentile band at some point.\n\n\
        At each time, the band runs from the (100 - n)th to the n-th percentile of all the \
        series' values; series that stay strictly inside it everywhere are dropped.",
        remove_between_percentile,
    ),
    def(
        "useSeriesAbove",
        &USE_SERIES_ABOVE_PARAMS,
        "Draws related series of those whose maximum is above a value.\n\n\
        For each series with a maximum above value, the name is rewritten with the regular \
        expression search and replace, and the resulting series are fetched and drawn instead.",
        use_series_above,
    ),
];

/// graphite-web's `operatorFuncs`: how a missing aggregate compares.
fn compare(op: &str, value: Option<f64>, threshold: f64) -> bool {
    match (op, value) {
        ("=", Some(v)) => v == threshold,
        ("!=", Some(v)) => v != threshold,
        (">", Some(v)) => v > threshold,
        (">=", Some(v)) => v >= threshold,
        ("<", Some(v)) => v < threshold,
        ("<=", Some(v)) => v <= threshold,
        ("!=" | "<" | "<=", None) => true,
        _ => false,
    }
}

fn agg(inv: &Invocation<'_>, name: &str) -> Result<AggFunc, QueryError> {
    AggFunc::from_name(name).ok_or_else(|| {
        input_error(
            inv.name,
            format!("Unsupported aggregation function: {name}"),
        )
    })
}

fn filter_by(
    mut inv: Invocation<'_>,
    func: &str,
    op: &str,
    threshold: f64,
) -> Result<Value, QueryError> {
    let func = agg(&inv, func)?;
    if !OPERATORS.contains(&op) {
        return Err(input_error(inv.name, format!("Unsupported operator: {op}")));
    }
    let series = take_series(&mut inv, 0);
    Ok(Value::SeriesList(
        series
            .into_iter()
            .filter(|s| compare(op, func.apply(&row(s)), threshold))
            .collect(),
    ))
}

fn filter_series(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let func = inv.args.str(1).unwrap_or("").to_string();
    let op = inv.args.str(2).unwrap_or("").to_string();
    let threshold = inv.args.float(3).unwrap_or(0.0);
    filter_by(inv, &func, &op, threshold)
}

macro_rules! threshold_filter {
    ($name:ident, $func:literal, $op:literal) => {
        fn $name(
            _: &mut Session<'_>,
            _: &RequestContext,
            inv: Invocation<'_>,
        ) -> Result<Value, QueryError> {
            let n = inv.args.float(1).unwrap_or(0.0);
            filter_by(inv, $func, $op, n)
        }
    };
}

threshold_filter!(average_above, "average", ">");
threshold_filter!(average_below, "average", "<=");
threshold_filter!(current_above, "last", ">");
threshold_filter!(current_below, "last", "<=");
threshold_filter!(maximum_above, "max", ">");
threshold_filter!(maximum_below, "max", "<=");
threshold_filter!(minimum_above, "min", ">");
threshold_filter!(minimum_below, "min", "<=");

/// `highest`/`lowest`: sorted by the aggregate (descending for highest), then the
/// first `n` (Python's `[:n]`, so a negative `n` drops from the end).
fn ranked(mut inv: Invocation<'_>, func: &str, n: i64, reverse: bool) -> Result<Value, QueryError> {
    let func = agg(&inv, func)?;
    let series = take_series(&mut inv, 0);
    let keys: Vec<f64> = series.iter().map(|s| sort_key(func, s)).collect();
    let sorted = py_sort_by_keys(series, &keys, reverse);
    Ok(Value::SeriesList(py_slice(sorted, None, Some(n))))
}

fn highest(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let n = inv.args.int(1).unwrap_or(1);
    let func = inv.args.str(2).unwrap_or("average").to_string();
    ranked(inv, &func, n, true)
}

fn lowest(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let n = inv.args.int(1).unwrap_or(1);
    let func = inv.args.str(2).unwrap_or("average").to_string();
    ranked(inv, &func, n, false)
}

macro_rules! rank_shorthand {
    ($name:ident, $func:literal, $reverse:literal) => {
        fn $name(
            _: &mut Session<'_>,
            _: &RequestContext,
            inv: Invocation<'_>,
        ) -> Result<Value, QueryError> {
            let n = inv.args.int(1).unwrap_or(1);
            ranked(inv, $func, n, $reverse)
        }
    };
}

rank_shorthand!(highest_average, "average", true);
rank_shorthand!(highest_current, "current", true);
rank_shorthand!(highest_max, "max", true);
rank_shorthand!(lowest_average, "average", false);
rank_shorthand!(lowest_current, "current", false);

fn most_deviant(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let n = inv.args.int(1).unwrap_or(0);
    let series = take_series(&mut inv, 0);
    let mut deviants = Vec::with_capacity(series.len());
    let mut keys = Vec::with_capacity(series.len());
    for s in series {
        let values = row(&s);
        let Some(mean) = AggFunc::Average.apply(&values) else {
            continue;
        };
        let known = values.iter().filter_map(|v| *v);
        let count = known.clone().count();
        let square_sum = py_sum(known.map(|v| py_square(v - mean))).unwrap_or(0.0);
        keys.push(square_sum / count as f64);
        drop(values);
        deviants.push(s);
    }
    let sorted = py_sort_by_keys(deviants, &keys, true);
    Ok(Value::SeriesList(py_slice(sorted, None, Some(n))))
}

fn limit(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let n = inv.args.int(1).unwrap_or(0);
    let series = take_series(&mut inv, 0);
    Ok(Value::SeriesList(py_slice(series, Some(0), Some(n))))
}

fn by_pattern(mut inv: Invocation<'_>, keep_matching: bool) -> Result<Value, QueryError> {
    let pattern = inv.args.str(1).unwrap_or("").to_string();
    let regex = re::compile(&pattern).map_err(|e| input_error(inv.name, e.to_string()))?;
    let series = take_series(&mut inv, 0);
    Ok(Value::SeriesList(
        series
            .into_iter()
            .filter(|s| regex.is_match(&s.name) == keep_matching)
            .collect(),
    ))
}

fn grep(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Result<Value, QueryError> {
    by_pattern(inv, true)
}

fn exclude(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    by_pattern(inv, false)
}

fn unique(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let lists = inv.args.take(0);
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for list in lists {
        if let Value::SeriesList(series) = list {
            for s in series {
                if seen.insert(s.name.clone()) {
                    out.push(s);
                }
            }
        }
    }
    Ok(Value::SeriesList(out))
}

fn remove_empty_series(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let xff = inv.args.float(1).unwrap_or(0.0);
    let series = take_series(&mut inv, 0);
    Ok(Value::SeriesList(
        series
            .into_iter()
            .filter(|s| {
                // xffValues: known values as iterated over the list's length
                let total = s.values.len();
                let known = row(s).iter().filter(|v| v.is_some()).count();
                known > 0 && total > 0 && known as f64 / total as f64 >= xff
            })
            .collect(),
    ))
}

/// `not low < value < high`, where a comparison with a missing value is false.
fn outside(low: Option<f64>, value: Option<f64>, high: Option<f64>) -> bool {
    match (low, value, high) {
        (Some(l), Some(v), Some(h)) => !(l < v && v < h),
        _ => true,
    }
}

fn average_outside_percentile(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let mut n = inv.args.float(1).unwrap_or(0.0);
    if n < 50.0 {
        n = 100.0 - n;
    }
    let series = take_series(&mut inv, 0);
    let averages: Vec<Option<f64>> = series
        .iter()
        .map(|s| AggFunc::Average.apply(&row(s)))
        .collect();
    let low = percentile(&averages, 100.0 - n, false).map_err(|m| input_error(inv.name, m))?;
    let high = percentile(&averages, n, false).map_err(|m| input_error(inv.name, m))?;
    Ok(Value::SeriesList(
        series
            .into_iter()
            .zip(averages)
            .filter(|(_, avg)| outside(low, *avg, high))
            .map(|(s, _)| s)
            .collect(),
    ))
}

fn remove_between_percentile(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let mut n = inv.args.float(1).unwrap_or(0.0);
    if n < 50.0 {
        n = 100.0 - n;
    }
    let series = take_series(&mut inv, 0);
    let rows: Vec<Vec<Option<f64>>> = series.iter().map(|s| row(s).into_owned()).collect();
    // zip(*seriesList): as many columns as the shortest series has points
    let columns = rows.iter().map(Vec::len).min().unwrap_or(0);
    let mut bounds = Vec::with_capacity(columns);
    let mut column = Vec::with_capacity(rows.len());
    let mut sort_buf = Vec::with_capacity(rows.len());
    for i in 0..columns {
        column.clear();
        column.extend(rows.iter().map(|r| r[i]));
        let low = percentile_buf(&column, 100.0 - n, false, &mut sort_buf)
            .map_err(|m| input_error(inv.name, m))?;
        let high = percentile_buf(&column, n, false, &mut sort_buf)
            .map_err(|m| input_error(inv.name, m))?;
        bounds.push((low, high));
    }
    Ok(Value::SeriesList(
        series
            .into_iter()
            .zip(&rows)
            .filter(|(_, r)| {
                r.iter()
                    .zip(&bounds)
                    .any(|(v, (low, high))| v.is_some() && outside(*low, *v, *high))
            })
            .map(|(s, _)| s)
            .collect(),
    ))
}

fn use_series_above(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let value = inv.args.float(1).unwrap_or(0.0);
    let search = inv.args.str(2).unwrap_or("").to_string();
    let replace = inv.args.str(3).unwrap_or("").to_string();
    let sub = re::Substitution::new(&search, &replace)
        .map_err(|e| input_error(inv.name, e.to_string()))?;
    let series = take_series(&mut inv, 0);
    let names: Vec<String> = series
        .iter()
        .filter(|s| AggFunc::Max.apply(&row(s)).is_some_and(|m| m > value))
        .map(|s| sub.apply(&s.name))
        .collect();
    if names.is_empty() {
        return Ok(Value::SeriesList(Vec::new()));
    }
    let found: Vec<TimeSeries> =
        eval_target_text(session, ctx, &format!("group({})", names.join(",")))?;
    Ok(Value::SeriesList(
        found.into_iter().filter(|s| !s.values.is_empty()).collect(),
    ))
}
