//! graphite-web's aggregation functions by name (`functions/aggfuncs.py` over
//! `functions/safe.py`): [`AggFunc`] over a row of values, the row of a series as
//! Python iterates it, the sort key of `highest`/`sortBy`, `safeDiv` and the NIST
//! percentile. Each computes exactly what the Python does, in the same order of
//! floating-point operations: sums start from zero and run left to right as `sum()`
//! does, `min`/`max` keep the first of equal values as Python's builtins do.

use std::borrow::Cow;

use crate::py::format::format_g;
use crate::py::number::{py_int, py_max, py_min, py_sum};
use crate::py::seq::py_index;
use crate::py::sort::py_sort_floats;
use crate::series::TimeSeries;

/// One of graphite-web's aggregation functions (`aggfuncs.aggFuncs`), applied to a row
/// of values where `None` is a missing value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AggFunc {
    Average,
    AvgZero,
    Median,
    Sum,
    Min,
    Max,
    Diff,
    Stddev,
    Count,
    Range,
    Multiply,
    Last,
}

impl AggFunc {
    /// `getAggFunc`: the names and their aliases (`avg`, `total`, `current`,
    /// `rangeOf`). The deprecated `…Series` spellings are not accepted here, as in
    /// graphite-web, where only `aggregate()` strips them.
    pub(crate) fn from_name(name: &str) -> Option<AggFunc> {
        Some(match name {
            "average" | "avg" => AggFunc::Average,
            "avg_zero" => AggFunc::AvgZero,
            "median" => AggFunc::Median,
            "sum" | "total" => AggFunc::Sum,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "diff" => AggFunc::Diff,
            "stddev" => AggFunc::Stddev,
            "count" => AggFunc::Count,
            "range" | "rangeOf" => AggFunc::Range,
            "multiply" => AggFunc::Multiply,
            "last" | "current" => AggFunc::Last,
            _ => return None,
        })
    }

    /// Whether Python's result is an `int` (`count`), which prints without `.0`.
    pub(crate) fn is_integer(self) -> bool {
        self == AggFunc::Count
    }

    /// The function over a row. `None` where graphite-web's answers `None` (no known
    /// value), and also for `multiply` of an empty row, where Python raises.
    pub(crate) fn apply(self, row: &[Option<f64>]) -> Option<f64> {
        self.apply_buf(row, &mut Vec::new())
    }

    /// [`apply`](Self::apply) with a scratch buffer for `median`, so that a caller
    /// aggregating many windows allocates once.
    pub(crate) fn apply_buf(self, row: &[Option<f64>], buf: &mut Vec<f64>) -> Option<f64> {
        let known = || row.iter().filter_map(|v| *v);
        match self {
            AggFunc::Sum => py_sum(known()),
            AggFunc::Average => {
                let n = known().count();
                py_sum(known()).map(|s| s / n as f64)
            }
            AggFunc::AvgZero => {
                if row.is_empty() {
                    return None;
                }
                let sum = row.iter().fold(0.0, |acc, v| acc + v.unwrap_or(0.0));
                Some(sum / row.len() as f64)
            }
            AggFunc::Median => {
                buf.clear();
                buf.extend(known());
                let sorted = buf;
                if sorted.is_empty() {
                    return None;
                }
                py_sort_floats(sorted);
                let mid = sorted.len() / 2;
                Some(if sorted.len().is_multiple_of(2) {
                    (sorted[mid - 1] + sorted[mid]) / 2.0
                } else {
                    sorted[mid]
                })
            }
            AggFunc::Min => py_min(known()),
            AggFunc::Max => py_max(known()),
            AggFunc::Diff => {
                let mut it = known();
                let first = it.next()?;
                Some(it.fold(0.0 + first, |acc, v| acc + -v))
            }
            AggFunc::Stddev => {
                let n = known().count();
                let avg = py_sum(known())? / n as f64;
                let squares = known().fold(0.0, |acc, v| acc + (v - avg) * (v - avg));
                Some((squares / n as f64).sqrt())
            }
            AggFunc::Count => Some(known().count() as f64),
            AggFunc::Range => Some(py_max(known())? - py_min(known())?),
            AggFunc::Multiply => {
                if row.is_empty() || row.iter().any(Option::is_none) {
                    return None;
                }
                known().reduce(|a, b| a * b)
            }
            AggFunc::Last => row.iter().rev().find_map(|v| *v),
        }
    }
}

/// The values of a series as Python iterates it: consolidated when
/// `values_per_point > 1` (graphite-web's `TimeSeries.__iter__`), borrowed otherwise.
pub(crate) fn row(series: &TimeSeries) -> Cow<'_, [Option<f64>]> {
    if series.values_per_point <= 1 {
        Cow::Borrowed(&series.values)
    } else {
        Cow::Owned(series.consolidated().collect())
    }
}

/// graphite-web's `keyFunc`: the aggregate, with `None` sorting as `-inf`.
pub(crate) fn sort_key(func: AggFunc, series: &TimeSeries) -> f64 {
    func.apply(&row(series)).unwrap_or(f64::NEG_INFINITY)
}

/// graphite-web's `safeDiv(a, b)`: `None` when either is missing or `b` is zero.
pub(crate) fn safe_div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// graphite-web's `_getPercentile` (NIST method): the `n`th percentile of the known
/// values, optionally interpolated. `Ok(None)` when there is no value; `Err` where
/// Python fails with an index error (`n` above 100 or far below 0).
pub(crate) fn percentile(
    points: &[Option<f64>],
    n: f64,
    interpolate: bool,
) -> Result<Option<f64>, String> {
    percentile_buf(points, n, interpolate, &mut Vec::new())
}

/// [`percentile`] with a scratch buffer, for callers that take many percentiles.
pub(crate) fn percentile_buf(
    points: &[Option<f64>],
    n: f64,
    interpolate: bool,
    sorted: &mut Vec<f64>,
) -> Result<Option<f64>, String> {
    sorted.clear();
    sorted.extend(points.iter().filter_map(|v| *v));
    if sorted.is_empty() {
        return Ok(None);
    }
    py_sort_floats(sorted);
    let len = sorted.len();
    let fractional_rank = (n / 100.0) * (len + 1) as f64;
    let mut rank = py_int(fractional_rank);
    let rank_fraction = fractional_rank - rank as f64;
    if !interpolate {
        rank += py_int(rank_fraction.ceil());
    }
    let out_of_range = || format!("percentile {} is out of range", format_g(n));
    let mut value = if rank == 0 {
        sorted[0]
    } else if rank - 1 == len as i64 {
        sorted[len - 1]
    } else {
        sorted[py_index(len, rank - 1).ok_or_else(out_of_range)?]
    };
    if interpolate && rank != len as i64 {
        let next = sorted[py_index(len, rank).ok_or_else(out_of_range)?];
        value += rank_fraction * (next - value);
    }
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregation_functions_match_python() {
        let row = [Some(3.0), None, Some(1.0), Some(2.0), Some(1.0)];
        let f = |name: &str| AggFunc::from_name(name).unwrap().apply(&row);
        assert_eq!(f("sum"), Some(7.0));
        assert_eq!(f("average"), Some(1.75));
        assert_eq!(f("avg_zero"), Some(7.0 / 5.0));
        assert_eq!(f("median"), Some(1.5));
        assert_eq!(f("min"), Some(1.0));
        assert_eq!(f("max"), Some(3.0));
        assert_eq!(f("diff"), Some(3.0 - 1.0 - 2.0 - 1.0));
        assert_eq!(f("count"), Some(4.0));
        assert_eq!(f("range"), Some(2.0));
        assert_eq!(f("multiply"), None);
        assert_eq!(f("last"), Some(1.0));
        assert_eq!(f("current"), Some(1.0));
        // statistics.pstdev of [3, 1, 2, 1] is sqrt(0.6875)
        assert_eq!(f("stddev"), Some(0.6875f64.sqrt()));
        let empty: [Option<f64>; 2] = [None, None];
        for name in [
            "sum", "average", "median", "min", "max", "diff", "stddev", "range", "last",
        ] {
            assert_eq!(
                AggFunc::from_name(name).unwrap().apply(&empty),
                None,
                "{name}"
            );
        }
        assert_eq!(AggFunc::Count.apply(&empty), Some(0.0));
        assert_eq!(AggFunc::AvgZero.apply(&empty), Some(0.0));
        assert_eq!(AggFunc::AvgZero.apply(&[]), None);
        assert_eq!(
            AggFunc::Multiply.apply(&[Some(2.0), Some(-1.5)]),
            Some(-3.0)
        );
        // Python's sum() starts from int 0: a lone -0.0 sums to 0.0
        assert_eq!(AggFunc::Sum.apply(&[Some(-0.0)]).map(f64::to_bits), Some(0));
        assert!(AggFunc::from_name("sumSeries").is_none());
        assert!(AggFunc::from_name("first").is_none());
    }
}
