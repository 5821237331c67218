//! Moving-window functions (graphite-web's "Calculate" group): `movingWindow` and its
//! shorthands `movingAverage`, `movingSum`, `movingMin`, `movingMax`, `movingMedian`,
//! and `exponentialMovingAverage`.
//!
//! A window of N points (or of an interval such as `'5min'`) needs N points before the
//! first one shown, so these functions evaluate their first argument again over an
//! interval that starts a window earlier, as graphite-web does with a copy of the
//! request context. Each window is aggregated afresh, in Python's order of operations,
//! so sums are bit-identical to graphite-web's (a running sum would not be).

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::AggFunc;
use crate::functions::args::{eval_first_arg, input_error};
use crate::functions::params::{DefaultValue as D, Param, ParamType as T};
use crate::functions::{FunctionDef, Invocation};
use crate::py::number::{py_int, round6};
use crate::series::{SeriesOptions, TimeSeries};

const WINDOW_SUGGESTIONS: &[D] = &[
    D::Int(5),
    D::Int(7),
    D::Int(10),
    D::Str("1min"),
    D::Str("5min"),
    D::Str("10min"),
    D::Str("30min"),
    D::Str("1hour"),
];

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();
const WINDOW: Param = Param::new("windowSize", T::IntOrInterval)
    .required()
    .suggestions(WINDOW_SUGGESTIONS);
const XFF: Param = Param::new("xFilesFactor", T::Float);

static SHORTHAND_PARAMS: [Param; 3] = [SERIES, WINDOW, XFF];
static WINDOW_PARAMS: [Param; 4] = [
    SERIES,
    WINDOW,
    Param::new("func", T::AggFunc).default(D::Str("average")),
    XFF,
];
static EMA_PARAMS: [Param; 2] = [SERIES, WINDOW];

/// The moving-window functions.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    FunctionDef {
        name: "movingWindow",
        group: "Calculate",
        description: "Applies an aggregation function to a sliding window of past points.\n\n\
            The window is a number of points or an interval such as '5min'; the function is \
            any aggregation name (average, median, sum, min, max, …). A point is null when \
            fewer than xFilesFactor of the window's points are known. Data before `from` is \
            fetched so that the first points have full windows.",
        params: &WINDOW_PARAMS,
        aggregator: false,
        run: moving_window,
    },
    shorthand(
        "movingAverage",
        "The average of a sliding window of past points.\n\n\
        The window is a number of points or an interval such as '5min'. Shorthand for \
        movingWindow(seriesList, windowSize, 'average').",
        moving_average,
    ),
    shorthand(
        "movingSum",
        "The sum of a sliding window of past points.\n\n\
        Shorthand for movingWindow(seriesList, windowSize, 'sum').",
        moving_sum,
    ),
    shorthand(
        "movingMin",
        "The minimum of a sliding window of past points.\n\n\
        Shorthand for movingWindow(seriesList, windowSize, 'min').",
        moving_min,
    ),
    shorthand(
        "movingMax",
        "The maximum of a sliding window of past points.\n\n\
        Shorthand for movingWindow(seriesList, windowSize, 'max').",
        moving_max,
    ),
    shorthand(
        "movingMedian",
        "The median of a sliding window of past points.\n\n\
        Shorthand for movingWindow(seriesList, windowSize, 'median').",
        moving_median,
    ),
    FunctionDef {
        name: "exponentialMovingAverage",
        group: "Calculate",
        description: "An exponential moving average over a window of points or an interval.\n\n\
            Each point is c * value + (1 - c) * previous, with c = 2 / (window + 1), rounded to \
            six decimals; the first point is the plain average of the first window. Null \
            values give null points without resetting the average.",
        params: &EMA_PARAMS,
        aggregator: false,
        run: exponential_moving_average,
    },
];

const fn shorthand(
    name: &'static str,
    description: &'static str,
    run: crate::functions::FunctionImpl,
) -> FunctionDef {
    FunctionDef {
        name,
        group: "Calculate",
        description,
        params: &SHORTHAND_PARAMS,
        aggregator: false,
        run,
    }
}

fn moving_average(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    window(s, ctx, inv, "average", 2)
}

fn moving_sum(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    window(s, ctx, inv, "sum", 2)
}

fn moving_min(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    window(s, ctx, inv, "min", 2)
}

fn moving_max(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    window(s, ctx, inv, "max", 2)
}

fn moving_median(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    window(s, ctx, inv, "median", 2)
}

fn moving_window(
    s: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let func = inv.args.str(2).unwrap_or("average").to_string();
    window(s, ctx, inv, &func, 3)
}

/// A window size as given: points, or an interval in seconds.
enum WindowSize {
    Points(i64),
    Seconds(i64),
}

/// graphite-web reads `windowSize` as an interval when it is a string and as
/// `int(windowSize)` otherwise. A negative count is answered by `movingWindow` and its
/// shorthands as graphite-web answers it (see [`windows`]); `exponentialMovingAverage`
/// refuses it (`negative_ok` false).
fn window_size(
    inv: &Invocation<'_>,
    value: &Value,
    negative_ok: bool,
) -> Result<WindowSize, QueryError> {
    let points = match value {
        Value::Str(text) => {
            let seconds = crate::attime::parse_time_offset(text)
                .map_err(|e| input_error(inv.name, e.to_string()))?;
            return Ok(WindowSize::Seconds(seconds.abs()));
        }
        Value::Int(i) => *i,
        Value::Float(x) if x.is_finite() => py_int(*x),
        Value::Bool(b) => i64::from(*b),
        other => {
            return Err(input_error(
                inv.name,
                format!(
                    "windowSize must be a number of points or an interval, not {}",
                    other.kind()
                ),
            ))
        }
    };
    if points < 0 && !negative_ok {
        return Err(input_error(
            inv.name,
            format!("windowSize {points} is negative"),
        ));
    }
    Ok(WindowSize::Points(points))
}

/// `movingWindow` with the aggregation `func`; `xff_index` is where the xFilesFactor
/// parameter sits.
fn window(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
    func: &str,
    xff_index: usize,
) -> Result<Value, QueryError> {
    let Some(Value::SeriesList(series)) = inv.args.get(0) else {
        return Ok(Value::SeriesList(Vec::new()));
    };
    if series.is_empty() {
        return Ok(Value::SeriesList(Vec::new()));
    }
    let size_value = inv.args.get(1).cloned().unwrap_or(Value::None);
    let size = window_size(&inv, &size_value, true)?;
    let agg = AggFunc::from_name(func).ok_or_else(|| {
        input_error(
            inv.name,
            format!("Unsupported aggregation function: {func}"),
        )
    })?;
    let max_step = series.iter().map(|s| s.step).max().unwrap_or(1);
    let preview = match size {
        WindowSize::Seconds(s) => s,
        WindowSize::Points(n) => max_step.saturating_mul(n),
    };
    let xff = inv.args.float(xff_index);
    let wider = ctx.with_interval(ctx.from.saturating_sub(preview), ctx.until);
    let bootstrap = eval_first_arg(session, &wider, &inv)?;

    let tag = format!("moving{}", capitalize(func));
    let shown = size_value.python_str();
    // one series after the other: spreading them over threads showed no gain on the
    // two shared cores this was measured on (see functions/perf.rs)
    let out = bootstrap.into_iter().map(|mut s| {
        let (name, points) = match size {
            WindowSize::Seconds(_) => (
                format!("{tag}({},\"{shown}\")", s.name),
                if s.step > 0 { preview / s.step } else { 0 },
            ),
            WindowSize::Points(n) => (format!("{tag}({},{shown})", s.name), n),
        };
        s.tags.set(&tag, &shown);
        let effective_xff = xff.unwrap_or(s.x_files_factor);
        let values = windows(&s.values, points, effective_xff, agg);
        copy_series(s, name, preview, values)
    });
    Ok(Value::SeriesList(out.collect()))
}

/// graphite-web's loop: `for i in range(windowPoints + 1, len + 1)`, each window
/// `series[i - windowPoints:i]` aggregated when enough of it is known
/// (`len(nonNull) / windowPoints >= xFilesFactor`). A negative `windowPoints` is
/// followed to the letter: Python's slices count negative bounds from the end, so the
/// first `-windowPoints - 1` windows are `series[i - windowPoints:i]` from the end and
/// the rest empty; their ratio is negative, so only a negative xFilesFactor lets one
/// through.
fn windows(values: &[Option<f64>], points: i64, xff: f64, agg: AggFunc) -> Vec<Option<f64>> {
    let len = i64::try_from(values.len()).unwrap_or(i64::MAX);
    let bound = |i: i64| -> usize {
        let i = if i < 0 { (i + len).max(0) } else { i.min(len) };
        usize::try_from(i).unwrap_or(0)
    };
    let first = points.saturating_add(1);
    let count = usize::try_from(len.saturating_add(1).saturating_sub(first)).unwrap_or(0);
    let width = usize::try_from(points.unsigned_abs())
        .unwrap_or(usize::MAX)
        .min(values.len());
    let mut out = Vec::with_capacity(count);
    let mut scratch: Vec<Option<f64>> = Vec::with_capacity(width);
    let mut sort_buf: Vec<f64> = Vec::with_capacity(width);
    for i in first..=len {
        scratch.clear();
        let (lo, hi) = (bound(i.saturating_sub(points)), bound(i));
        if lo < hi {
            scratch.extend(values[lo..hi].iter().filter(|v| v.is_some()));
        }
        let known = scratch.len();
        let enough = known > 0 && points != 0 && (known as f64 / points as f64) >= xff;
        out.push(if enough {
            agg.apply_buf(&scratch, &mut sort_buf)
        } else {
            None
        });
    }
    out
}

/// graphite-web's `series.copy(name=…, start=series.start + preview, values=…)`: the
/// path expression becomes the new name, options are not carried over, and the
/// series is read unconsolidated again.
fn copy_series(s: TimeSeries, name: String, preview: i64, values: Vec<Option<f64>>) -> TimeSeries {
    TimeSeries {
        path_expression: name.clone(),
        name,
        start: s.start.saturating_add(preview),
        values,
        values_per_point: 1,
        options: SeriesOptions::default(),
        ..s
    }
}

/// Python's `str.capitalize()`: the first character upper-cased, the rest lower-cased.
fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

fn exponential_moving_average(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let Some(Value::SeriesList(series)) = inv.args.get(0) else {
        return Ok(Value::SeriesList(Vec::new()));
    };
    if series.is_empty() {
        return Ok(Value::SeriesList(Vec::new()));
    }
    let size_value = inv.args.get(1).cloned().unwrap_or(Value::None);
    let size = window_size(&inv, &size_value, false)?;
    let max_step = series.iter().map(|s| s.step).max().unwrap_or(1);
    let (preview, constant) = match size {
        WindowSize::Seconds(s) => (s, 2.0 / (s as f64 + 1.0)),
        WindowSize::Points(n) => (max_step.saturating_mul(n), 2.0 / (n as f64 + 1.0)),
    };
    let wider = ctx.with_interval(ctx.from.saturating_sub(preview), ctx.until);
    let bootstrap = eval_first_arg(session, &wider, &inv)?;
    let shown = size_value.python_str();
    let mut out = Vec::with_capacity(bootstrap.len());
    for mut s in bootstrap {
        let (name, points) = match size {
            WindowSize::Seconds(_) => (
                format!("exponentialMovingAverage({},\"{shown}\")", s.name),
                if s.step > 0 { preview / s.step } else { 0 },
            ),
            WindowSize::Points(n) => (format!("exponentialMovingAverage({},{shown})", s.name), n),
        };
        s.tags.set("exponentialMovingAverage", &shown);
        let points = usize::try_from(points).unwrap_or(0).min(s.values.len());
        // safeAvg(series[:windowPoints]) or 0
        let mut ema = AggFunc::Average.apply(&s.values[..points]).unwrap_or(0.0);
        let mut values = Vec::with_capacity(s.values.len() + 1 - points);
        values.push(Some(round6(ema)));
        for v in &s.values[points..] {
            match v {
                Some(v) => {
                    ema = constant * v + (1.0 - constant) * ema;
                    values.push(Some(round6(ema)));
                }
                None => values.push(None),
            }
        }
        out.push(copy_series(s, name, preview, values));
    }
    Ok(Value::SeriesList(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_capitalize() {
        assert_eq!(capitalize("average"), "Average");
        assert_eq!(capitalize("avg_zero"), "Avg_zero");
        assert_eq!(capitalize("rangeOf"), "Rangeof");
        assert_eq!(capitalize(""), "");
    }
}
