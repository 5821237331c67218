//! The Combine functions that divide: `asPercent` (`pct`), `divideSeries`,
//! `divideSeriesLists` and `weightedAverage`.
//!
//! They follow graphite-web's code path by path, including what it does with series
//! of different steps: `asPercent` against a sum or a constant aligns the values but
//! keeps each series' own step (graphite-web builds the result with
//! `series.start, series.end, series.step`), and in its node-matching form reuses the
//! interval of the last pair it aligned for the series that have no partner.
//! `weightedAverage` pairs values by position without aligning them, and without
//! nodes keeps only the last pair (every series falls under the same empty key) — all
//! as graphite-web answers.
//!
//! Deliberate differences, where graphite-web fails with a server error: a constant
//! total that is not a number, and the node-matching form when a series has no partner
//! before any pair was aligned (graphite-web reads a variable it never set), are
//! refused as bad input.

use std::collections::HashMap;

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{row, safe_div, AggFunc};
use crate::functions::align::{normalize, normalize_list, Span};
use crate::functions::args::{input_error, take_series};
use crate::functions::naming::{agg_key, format_path_expressions};
use crate::functions::Invocation;
use crate::series::TimeSeries;

use super::aggregate::{aggregate, aggregate_rows, new_series, views};
use super::grouping::check_nodes;

type Output = Result<Value, QueryError>;

/// `safeMul(safeDiv(a, b), 100.0)`.
fn percent(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    safe_div(a, b).map(|q| q * 100.0)
}

/// Two aligned sequences combined as `izip_longest` pairs them (`None` past the end
/// of the shorter).
fn zip_longest(
    a: &[Option<f64>],
    b: &[Option<f64>],
    f: impl Fn(Option<f64>, Option<f64>) -> Option<f64>,
) -> Vec<Option<f64>> {
    let len = a.len().max(b.len());
    (0..len)
        .map(|i| f(a.get(i).copied().flatten(), b.get(i).copied().flatten()))
        .collect()
}

/// `safeSum` of each aligned row: the total `asPercent` divides by.
fn row_sums(series: &[TimeSeries]) -> Vec<Option<f64>> {
    aggregate_rows(series, AggFunc::Sum, 0.0)
}

/// `asPercent(seriesList, total=None, *nodes)`.
pub(super) fn as_percent(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let xff = session.x_files_factor(ctx);
    let mut series = take_series(&mut inv, 0);
    let total = inv.args.take(1).into_iter().next().unwrap_or(Value::None);
    let nodes = check_nodes(inv.name, inv.args.all(2))?;
    if normalize_list(&mut series).is_none() {
        return Ok(Value::SeriesList(Vec::new()));
    }
    if !nodes.is_empty() {
        return by_nodes(inv.name, series, total, &nodes, xff).map(Value::SeriesList);
    }
    let (total_values, total_text) = match total {
        Value::None => (
            row_sums(&series),
            format!("sumSeries({})", format_path_expressions(&series)),
        ),
        Value::SeriesList(mut totals) => {
            if totals.len() != 1 && totals.len() != series.len() {
                return Err(input_error(
                    inv.name,
                    "the total must be missing, a number, exactly one series, or as many series as the first argument",
                ));
            }
            if totals.len() == series.len() {
                return Ok(Value::SeriesList(matched(series, totals, xff)));
            }
            let mut all: Vec<&mut TimeSeries> =
                series.iter_mut().chain(totals.iter_mut()).collect();
            normalize(&mut all);
            let total = totals.remove(0);
            (row(&total).into_owned(), total.name)
        }
        Value::Int(_) | Value::Float(_) => {
            let t = match total {
                Value::Int(i) => i as f64,
                Value::Float(x) => x,
                _ => 0.0,
            };
            let len = series.first().map_or(0, |s| s.values.len());
            (vec![Some(t); len], total.python_str())
        }
        other => {
            return Err(input_error(
                inv.name,
                format!(
                    "the total must be a series list or a number, not {}",
                    other.kind()
                ),
            ))
        }
    };
    let views = views(&series);
    let out = series
        .iter()
        .zip(&views)
        .map(|(s, view)| {
            let text = if total_text.is_empty() {
                s.path_expression.as_str()
            } else {
                total_text.as_str()
            };
            let name = format!("asPercent({},{text})", s.name);
            let values = zip_longest(view, &total_values, percent);
            let span = Span {
                start: s.start,
                end: s.end,
                step: s.step,
            };
            new_series(name, span, values, xff, None)
        })
        .collect();
    Ok(Value::SeriesList(out))
}

/// `asPercent(a, b)` with as many totals as series: paired after sorting both by
/// name, each pair aligned on its own.
fn matched(mut series: Vec<TimeSeries>, mut totals: Vec<TimeSeries>, xff: f64) -> Vec<TimeSeries> {
    series.sort_by(|a, b| a.name.cmp(&b.name));
    totals.sort_by(|a, b| a.name.cmp(&b.name));
    series
        .into_iter()
        .zip(totals)
        .filter_map(|(mut a, mut b)| pair_percent(&mut a, &mut b, xff))
        .collect()
}

/// One series as a percentage of one total, aligned together.
fn pair_percent(a: &mut TimeSeries, b: &mut TimeSeries, xff: f64) -> Option<TimeSeries> {
    let name = format!("asPercent({},{})", a.name, b.name);
    let span = normalize(&mut [&mut *a, &mut *b])?;
    let values = zip_longest(&row(a), &row(b), percent);
    Some(new_series(name, span, values, xff, None))
}

/// A group's total: the series itself when alone, otherwise `sumSeries(…)` of it
/// (which aligns the group and so sets the last aligned interval).
fn group_total(
    mut group: Vec<TimeSeries>,
    xff: f64,
    last: &mut Option<Span>,
) -> Option<TimeSeries> {
    if group.len() == 1 {
        return group.pop();
    }
    let name = format!("sumSeries({})", format_path_expressions(&group));
    let span = normalize_list(&mut group)?;
    *last = Some(span);
    let values = row_sums(&group);
    Some(new_series(name, span, values, xff, None))
}

/// `asPercent(seriesList, total, *nodes)`: series and totals matched by the key their
/// `nodes` give; a series without a total, or a total without a series, gives an
/// all-null `MISSING` series.
fn by_nodes(
    function: &str,
    series: Vec<TimeSeries>,
    total: Value,
    nodes: &[Value],
    xff: f64,
) -> Result<Vec<TimeSeries>, QueryError> {
    let mut keys: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<TimeSeries>> = HashMap::new();
    for s in series {
        let key = agg_key(&s, nodes);
        if !groups.contains_key(&key) {
            keys.push(key.clone());
        }
        groups.entry(key).or_default().push(s);
    }
    // graphite-web's `start, end, step` locals: the interval of the last alignment
    let mut last: Option<Span> = None;
    let mut totals: HashMap<String, TimeSeries> = HashMap::new();
    match total {
        Value::None => {
            for key in &keys {
                let group = groups.get(key).cloned().unwrap_or_default();
                if let Some(t) = group_total(group, xff, &mut last) {
                    totals.insert(key.clone(), t);
                }
            }
        }
        Value::SeriesList(list) => {
            let mut order: Vec<String> = Vec::new();
            let mut total_groups: HashMap<String, Vec<TimeSeries>> = HashMap::new();
            for t in list {
                let key = agg_key(&t, nodes);
                if !total_groups.contains_key(&key) {
                    order.push(key.clone());
                    if !groups.contains_key(&key) {
                        keys.push(key.clone());
                    }
                }
                total_groups.entry(key).or_default().push(t);
            }
            for key in order {
                let group = total_groups.remove(&key).unwrap_or_default();
                if let Some(t) = group_total(group, xff, &mut last) {
                    totals.insert(key, t);
                }
            }
        }
        _ => return Err(input_error(function, "total must be None or a seriesList")),
    }
    let missing = |last: Option<Span>| {
        last.ok_or_else(|| {
            input_error(
                function,
                "a series has no matching total (or a total no series) and no interval is known",
            )
        })
    };
    let mut out = Vec::new();
    for key in keys {
        let Some(members) = groups.remove(&key) else {
            if let Some(t) = totals.get(&key) {
                let name = format!("asPercent(MISSING,{})", t.name);
                let values = vec![None; row(t).len()];
                out.push(new_series(name, missing(last)?, values, xff, None));
            }
            continue;
        };
        for mut s in members {
            match totals.get(&key) {
                None => {
                    let name = format!("asPercent({},MISSING)", s.name);
                    let values = vec![None; row(&s).len()];
                    out.push(new_series(name, missing(last)?, values, xff, None));
                }
                Some(t) => {
                    let mut t = t.clone();
                    let name = format!("asPercent({},{})", s.name, t.name);
                    let Some(span) = normalize(&mut [&mut s, &mut t]) else {
                        continue;
                    };
                    last = Some(span);
                    let values = zip_longest(&row(&s), &row(&t), percent);
                    out.push(new_series(name, span, values, xff, None));
                }
            }
        }
    }
    Ok(out)
}

/// `divideSeries(dividendSeriesList, divisorSeries)`: each series divided by the one
/// divisor, aligned pair by pair. Without a divisor every value is `None` and the
/// series are named `divideSeries(…,MISSING)`.
pub(super) fn divide_series(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let xff = session.x_files_factor(ctx);
    let dividends = take_series(&mut inv, 0);
    let mut divisors = take_series(&mut inv, 1);
    if divisors.is_empty() {
        let out = dividends
            .into_iter()
            .map(|mut s| {
                s.name = format!("divideSeries({},MISSING)", s.name);
                s.path_expression = s.name.clone();
                s.values.iter_mut().for_each(|v| *v = None);
                s
            })
            .collect();
        return Ok(Value::SeriesList(out));
    }
    if divisors.len() > 1 {
        return Err(input_error(
            inv.name,
            format!(
                "divideSeries second argument must reference exactly 1 series (got {})",
                divisors.len()
            ),
        ));
    }
    let divisor = divisors.remove(0);
    let out = dividends
        .into_iter()
        .filter_map(|mut a| quotient(&mut a, &mut divisor.clone(), xff))
        .collect();
    Ok(Value::SeriesList(out))
}

/// `divideSeriesLists(dividendSeriesList, divisorSeriesList)`: `a[i] / b[i]`.
pub(super) fn divide_series_lists(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let xff = session.x_files_factor(ctx);
    let dividends = take_series(&mut inv, 0);
    let divisors = take_series(&mut inv, 1);
    if dividends.len() != divisors.len() {
        return Err(input_error(
            inv.name,
            format!(
                "dividendSeriesList and divisorSeriesList must have the same number of series (got {} and {})",
                dividends.len(),
                divisors.len()
            ),
        ));
    }
    let out = dividends
        .into_iter()
        .zip(divisors)
        .filter_map(|(mut a, mut b)| quotient(&mut a, &mut b, xff))
        .collect();
    Ok(Value::SeriesList(out))
}

/// One quotient series, `divideSeries(a,b)`.
fn quotient(a: &mut TimeSeries, b: &mut TimeSeries, xff: f64) -> Option<TimeSeries> {
    let name = format!("divideSeries({},{})", a.name, b.name);
    let span = normalize(&mut [&mut *a, &mut *b])?;
    let values = zip_longest(&row(a), &row(b), safe_div);
    Some(new_series(name, span, values, xff, None))
}

/// `weightedAverage(seriesListAvg, seriesListWeight, *nodes)`.
pub(super) fn weighted_average(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let xff = session.x_files_factor(ctx);
    let averages = take_series(&mut inv, 0);
    let weights = take_series(&mut inv, 1);
    let nodes = check_nodes(inv.name, inv.args.all(2))?;
    if averages.len() != weights.len() {
        return Err(input_error(
            inv.name,
            format!(
                "weightedAverage must receive the same number of series for seriesListAvg and seriesListWeight but received respectively {} and {}",
                averages.len(),
                weights.len()
            ),
        ));
    }
    // key → (average, weight): a later series with the same key replaces an earlier one
    let mut order: Vec<String> = Vec::new();
    let mut pairs: HashMap<String, (Option<usize>, Option<usize>)> = HashMap::new();
    for (i, (a, w)) in averages.iter().zip(&weights).enumerate() {
        for (key, is_avg) in [(agg_key(a, &nodes), true), (agg_key(w, &nodes), false)] {
            if !pairs.contains_key(&key) {
                order.push(key.clone());
            }
            let slot = pairs.entry(key).or_default();
            if is_avg {
                slot.0 = Some(i);
            } else {
                slot.1 = Some(i);
            }
        }
    }
    let mut products = Vec::new();
    for key in &order {
        let Some(&(Some(ai), Some(wi))) = pairs.get(key) else {
            continue;
        };
        let (Some(a), Some(w)) = (averages.get(ai), weights.get(wi)) else {
            continue;
        };
        let values = zip_longest(&row(a), &row(w), |x, y| match (x, y) {
            (Some(x), Some(y)) => Some(x * y),
            _ => None,
        });
        let name = format!("product({},{})", w.name, a.name);
        let span = Span {
            start: a.start,
            end: a.end,
            step: a.step,
        };
        products.push(new_series(name, span, values, xff, None));
    }
    if products.is_empty() {
        return Ok(Value::SeriesList(Vec::new()));
    }
    let unique_sorted = |list: &[TimeSeries]| {
        let mut v: Vec<&str> = list.iter().map(|s| s.path_expression.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v.join(",")
    };
    let name = format!(
        "weightedAverage({}, {}, {})",
        unique_sorted(&averages),
        unique_sorted(&weights),
        nodes
            .iter()
            .map(Value::python_str)
            .collect::<Vec<_>>()
            .join(",")
    );
    let (Some(sum_products), Some(sum_weights)) = (
        aggregate(products, "sum", AggFunc::Sum, xff),
        aggregate(weights, "sum", AggFunc::Sum, xff),
    ) else {
        return Ok(Value::SeriesList(Vec::new()));
    };
    let values = zip_longest(&sum_products.values, &sum_weights.values, safe_div);
    let span = Span {
        start: sum_products.start,
        end: sum_products.end,
        step: sum_products.step,
    };
    Ok(Value::SeriesList(vec![new_series(
        name, span, values, xff, None,
    )]))
}
