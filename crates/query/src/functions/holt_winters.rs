//! Holt-Winters forecasting (graphite-web's "Calculate" group): `holtWintersForecast`,
//! `holtWintersConfidenceBands`, `holtWintersConfidenceArea`, `holtWintersAberration`.
//!
//! The model is graphite-web's (additive triple exponential smoothing with fixed
//! alpha = gamma = 0.1, beta = 0.0035 and a season of `seasonality`), bootstrapped on
//! `bootstrapInterval` (7 days) of data fetched before `from`: the first argument is
//! evaluated again over the wider interval, and the first `bootstrapInterval / step`
//! points of the results are dropped. Arithmetic follows graphite-web operation by
//! operation.
//!
//! Two deliberate differences, both where graphite-web fails with a server error:
//! - `holtWintersAberration` when the bootstrap reads a coarser archive than the series
//!   (the wider interval no longer fits the fine archive's retention): graphite-web
//!   compares point `i` of the series with point `i` of a band of another step and
//!   runs off its end. sumi compares each point with the band point covering the same
//!   time. With equal steps the two agree.
//! - `holtWintersConfidenceArea` of several series: graphite-web asserts that there is
//!   exactly one; sumi draws one area per series.

use std::collections::HashMap;

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::args::{eval_first_arg, input_error, take_series};
use crate::functions::params::{DefaultValue as D, OnFloat, Param, ParamType as T};
use crate::functions::{FunctionDef, Invocation};
use crate::series::TimeSeries;

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();
const DELTA: Param = Param::new("delta", T::Integer)
    .default(D::Int(3))
    .on_float(OnFloat::Keep);
const BOOTSTRAP: Param = Param::new("bootstrapInterval", T::Interval)
    .default(D::Str("7d"))
    .suggestions(&[D::Str("7d"), D::Str("30d")]);
const SEASONALITY: Param = Param::new("seasonality", T::Interval)
    .default(D::Str("1d"))
    .suggestions(&[D::Str("1d"), D::Str("7d")]);

static FORECAST_PARAMS: [Param; 3] = [SERIES, BOOTSTRAP, SEASONALITY];
static BAND_PARAMS: [Param; 4] = [SERIES, DELTA, BOOTSTRAP, SEASONALITY];

/// The Holt-Winters functions.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    FunctionDef {
        name: "holtWintersForecast",
        group: "Calculate",
        description: "The Holt-Winters forecast of each series.\n\n\
            A seasonal model (season = seasonality, one day by default) is trained on \
            bootstrapInterval of data before `from` (seven days by default) and the series; \
            each point is the value the model predicted for it.",
        params: &FORECAST_PARAMS,
        aggregator: false,
        run: forecast,
    },
    FunctionDef {
        name: "holtWintersConfidenceBands",
        group: "Calculate",
        description: "Upper and lower Holt-Winters confidence bands of each series.\n\n\
            The bands are the forecast plus and minus delta times the predicted deviation. \
            Returns two series per input: holtWintersConfidenceLower(…) then \
            holtWintersConfidenceUpper(…).",
        params: &BAND_PARAMS,
        aggregator: false,
        run: confidence_bands,
    },
    FunctionDef {
        name: "holtWintersConfidenceArea",
        group: "Calculate",
        description: "The Holt-Winters confidence bands drawn as a filled area.\n\n\
            Like holtWintersConfidenceBands, with the two bands set up as areaBetween does \
            (the lower one invisible), so a graph shades the expected range.",
        params: &BAND_PARAMS,
        aggregator: false,
        run: confidence_area,
    },
    FunctionDef {
        name: "holtWintersAberration",
        group: "Calculate",
        description: "How far each point lies outside its Holt-Winters confidence bands.\n\n\
            Zero inside the bands (and for null points); the distance above the upper band \
            as a positive number, below the lower band as a negative one.",
        params: &BAND_PARAMS,
        aggregator: false,
        run: aberration,
    },
];

const ALPHA: f64 = 0.1;
const GAMMA: f64 = 0.1;
const BETA: f64 = 0.0035;

/// `holtWintersAnalysis`: the prediction and the deviation of every point.
struct Analysis {
    predictions: Vec<Option<f64>>,
    deviations: Vec<f64>,
}

/// Runs the model over `values` with a season of `season` points. `Err` where
/// graphite-web fails: a season shorter than two points reads a seasonal term that
/// does not exist yet.
fn analyse(values: &[Option<f64>], season: i64) -> Result<Analysis, String> {
    let n = values.len();
    let mut intercepts: Vec<Option<f64>> = Vec::with_capacity(n);
    let mut slopes: Vec<f64> = Vec::with_capacity(n);
    let mut seasonals: Vec<f64> = Vec::with_capacity(n);
    let mut predictions: Vec<Option<f64>> = Vec::with_capacity(n);
    let mut deviations: Vec<f64> = Vec::with_capacity(n);
    let too_short = || "the seasonality must span at least two points of the series".to_string();
    // getLastSeasonal / getLastDeviation: the value a season back, 0 before the first
    let back = |list: &[f64], i: usize| -> Result<f64, String> {
        let j = i as i64 - season;
        if j < 0 {
            return Ok(0.0);
        }
        list.get(j as usize).copied().ok_or_else(too_short)
    };
    let mut next_pred: Option<f64> = None;
    for (i, actual) in values.iter().enumerate() {
        let Some(actual) = *actual else {
            intercepts.push(None);
            slopes.push(0.0);
            seasonals.push(0.0);
            predictions.push(next_pred);
            deviations.push(0.0);
            next_pred = None;
            continue;
        };
        let (last_intercept, last_slope, prediction) = if i == 0 {
            (actual, 0.0, Some(actual))
        } else {
            let last_intercept = intercepts.last().copied().flatten().unwrap_or(actual);
            (
                last_intercept,
                slopes.last().copied().unwrap_or(0.0),
                next_pred,
            )
        };
        let last_seasonal = back(&seasonals, i)?;
        let next_last_seasonal = back(&seasonals, i + 1)?;
        let last_seasonal_dev = back(&deviations, i)?;
        let intercept =
            ALPHA * (actual - last_seasonal) + (1.0 - ALPHA) * (last_intercept + last_slope);
        let slope = BETA * (intercept - last_intercept) + (1.0 - BETA) * last_slope;
        let seasonal = GAMMA * (actual - intercept) + (1.0 - GAMMA) * last_seasonal;
        next_pred = Some(intercept + slope + next_last_seasonal);
        let deviation =
            GAMMA * (actual - prediction.unwrap_or(0.0)).abs() + (1.0 - GAMMA) * last_seasonal_dev;
        intercepts.push(Some(intercept));
        slopes.push(slope);
        seasonals.push(seasonal);
        predictions.push(prediction);
        deviations.push(deviation);
    }
    Ok(Analysis {
        predictions,
        deviations,
    })
}

/// An interval argument in seconds (`parseTimeOffset`, total seconds, sign kept).
fn seconds(inv: &Invocation<'_>, index: usize, default: &str) -> Result<i64, QueryError> {
    let text = inv.args.str(index).unwrap_or(default);
    crate::attime::parse_time_offset(text).map_err(|e| input_error(inv.name, e.to_string()))
}

/// Python's `values[start:]` for a possibly negative start.
fn tail<T: Clone>(values: &[T], start: i64) -> Vec<T> {
    let len = values.len() as i64;
    let from = if start < 0 {
        (len + start).max(0)
    } else {
        start.min(len)
    };
    values[from as usize..].to_vec()
}

/// The re-evaluated series with their analyses, and the bootstrap length.
struct Bootstrapped {
    preview: i64,
    runs: Vec<(TimeSeries, Analysis)>,
}

fn bootstrap(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: &Invocation<'_>,
    bootstrap_index: usize,
) -> Result<Bootstrapped, QueryError> {
    let preview = seconds(inv, bootstrap_index, "7d")?;
    let seasonality = seconds(inv, bootstrap_index + 1, "1d")?;
    let wider = ctx.with_interval(ctx.from.saturating_sub(preview), ctx.until);
    let series = eval_first_arg(session, &wider, inv)?;
    let mut runs = Vec::with_capacity(series.len());
    for mut s in series {
        if s.step <= 0 {
            continue;
        }
        let values: Vec<Option<f64>> = s.consolidated().collect();
        let analysis = analyse(&values, seasonality.div_euclid(s.step))
            .map_err(|m| input_error(inv.name, m))?;
        s.tags.set("holtWintersForecast", "1");
        s.tags.set("holtWintersDeviation", "1");
        runs.push((s, analysis));
    }
    Ok(Bootstrapped { preview, runs })
}

fn forecast(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let boot = bootstrap(session, ctx, &inv, 1)?;
    let preview = boot.preview;
    let out = boot
        .runs
        .into_iter()
        .map(|(s, analysis)| {
            let window = preview.div_euclid(s.step);
            let name = format!("holtWintersForecast({})", s.name);
            derived(
                &s,
                name,
                s.start.saturating_add(preview),
                tail(&analysis.predictions, window),
            )
        })
        .collect();
    Ok(Value::SeriesList(out))
}

/// A new series as graphite-web's `TimeSeries(name, start, series.end, series.step,
/// values, tags=series.tags, xFilesFactor=series.xFilesFactor)`.
fn derived(s: &TimeSeries, name: String, start: i64, values: Vec<Option<f64>>) -> TimeSeries {
    let mut out = TimeSeries::new(name, start, s.end, s.step, values);
    out.tags = s.tags.clone();
    out.x_files_factor = s.x_files_factor;
    out
}

/// `holtWintersConfidenceBands` for every re-evaluated series: (lower, upper).
fn bands(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: &Invocation<'_>,
) -> Result<Vec<(TimeSeries, TimeSeries)>, QueryError> {
    let delta = inv.args.float(1).unwrap_or(3.0);
    let boot = bootstrap(session, ctx, inv, 2)?;
    let preview = boot.preview;
    let mut out = Vec::with_capacity(boot.runs.len());
    for (mut s, analysis) in boot.runs {
        let window = preview.div_euclid(s.step);
        let forecast = tail(&analysis.predictions, window);
        let deviation = tail(&analysis.deviations, window);
        let (mut upper, mut lower) = (
            Vec::with_capacity(forecast.len()),
            Vec::with_capacity(forecast.len()),
        );
        for (f, d) in forecast.iter().zip(&deviation) {
            match f {
                Some(f) => {
                    let scaled = delta * d;
                    upper.push(Some(f + scaled));
                    lower.push(Some(f - scaled));
                }
                None => {
                    upper.push(None);
                    lower.push(None);
                }
            }
        }
        s.tags.set("holtWintersConfidenceUpper", "1");
        s.tags.set("holtWintersConfidenceLower", "1");
        let start = s.start.saturating_add(preview);
        let mut lo = derived(
            &s,
            format!("holtWintersConfidenceLower({})", s.name),
            start,
            lower,
        );
        let mut up = derived(
            &s,
            format!("holtWintersConfidenceUpper({})", s.name),
            start,
            upper,
        );
        lo.path_expression = s.path_expression.clone();
        up.path_expression = s.path_expression.clone();
        out.push((lo, up));
    }
    Ok(out)
}

fn confidence_bands(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let pairs = bands(session, ctx, &inv)?;
    Ok(Value::SeriesList(
        pairs.into_iter().flat_map(|(lo, up)| [lo, up]).collect(),
    ))
}

fn confidence_area(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let pairs = bands(session, ctx, &inv)?;
    let mut out = Vec::with_capacity(pairs.len() * 2);
    for (mut lower, mut upper) in pairs {
        // areaBetween(bands), then renamed
        let name = format!("areaBetween({})", upper.path_expression)
            .replace("areaBetween", "holtWintersConfidenceArea");
        lower.options.stacked = true;
        lower.options.invisible = true;
        upper.options.stacked = true;
        for s in [&mut lower, &mut upper] {
            s.tags.set("holtWintersConfidenceArea", "1");
            s.name = name.clone();
            s.path_expression = name.clone();
        }
        out.push(lower);
        out.push(upper);
    }
    Ok(Value::SeriesList(out))
}

fn aberration(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let pairs = bands(session, ctx, &inv)?;
    let mut by_name: HashMap<String, TimeSeries> = HashMap::with_capacity(pairs.len() * 2);
    for (lo, up) in pairs {
        by_name.insert(lo.name.clone(), lo);
        by_name.insert(up.name.clone(), up);
    }
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let lower = by_name.get(&format!("holtWintersConfidenceLower({})", s.name));
        let upper = by_name.get(&format!("holtWintersConfidenceUpper({})", s.name));
        let values: Vec<Option<f64>> = (0..s.values.len())
            .map(|i| {
                let Some(v) = s.values[i] else {
                    return Some(0.0);
                };
                let t = s.start + i as i64 * s.step;
                let band_at =
                    |band: Option<&TimeSeries>| band.and_then(|b| band_value(b, &s, i, t));
                if let Some(u) = band_at(upper).filter(|u| v > *u) {
                    return Some(v - u);
                }
                if let Some(l) = band_at(lower).filter(|l| v < *l) {
                    return Some(v - l);
                }
                Some(0.0)
            })
            .collect();
        s.tags.set("holtWintersAberration", "1");
        let name = format!("holtWintersAberration({})", s.name);
        out.push(derived(&s, name, s.start, values));
    }
    Ok(Value::SeriesList(out))
}

/// The band's value for point `i` (at time `t`) of `series`: by position when the
/// steps agree (graphite-web's reading), by time when they do not (see the module
/// documentation).
fn band_value(band: &TimeSeries, series: &TimeSeries, i: usize, t: i64) -> Option<f64> {
    if band.step == series.step {
        return band.values.get(i).copied().flatten();
    }
    if band.step <= 0 || t < band.start {
        return None;
    }
    let j = usize::try_from((t - band.start) / band.step).ok()?;
    band.values.get(j).copied().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_season_shorter_than_two_points_is_refused() {
        assert!(analyse(&[Some(1.0), Some(2.0)], 1).is_err());
        assert!(analyse(&[None, None], 1).is_ok());
        let a = analyse(&[Some(1.0), Some(2.0), None, Some(4.0)], 2).unwrap();
        assert_eq!(a.predictions.len(), 4);
        assert_eq!(a.predictions[0], Some(1.0));
        assert_eq!(a.deviations[2], 0.0);
    }
}
