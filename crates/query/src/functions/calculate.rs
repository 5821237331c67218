//! The rest of graphite-web's "Calculate" group: `aggregateLine`, `linearRegression`,
//! `nPercentile` and `stdev` (the moving windows are in `moving.rs`, Holt-Winters in
//! `holt_winters.rs`), plus `constantLine`, which `aggregateLine` and `threshold`
//! build on.
//!
//! Deliberate differences from graphite-web, each where it fails with a server error or
//! reads the wall clock:
//! - `linearRegression`'s `startSourceAt`/`endSourceAt` are read against the request's
//!   `now` and time zone (graphite-web reads them against the wall clock and its
//!   default zone), and an epoch given as a number is accepted (graphite-web fails).
//!   The times in its name are the request's epochs (graphite-web passes them through
//!   `time.mktime`, which shifts them when the request's zone is not the server's).
//! - `nPercentile(x, 0)` and `stdev(x, -1)` are refused as bad input (graphite-web
//!   fails on an assertion and an index error).
//! - `stdev` gives infinity where squaring a value overflows (graphite-web fails).
//!   Squares are the C library's `pow(x, 2)`, as Python's `x ** 2` is: it is not
//!   always `x * x`.

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{percentile, row, AggFunc};
use crate::functions::args::{eval_first_arg, input_error, take_series};
use crate::functions::params::{DefaultValue as D, Param, ParamType as T};
use crate::functions::{FunctionDef, Invocation};
use crate::py;
use crate::py::format::format_g;
use crate::py::number::{py_square, py_sum};
use crate::series::{SeriesOptions, TimeSeries};

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();

static AGGREGATE_LINE_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("func", T::AggFunc).default(D::Str("average")),
    Param::new("keepStep", T::Boolean).default(D::Bool(false)),
];
static LINEAR_REGRESSION_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("startSourceAt", T::Date),
    Param::new("endSourceAt", T::Date),
];
static N_PERCENTILE_PARAMS: [Param; 2] = [SERIES, Param::new("n", T::Float).required()];
static STDEV_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("points", T::Integer).required(),
    Param::new("windowTolerance", T::Float).default(D::Float(0.1)),
];
static CONSTANT_LINE_PARAMS: [Param; 1] = [Param::new("value", T::Float).required()];

/// `aggregateLine`, `linearRegression`, `nPercentile`, `stdev`, `constantLine`.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    FunctionDef {
        name: "aggregateLine",
        group: "Calculate",
        description: "A horizontal line at an aggregate of each series.\n\n\
            The aggregate (average by default; any aggregation name) is taken over the whole \
            series and drawn across the graph, or with keepStep=true at every point of the \
            series' own step. The value appears in the name.",
        params: &AGGREGATE_LINE_PARAMS,
        aggregator: false,
        run: aggregate_line,
    },
    FunctionDef {
        name: "linearRegression",
        group: "Calculate",
        description: "The least-squares straight line through each series.\n\n\
            The line is fitted on the points between startSourceAt and endSourceAt \
            (the request's interval by default; any from/until form) and drawn over the \
            series' own interval.",
        params: &LINEAR_REGRESSION_PARAMS,
        aggregator: false,
        run: linear_regression,
    },
    FunctionDef {
        name: "nPercentile",
        group: "Calculate",
        description: "A horizontal line at the n-th percentile of each series.\n\n\
            The percentile uses the nearest-rank method over the known points; series with \
            no known point are dropped.",
        params: &N_PERCENTILE_PARAMS,
        aggregator: false,
        run: n_percentile,
    },
    FunctionDef {
        name: "stdev",
        group: "Calculate",
        description: "The standard deviation over a sliding window of points.\n\n\
            A point is null when the window's share of known points is below \
            windowTolerance (0.1 by default).",
        params: &STDEV_PARAMS,
        aggregator: false,
        run: stdev,
    },
    FunctionDef {
        name: "constantLine",
        group: "Special",
        description: "A horizontal line at a value across the whole graph.\n\n\
            Three points: at the start, the middle and the end of the request's interval.",
        params: &CONSTANT_LINE_PARAMS,
        aggregator: false,
        run: constant_line_fn,
    },
];

/// graphite-web's `constantLine`: named after the value (`str(value)`), three points
/// spanning the request's interval, the xFilesFactor in force (`xff`).
pub(crate) fn constant_line(
    ctx: &RequestContext,
    xff: f64,
    value: Option<f64>,
    shown: &str,
) -> TimeSeries {
    // graphite-web's int((end - start) / 2.0); a one-second request would give a step
    // of 0, which graphite-web then fails to render
    let step = (((ctx.until - ctx.from) as f64 / 2.0) as i64).max(1);
    let mut s = TimeSeries::new(shown, ctx.from, ctx.until, step, vec![value; 3]);
    s.path_expression = format!("constantLine({shown})");
    s.x_files_factor = xff;
    s
}

fn constant_line_fn(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let value = inv.args.float(0).unwrap_or(0.0);
    let xff = session.x_files_factor(ctx);
    Ok(Value::SeriesList(vec![constant_line(
        ctx,
        xff,
        Some(value),
        &py::float_repr(value),
    )]))
}

fn agg_func(inv: &Invocation<'_>, index: usize) -> Result<AggFunc, QueryError> {
    let name = inv.args.str(index).unwrap_or("average");
    AggFunc::from_name(name).ok_or_else(|| {
        input_error(
            inv.name,
            format!("Unsupported aggregation function: {name}"),
        )
    })
}

fn aggregate_line(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let func = agg_func(&inv, 1)?;
    let xff = session.x_files_factor(ctx);
    let keep_step = inv.args.bool(2).unwrap_or(false);
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for s in series {
        let value = func.apply(&row(&s));
        // Python's str() of the value: count is an int
        let shown = match value {
            None => "None".to_string(),
            Some(v) if func.is_integer() => format!("{}", v as i64),
            Some(v) => py::float_repr(v),
        };
        let name = match value {
            Some(v) => format!("aggregateLine({}, {})", s.name, format_g(v)),
            None => format!("aggregateLine({}, None)", s.name),
        };
        let line = if keep_step {
            let len = s.values.len();
            TimeSeries {
                path_expression: name.clone(),
                name,
                values: vec![value; len],
                values_per_point: 1,
                options: SeriesOptions::default(),
                ..s
            }
        } else {
            let mut line = constant_line(ctx, xff, value, &shown);
            line.path_expression = name.clone();
            line.name = name;
            line
        };
        out.push(line);
    }
    Ok(Value::SeriesList(out))
}

/// A `date` argument: a time expression, or an epoch given as a number.
fn date_arg(
    inv: &Invocation<'_>,
    index: usize,
    ctx: &RequestContext,
) -> Result<Option<i64>, QueryError> {
    match inv.args.get(index) {
        None | Some(Value::None) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(*i)),
        Some(Value::Float(x)) if x.is_finite() => Ok(Some(*x as i64)),
        Some(Value::Str(s)) => crate::attime::parse_at_time(s, ctx.tz, ctx.now)
            .map(Some)
            .map_err(|e| input_error(inv.name, e.to_string())),
        Some(other) => Err(input_error(
            inv.name,
            format!("{} is not a time", other.kind()),
        )),
    }
}

/// `_linearRegressionAnalysis`: (factor, offset) of the least-squares line through the
/// known points, or `None` when they do not determine one.
fn regression(source: &TimeSeries) -> Option<(f64, f64)> {
    let values = row(source);
    let known = || {
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i as i128, v)))
    };
    let n = known().count() as i128;
    let sum_i: i128 = known().map(|(i, _)| i).sum();
    let sum_v = py_sum(known().map(|(_, v)| v)).unwrap_or(0.0);
    let sum_ii: i128 = known().map(|(i, _)| i * i).sum();
    let sum_iv = py_sum(known().map(|(i, v)| i as f64 * v)).unwrap_or(0.0);
    let denominator = (n * sum_ii - sum_i * sum_i) as f64;
    if denominator == 0.0 || source.step == 0 {
        return None;
    }
    let factor = (n as f64 * sum_iv - sum_i as f64 * sum_v) / denominator / source.step as f64;
    let offset = (sum_ii as f64 * sum_v - sum_iv * sum_i as f64) / denominator
        - factor * source.start as f64;
    Some((factor, offset))
}

fn linear_regression(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let from = date_arg(&inv, 1, ctx)?.unwrap_or(ctx.from);
    let until = date_arg(&inv, 2, ctx)?.unwrap_or(ctx.until);
    let source_ctx = ctx.with_interval(from, until);
    let sources = eval_first_arg(session, &source_ctx, &inv)?;
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    // graphite-web pairs them by position
    for (source, mut s) in sources.iter().zip(series) {
        s.tags.set("linearRegressions", &format!("{from}, {until}"));
        let name = format!("linearRegression({}, {from}, {until})", s.name);
        let Some((factor, offset)) = regression(source) else {
            continue;
        };
        let values = (0..s.values.len() as i64)
            .map(|i| Some(offset + (s.start + i * s.step) as f64 * factor))
            .collect();
        let mut line = TimeSeries::new(name.clone(), s.start, s.end, s.step, values);
        line.tags = s.tags;
        line.x_files_factor = s.x_files_factor;
        out.push(line);
    }
    Ok(Value::SeriesList(out))
}

fn n_percentile(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let n = inv.args.float(1).unwrap_or(0.0);
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for s in series {
        if let Some(line) = percentile_line(inv.name, s, n)? {
            out.push(line);
        }
    }
    Ok(Value::SeriesList(out))
}

/// `nPercentile` of one series: `None` when it has no known value. The `nPercentile`
/// tag is also set on `s`'s tags, which graphite-web shares with the result.
pub(crate) fn percentile_line(
    function: &str,
    mut s: TimeSeries,
    n: f64,
) -> Result<Option<TimeSeries>, QueryError> {
    if n == 0.0 || n.is_nan() {
        return Err(input_error(
            function,
            "the requested percent must be greater than 0",
        ));
    }
    let known: Vec<Option<f64>> = s.consolidated().filter(Option::is_some).collect();
    if known.is_empty() {
        return Ok(None);
    }
    let Some(value) = percentile(&known, n, false).map_err(|m| input_error(function, m))? else {
        return Ok(None);
    };
    s.tags.set("nPercentile", &py::float_repr(n));
    let name = format!("nPercentile({}, {})", s.name, format_g(n));
    let count = if s.step != 0 {
        ((s.end - s.start) as f64 / s.step as f64) as i64
    } else {
        0
    };
    Ok(Some(TimeSeries {
        path_expression: name.clone(),
        name,
        values: vec![Some(value); usize::try_from(count).unwrap_or(0)],
        values_per_point: 1,
        options: SeriesOptions::default(),
        ..s
    }))
}

fn stdev(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let points = inv.args.int(1).unwrap_or(0);
    let tolerance = inv.args.float(2).unwrap_or(0.1);
    // graphite-web reads past the end for a negative window (and fails); a window of
    // 0 nets every point out and gives nulls, as there
    if points < 0 {
        return Err(input_error(
            inv.name,
            format!("points must not be negative, not {points}"),
        ));
    }
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        s.tags.set("stdev", &points.to_string());
        let name = format!("stdev({},{points})", s.name);
        let window = points as usize;
        let mut valid: i64 = 0;
        let mut sum = 0.0;
        let mut sum_sq = 0.0;
        let mut values = Vec::with_capacity(s.values.len());
        for (index, new) in s.consolidated().enumerate() {
            let dropped = if index < window {
                None
            } else {
                s.values.get(index - window).copied().flatten()
            };
            if let Some(d) = dropped {
                valid -= 1;
                sum -= d;
                sum_sq -= py_square(d);
            }
            if let Some(v) = new {
                valid += 1;
                sum += v;
                sum_sq += py_square(v);
            }
            let value = if valid > 0 && valid as f64 / points as f64 >= tolerance {
                let radicand = valid as f64 * sum_sq - py_square(sum);
                // math.sqrt of a negative raises ValueError, which graphite-web turns into None
                if radicand < 0.0 {
                    None
                } else {
                    Some(radicand.sqrt() / valid as f64)
                }
            } else {
                None
            };
            values.push(value);
        }
        out.push(TimeSeries {
            path_expression: name.clone(),
            name,
            values,
            values_per_point: 1,
            options: SeriesOptions::default(),
            ..s
        });
    }
    Ok(Value::SeriesList(out))
}
