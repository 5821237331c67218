//! graphite-web's "Special" group (with `identity`, `time` and `sin`, which graphite-web
//! files under Calculate and Transform): generated series (`identity`, `time`, `sin`,
//! `randomWalk`, `events`), `cactiStyle` legends, `changed`, `cumulative`,
//! `fallbackSeries` and `substr`. `constantLine` is in `calculate.rs`.
//!
//! Generated series span the request's interval exactly (not aligned to a step), as in
//! graphite-web. `events` counts the source's events (sumi's anomaly events) per
//! second, as graphite-web counts its events table. `randomWalk` draws from a generator
//! seeded per call, so only its shape is reproducible. Deliberate differences:
//! generators refuse a step that is not positive (graphite-web loops forever or
//! fails) and more than ten million points, and `cactiStyle` formats infinite or NaN
//! aggregates instead of failing.

use std::hash::{BuildHasher, Hasher};

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{row, AggFunc};
use crate::functions::alias::substr_name;
use crate::functions::args::{input_error, take_series};
use crate::functions::naming::{format_units, UnitSystem};
use crate::functions::params::{DefaultValue as D, OnFloat, Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl, Invocation};
use crate::py::format::{format_fixed, pad};
use crate::series::{Consolidation, TimeSeries};

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();
static ONLY_SERIES: [Param; 1] = [SERIES];
static CACTI_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("system", T::String).options(&["binary", "si"]),
    Param::new("units", T::String),
];
static FALLBACK_PARAMS: [Param; 2] = [SERIES, Param::new("fallback", T::SeriesList).required()];
static NAME_PARAMS: [Param; 1] = [Param::new("name", T::String).required()];
static NAME_STEP_PARAMS: [Param; 2] = [
    Param::new("name", T::String).required(),
    Param::new("step", T::Integer)
        .default(D::Int(60))
        .on_float(OnFloat::Integral),
];
static SIN_PARAMS: [Param; 3] = [
    Param::new("name", T::String).required(),
    Param::new("amplitude", T::Integer)
        .default(D::Int(1))
        .on_float(OnFloat::Keep),
    Param::new("step", T::Integer)
        .default(D::Int(60))
        .on_float(OnFloat::Integral),
];
static SUBSTR_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("start", T::Node)
        .default(D::Int(0))
        .on_float(OnFloat::Truncate),
    Param::new("stop", T::Node)
        .default(D::Int(0))
        .on_float(OnFloat::Truncate),
];
static EVENTS_PARAMS: [Param; 1] = [Param::new("tags", T::String).required().multiple()];

const fn def(
    name: &'static str,
    group: &'static str,
    params: &'static [Param],
    description: &'static str,
    run: FunctionImpl,
) -> FunctionDef {
    FunctionDef {
        name,
        group,
        description,
        params,
        aggregator: false,
        run,
    }
}

const RANDOM_WALK: &str = "A random walk starting at zero, for testing without data.\n\n\
    Each point adds a uniform random step between -0.5 and 0.5 to the previous one.";
const SIN: &str = "The sine of the time, times amplitude, for testing without data.\n\n\
    One point every step seconds across the requested interval.";
const TIME: &str = "The time of each point (epoch seconds) as its value.\n\n\
    One point every step seconds across the requested interval.";

/// The special functions.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "cactiStyle",
        "Special",
        &CACTI_PARAMS,
        "Appends current, maximum and minimum values to the names, in aligned columns.\n\n\
        With system 'si' or 'binary' the values get unit prefixes; units is appended to them. \
        Alignment holds within one call (group() targets to align them).",
        cacti_style,
    ),
    def(
        "changed",
        "Special",
        &ONLY_SERIES,
        "1 where the value differs from the previous known value, else 0.\n\n\
        Null points give 0 and do not reset the comparison.",
        changed,
    ),
    def(
        "cumulative",
        "Special",
        &ONLY_SERIES,
        "Consolidates the series by summing when points are merged.\n\n\
        The same as consolidateBy(seriesList, 'sum').",
        cumulative,
    ),
    def(
        "fallbackSeries",
        "Special",
        &FALLBACK_PARAMS,
        "The series, or the fallback series when there is none.",
        fallback_series,
    ),
    def(
        "identity",
        "Calculate",
        &NAME_PARAMS,
        "A series whose value at each minute is the time itself.",
        identity,
    ),
    def(
        "randomWalk",
        "Special",
        &NAME_STEP_PARAMS,
        RANDOM_WALK,
        random_walk,
    ),
    def(
        "randomWalkFunction",
        "Special",
        &NAME_STEP_PARAMS,
        RANDOM_WALK,
        random_walk,
    ),
    def("sin", "Transform", &SIN_PARAMS, SIN, sine),
    def("sinFunction", "Transform", &SIN_PARAMS, SIN, sine),
    def("time", "Transform", &NAME_STEP_PARAMS, TIME, time),
    def("timeFunction", "Transform", &NAME_STEP_PARAMS, TIME, time),
    def(
        "substr",
        "Special",
        &SUBSTR_PARAMS,
        "Renames series to a range of the nodes of their metric path.\n\n\
        Nodes start..stop (from 0, negative from the end; stop 0 means to the end) of the \
        innermost parenthesised part of the name.",
        substr,
    ),
    def(
        "events",
        "Special",
        &EVENTS_PARAMS,
        "The number of events with the given tags at each second.\n\n\
        The events are sumi's anomaly events (as /events/get_data shows them, tagged \
        'anomaly', their reason and their series); an event counts at its start. '*' \
        matches every event. Usable with drawAsInfinite.",
        events,
    ),
];

/// `cactiStyle`'s number format for the system and units given.
fn cacti_format(x: f64, system: Option<UnitSystem>, units: Option<&str>) -> String {
    match (system, units) {
        (Some(system), Some(units)) => {
            let (v, prefix) = format_units(x, system, Some(units));
            format!("{} {prefix}", format_fixed(v, 2))
        }
        (Some(system), None) => {
            let (v, prefix) = format_units(x, system, None);
            format!("{}{prefix}", format_fixed(v, 2))
        }
        (None, Some(units)) => format!("{} {units}", format_fixed(x, 2)),
        (None, None) => format_fixed(x, 2),
    }
}

fn cacti_style(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let system = inv.args.str(1).and_then(UnitSystem::from_name);
    let units = inv
        .args
        .str(2)
        .filter(|u| !u.is_empty())
        .map(str::to_string);
    let units = units.as_deref();
    let mut series = take_series(&mut inv, 0);
    if series.is_empty() {
        return Ok(Value::SeriesList(series));
    }
    let stats: Vec<[Option<f64>; 3]> = series
        .iter()
        .map(|s| {
            let r = row(s);
            [
                AggFunc::Last.apply(&r),
                AggFunc::Max.apply(&r),
                AggFunc::Min.apply(&r),
            ]
        })
        .collect();
    // column widths: the format of int(value or 3), plus 3
    let width = |k: usize| -> i64 {
        stats
            .iter()
            .map(|st| {
                let v = st[k].filter(|v| *v != 0.0).unwrap_or(3.0);
                let v = if v.is_finite() { v.trunc() } else { v };
                cacti_format(v, system, units).chars().count() as i64
            })
            .max()
            .unwrap_or(0)
            + 3
    };
    let name_len = series
        .iter()
        .map(|s| s.name.chars().count() as i64)
        .max()
        .unwrap_or(0);
    let (last_len, max_len, min_len) = (width(0), width(1), width(2));
    for (s, st) in series.iter_mut().zip(&stats) {
        let shown = |v: Option<f64>| {
            v.map_or_else(|| "nan".to_string(), |v| cacti_format(v, system, units))
        };
        s.name = format!(
            "{} Current:{} Max:{} Min:{} ",
            pad(&s.name, -name_len),
            pad(&shown(st[0]), -last_len),
            pad(&shown(st[1]), -max_len),
            pad(&shown(st[2]), -min_len),
        );
    }
    Ok(Value::SeriesList(series))
}

fn changed(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.name = format!("changed({})", s.name);
        s.path_expression = s.name.clone();
        let mut previous: Option<f64> = None;
        for v in &mut s.values {
            let value = *v;
            *v = Some(match previous {
                None => {
                    previous = value;
                    0.0
                }
                Some(p) => match value {
                    Some(x) if p != x => {
                        previous = Some(x);
                        1.0
                    }
                    _ => 0.0,
                },
            });
        }
    }
    Ok(Value::SeriesList(series))
}

fn cumulative(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    // consolidateBy(seriesList, 'sum')
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.consolidation = Consolidation::Sum;
        s.tags.set("consolidateBy", "sum");
        s.name = format!("consolidateBy({},\"sum\")", s.name);
        s.path_expression = s.name.clone();
    }
    Ok(Value::SeriesList(series))
}

fn fallback_series(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let series = take_series(&mut inv, 0);
    if !series.is_empty() {
        return Ok(Value::SeriesList(series));
    }
    Ok(Value::SeriesList(take_series(&mut inv, 1)))
}

/// The times `from, from + step, …` before `until`, as graphite-web's generators walk
/// them (`while when < endTime`).
fn instants(
    inv: &Invocation<'_>,
    ctx: &RequestContext,
    step: i64,
) -> Result<impl Iterator<Item = i64>, QueryError> {
    if step <= 0 {
        return Err(input_error(
            inv.name,
            format!("step must be positive, not {step}"),
        ));
    }
    let (from, until) = (ctx.from, ctx.until);
    let count = if until > from {
        (until - from - 1) / step + 1
    } else {
        0
    };
    check_points(inv, count)?;
    Ok((0..count).map(move |k| from + k * step))
}

/// The most points a generator makes (graphite-web would try to build any number,
/// e.g. `time('t', 1)` over ten years).
const MAX_GENERATED_POINTS: i64 = 10_000_000;

fn check_points(inv: &Invocation<'_>, count: i64) -> Result<(), QueryError> {
    if count > MAX_GENERATED_POINTS {
        return Err(input_error(
            inv.name,
            format!("{count} points is more than the {MAX_GENERATED_POINTS} a generated series may have"),
        ));
    }
    Ok(())
}

/// A generated series over the request's interval, with the xFilesFactor in force.
fn generated(
    session: &Session<'_>,
    name: &str,
    ctx: &RequestContext,
    step: i64,
    values: Vec<Option<f64>>,
) -> TimeSeries {
    let mut s = TimeSeries::new(name, ctx.from, ctx.until, step, values);
    s.x_files_factor = session.x_files_factor(ctx);
    s
}

fn identity(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let name = inv.args.str(0).unwrap_or("").to_string();
    let values = instants(&inv, ctx, 60)?.map(|t| Some(t as f64)).collect();
    let mut s = generated(session, &name, ctx, 60, values);
    s.path_expression = format!("identity(\"{name}\")");
    Ok(Value::SeriesList(vec![s]))
}

fn time(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let name = inv.args.str(0).unwrap_or("").to_string();
    let step = inv.args.int(1).unwrap_or(60);
    let values = instants(&inv, ctx, step)?.map(|t| Some(t as f64)).collect();
    Ok(Value::SeriesList(vec![generated(
        session, &name, ctx, step, values,
    )]))
}

fn sine(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let name = inv.args.str(0).unwrap_or("").to_string();
    let amplitude = inv.args.float(1).unwrap_or(1.0);
    let step = inv.args.int(2).unwrap_or(60);
    let values = instants(&inv, ctx, step)?
        .map(|t| Some((t as f64).sin() * amplitude))
        .collect();
    Ok(Value::SeriesList(vec![generated(
        session, &name, ctx, step, values,
    )]))
}

/// xorshift64*: uniform floats in [0, 1) for `randomWalk`, seeded from the standard
/// library's per-process random hasher keys.
struct Walk(u64);

impl Walk {
    fn new() -> Walk {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x9e37_79b9_7f4a_7c15);
        Walk(h.finish() | 1)
    }

    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random_walk(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let name = inv.args.str(0).unwrap_or("").to_string();
    let step = inv.args.int(1).unwrap_or(60);
    let mut rng = Walk::new();
    let mut current = 0.0;
    let values = instants(&inv, ctx, step)?
        .map(|_| {
            let v = current;
            current += rng.next() - 0.5;
            Some(v)
        })
        .collect();
    Ok(Value::SeriesList(vec![generated(
        session, &name, ctx, step, values,
    )]))
}

fn substr(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let start = inv.args.int(1).unwrap_or(0);
    let stop = inv.args.int(2).unwrap_or(0);
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.name = substr_name(&s.name, start, stop);
    }
    Ok(Value::SeriesList(series))
}

fn events(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let tags: Vec<String> = inv.args.all(0).iter().map(Value::python_str).collect();
    let name = format!("events(\"{}\")", tags.join("\", \""));
    check_points(&inv, ctx.until - ctx.from)?;
    let points = usize::try_from(ctx.until - ctx.from).unwrap_or(0);
    let mut values: Vec<Option<f64>> = vec![None; points];
    // as graphite-web: every event whose time is in [from, until] and that carries all
    // the tags ('*' alone: any event), counted at its second
    let any = tags.len() == 1 && tags[0] == "*";
    for e in session.events(ctx.from, ctx.until) {
        if e.when < ctx.from || e.when > ctx.until {
            continue;
        }
        if !any && !tags.iter().all(|t| e.tags.contains(t)) {
            continue;
        }
        // an event at `until` itself has no slot (graphite-web fails on it): left out
        if let Some(v) = values.get_mut((e.when - ctx.from) as usize) {
            *v = Some(v.unwrap_or(0.0) + 1.0);
        }
    }
    let mut s = generated(session, &name, ctx, 1, values);
    s.consolidation = Consolidation::Sum;
    Ok(Value::SeriesList(vec![s]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_steps_are_uniform_in_unit_interval() {
        let mut w = Walk::new();
        let draws: Vec<f64> = (0..10_000).map(|_| w.next()).collect();
        assert!(draws.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
    }

    #[test]
    fn cacti_formats() {
        assert_eq!(cacti_format(1500.0, Some(UnitSystem::Si), None), "1.50k");
        assert_eq!(
            cacti_format(1500.0, Some(UnitSystem::Si), Some("b")),
            "1.50 kb"
        );
        assert_eq!(cacti_format(2.5, None, Some("ms")), "2.50 ms");
        assert_eq!(cacti_format(2.5, None, None), "2.50");
    }
}
