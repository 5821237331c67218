//! graphite-web's "Filter Data" group: functions that blank out individual points —
//! `removeAboveValue`, `removeBelowValue`, `removeAbovePercentile`,
//! `removeBelowPercentile`. The series keep their interval; removed points become
//! null and the name records the threshold (`removeAboveValue(a.b, 100)`, with
//! Python's `%g`).
//!
//! As in graphite-web, the percentile variants also leave an `nPercentile` tag on the
//! series (they compute the percentile with `nPercentile`, which shares the series'
//! tags), and a series without any known value is only renamed. `n = 0` is refused as
//! bad input (graphite-web fails on an assertion).

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{percentile, row};
use crate::functions::args::{input_error, take_series};
use crate::functions::params::{Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl, Invocation};
use crate::py;
use crate::py::format::format_g;

static PARAMS: [Param; 2] = [
    Param::new("seriesList", T::SeriesList).required(),
    Param::new("n", T::Float).required(),
];

const fn def(name: &'static str, description: &'static str, run: FunctionImpl) -> FunctionDef {
    FunctionDef {
        name,
        group: "Filter Data",
        description,
        params: &PARAMS,
        aggregator: false,
        run,
    }
}

/// The point filters.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "removeAboveValue",
        "Blanks out the points above a value.\n\n\
        Points greater than n become null.",
        remove_above_value,
    ),
    def(
        "removeBelowValue",
        "Blanks out the points below a value.\n\n\
        Points less than n become null.",
        remove_below_value,
    ),
    def(
        "removeAbovePercentile",
        "Blanks out the points above the n-th percentile of each series.\n\n\
        The percentile is taken over the series' own known points (nearest rank).",
        remove_above_percentile,
    ),
    def(
        "removeBelowPercentile",
        "Blanks out the points below the n-th percentile of each series.\n\n\
        The percentile is taken over the series' own known points (nearest rank).",
        remove_below_percentile,
    ),
];

#[derive(Clone, Copy)]
enum Side {
    Above,
    Below,
}

impl Side {
    /// Whether graphite-web blanks the value: above is `val > n`; below is `val < n`
    /// and also every missing value (which stays missing).
    fn removes(self, value: f64, threshold: f64) -> bool {
        match self {
            Side::Above => value > threshold,
            Side::Below => value < threshold,
        }
    }
}

fn remove(
    mut inv: Invocation<'_>,
    side: Side,
    by_percentile: bool,
    what: &str,
) -> Result<Value, QueryError> {
    let n = inv.args.float(1).unwrap_or(0.0);
    if by_percentile && (n == 0.0 || n.is_nan()) {
        return Err(input_error(
            inv.name,
            "the requested percent must be greater than 0",
        ));
    }
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.name = format!("{what}({}, {})", s.name, format_g(n));
        s.path_expression = s.name.clone();
        let threshold = if by_percentile {
            // nPercentile([s], n)[0][0]: nothing when there is no known value or no point
            let values = row(s);
            let known: Vec<Option<f64>> = values.iter().copied().filter(Option::is_some).collect();
            if known.is_empty() {
                continue;
            }
            let Some(p) = percentile(&known, n, false).map_err(|m| input_error(inv.name, m))?
            else {
                continue;
            };
            s.tags.set("nPercentile", &py::float_repr(n));
            if s.step == 0 || ((s.end - s.start) as f64 / s.step as f64) < 1.0 {
                continue;
            }
            p
        } else {
            n
        };
        for v in &mut s.values {
            if let Some(x) = *v {
                if side.removes(x, threshold) {
                    *v = None;
                }
            }
        }
    }
    Ok(Value::SeriesList(series))
}

fn remove_above_value(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    remove(inv, Side::Above, false, "removeAboveValue")
}

fn remove_below_value(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    remove(inv, Side::Below, false, "removeBelowValue")
}

fn remove_above_percentile(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    remove(inv, Side::Above, true, "removeAbovePercentile")
}

fn remove_below_percentile(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    remove(inv, Side::Below, true, "removeBelowPercentile")
}
