//! Transform functions that change each value on its own: `scale`, `scaleToSeconds`,
//! `add`, `offset`, `offsetToZero`, `pow`, `squareRoot`, `invert`, `absolute`,
//! `exp`, `log`, `sigmoid`, `logit`, `round`, `minMax`, `isNonNull`.
//!
//! Most rename the series in place and record their argument in a tag, as
//! graphite-web does (`scale(a.b,2)` gets the tag `scale=2.0`: the tag is Python's
//! `str()` of the argument, the name its `%g`). `log` builds a new series
//! (graphite-web's `series.copy`), which drops drawing options.
//!
//! Deliberate differences, where graphite-web fails with a server error: `exp` of a
//! value above ~709.78 gives infinity, and `sigmoid` of a value below ~-709.78 gives
//! 0.0 (Python's `math.exp` raises `OverflowError`); `log` with a base of 1 or below 0
//! is refused as bad input.

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};

use crate::functions::aggregation::row;
use crate::functions::align::copy_of;
use crate::functions::args::{input_error, take_series};
use crate::functions::Invocation;
use crate::py;
use crate::py::format::{format_d, format_g};
use crate::py::number::{py_max, py_min, py_pow, py_round};
use crate::series::TimeSeries;

type Output = Result<Value, QueryError>;

/// `for i, value in enumerate(series): series[i] = f(value)`: the values as Python
/// iterates them (consolidated when the series is), written back by position.
pub(super) fn map_values(s: &mut TimeSeries, mut f: impl FnMut(Option<f64>) -> Option<f64>) {
    if s.values_per_point <= 1 {
        for v in &mut s.values {
            *v = f(*v);
        }
    } else {
        let view: Vec<Option<f64>> = s.consolidated().collect();
        for (slot, v) in s.values.iter_mut().zip(view) {
            *slot = f(v);
        }
    }
}

/// Renames a series in place, its path expression too.
pub(super) fn rename(s: &mut TimeSeries, name: String) {
    s.path_expression.clone_from(&name);
    s.name = name;
}

/// The float parameter `i` (validated, so present when required).
fn float(inv: &Invocation<'_>, i: usize) -> f64 {
    inv.args.float(i).unwrap_or(0.0)
}

/// The same change to every series, each renamed with `name(series name)` and tagged.
fn each(
    mut inv: Invocation<'_>,
    name: impl Fn(&str) -> String,
    tag: Option<(&str, &str)>,
    f: impl Fn(Option<f64>) -> Option<f64>,
) -> Output {
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        if let Some((k, v)) = tag {
            s.tags.set(k, v);
        }
        let n = name(&s.name);
        rename(s, n);
        map_values(s, &f);
    }
    Ok(Value::SeriesList(series))
}

pub(super) fn scale(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    let factor = float(&inv, 1);
    let (tag, g) = (py::float_repr(factor), format_g(factor));
    each(
        inv,
        |n| format!("scale({n},{g})"),
        Some(("scale", &tag)),
        |v| v.map(|v| v * factor),
    )
}

pub(super) fn scale_to_seconds(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let seconds = float(&inv, 1);
    let Some(d) = format_d(seconds) else {
        return Err(input_error(inv.name, "seconds must be a finite number"));
    };
    let tag = py::float_repr(seconds);
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.tags.set("scaleToSeconds", &tag);
        let name = format!("scaleToSeconds({},{d})", s.name);
        rename(s, name);
        let factor = seconds / s.step as f64;
        map_values(s, |v| v.map(|v| py_round(v * factor, 6)));
    }
    Ok(Value::SeriesList(series))
}

pub(super) fn exp(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    each(
        inv,
        |n| format!("exp({n})"),
        Some(("exp", "e")),
        |v| v.map(f64::exp),
    )
}

pub(super) fn add(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    let constant = float(&inv, 1);
    let Some(d) = format_d(constant) else {
        return Err(input_error(
            inv.name,
            "the constant must be a finite number",
        ));
    };
    let tag = py::float_repr(constant);
    each(
        inv,
        |n| format!("add({n},{d})"),
        Some(("add", &tag)),
        |v| v.map(|v| v + constant),
    )
}

pub(super) fn sigmoid(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    each(
        inv,
        |n| format!("sigmoid({n})"),
        Some(("sigmoid", "sigmoid")),
        |v| v.map(|v| 1.0 / (1.0 + (-v).exp())),
    )
}

/// `math.log(v / (1 - v))`, `None` where Python raises (`v == 1`, a ratio not above 0).
fn logit_value(v: f64) -> Option<f64> {
    let d = 1.0 - v;
    if d == 0.0 {
        return None;
    }
    let r = v / d;
    if r <= 0.0 {
        return None;
    }
    Some(r.ln())
}

pub(super) fn logit(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    each(
        inv,
        |n| format!("logit({n})"),
        Some(("logit", "logit")),
        |v| v.and_then(logit_value),
    )
}

pub(super) fn pow(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    let factor = float(&inv, 1);
    let (tag, g) = (py::float_repr(factor), format_g(factor));
    each(
        inv,
        |n| format!("pow({n},{g})"),
        Some(("pow", &tag)),
        |v| v.and_then(|v| py_pow(v, factor)),
    )
}

pub(super) fn square_root(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    each(
        inv,
        |n| format!("squareRoot({n})"),
        Some(("squareRoot", "1")),
        |v| v.and_then(|v| py_pow(v, 0.5)),
    )
}

pub(super) fn invert(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    each(
        inv,
        |n| format!("invert({n})"),
        Some(("invert", "1")),
        |v| v.and_then(|v| py_pow(v, -1.0)),
    )
}

pub(super) fn absolute(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    each(
        inv,
        |n| format!("absolute({n})"),
        Some(("absolute", "1")),
        |v| v.map(f64::abs),
    )
}

pub(super) fn offset(_: &mut Session<'_>, _: &RequestContext, inv: Invocation<'_>) -> Output {
    let factor = float(&inv, 1);
    let (tag, g) = (py::float_repr(factor), format_g(factor));
    each(
        inv,
        |n| format!("offset({n},{g})"),
        Some(("offset", &tag)),
        |v| v.map(|v| v + factor),
    )
}

/// `offsetToZero`: each series minus its own minimum (tagged with it, `None` when the
/// series has no value).
pub(super) fn offset_to_zero(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        let minimum = py_min(row(s).iter().filter_map(|v| *v));
        let tag = minimum.map_or_else(|| "None".to_string(), py::float_repr);
        s.tags.set("offsetToZero", &tag);
        let name = format!("offsetToZero({})", s.name);
        rename(s, name);
        if let Some(m) = minimum {
            map_values(s, |v| v.map(|v| v - m));
        }
    }
    Ok(Value::SeriesList(series))
}

/// `round(seriesList, precision=None)`: Python's `round(value, precision or 0)`; the
/// name shows the precision only when one was given.
pub(super) fn round(_: &mut Session<'_>, _: &RequestContext, mut inv: Invocation<'_>) -> Output {
    let precision = inv.args.int(1);
    let digits = precision.unwrap_or(0);
    let tag = digits.to_string();
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.tags.set("round", &tag);
        let name = match precision {
            None => format!("round({})", s.name),
            Some(p) => format!("round({},{})", s.name, format_g(p as f64)),
        };
        rename(s, name);
        map_values(s, |v| v.map(|v| py_round(v, digits)));
    }
    Ok(Value::SeriesList(series))
}

/// `minMax`: each series scaled to 0..1 between its own minimum and maximum (0.0
/// where they are equal).
pub(super) fn min_max(_: &mut Session<'_>, _: &RequestContext, mut inv: Invocation<'_>) -> Output {
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        let name = format!("minMax({})", s.name);
        rename(s, name);
        let view = row(s).into_owned();
        let lo = py_min(view.iter().filter_map(|v| *v)).unwrap_or(0.0);
        let hi = py_max(view.iter().filter_map(|v| *v)).unwrap_or(0.0);
        for (slot, v) in s.values.iter_mut().zip(view) {
            if let (Some(_), Some(v)) = (*slot, v) {
                let range = hi - lo;
                *slot = Some(if range == 0.0 { 0.0 } else { (v - lo) / range });
            }
        }
    }
    Ok(Value::SeriesList(series))
}

/// `isNonNull`: 1 where a value is known, 0 where it is null.
pub(super) fn is_non_null(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.tags.set("isNonNull", "1");
        let name = format!("isNonNull({})", s.name);
        rename(s, name);
        s.values = row(s)
            .iter()
            .map(|v| Some(if v.is_some() { 1.0 } else { 0.0 }))
            .collect();
    }
    Ok(Value::SeriesList(series))
}

/// `log(seriesList, base=10)`: `math.log(value, base)`; null for values not above 0.
pub(super) fn log(_: &mut Session<'_>, _: &RequestContext, mut inv: Invocation<'_>) -> Output {
    // an integer, or a float as written (graphite-web's name shows Python's str())
    let shown = match inv.args.get(1) {
        Some(v @ Value::Float(_)) => v.python_str(),
        _ => inv.args.int(1).unwrap_or(10).to_string(),
    };
    let base = inv.args.float(1).unwrap_or(10.0);
    let series = take_series(&mut inv, 0);
    let den = base.ln();
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let mut values = Vec::with_capacity(s.values.len());
        for v in row(&s).iter() {
            values.push(match *v {
                Some(v) if v > 0.0 || v.is_nan() => {
                    // Python raises once a value reaches math.log with such a base
                    if base <= 0.0 {
                        return Err(input_error(
                            inv.name,
                            "math domain error: the base must be above 0",
                        ));
                    }
                    if base == 1.0 {
                        return Err(input_error(inv.name, "the base must not be 1"));
                    }
                    Some(v.ln() / den)
                }
                _ => None,
            });
        }
        s.tags.set("log", &shown);
        let name = format!("log({}, {shown})", s.name);
        out.push(copy_of(&s, name, values));
    }
    Ok(Value::SeriesList(out))
}
