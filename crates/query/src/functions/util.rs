//! Helpers shared by the function families: graphite-web's aggregation functions by
//! name (`functions/aggfuncs.py` over `functions/safe.py`), Python's list sort (whose
//! order, ties and NaN included, decides which series `highest`/`sortBy` return),
//! Python's `%g`/`%.2f` number formatting used in series names, graphite's unit
//! prefixes (`format_units`), and the node/tag lookup of `aliasByNode`/`groupByNode`
//! (`aggKey`).
//!
//! Everything here computes exactly what the Python does, in the same order of
//! floating-point operations: sums start from zero and run left to right as `sum()`
//! does, `min`/`max` keep the first of equal values as Python's builtins do.

use std::borrow::Cow;

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::Invocation;
use crate::grammar::{self, Arg, Expr};
use crate::py;
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

/// `sum()` of floats: from zero, left to right (so `-0.0` alone sums to `0.0`); `None`
/// for no value (`safeSum`).
pub(crate) fn py_sum(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut any = false;
    let sum = values.fold(0.0, |acc, v| {
        any = true;
        acc + v
    });
    any.then_some(sum)
}

/// `min()`: the first value, replaced only by a strictly smaller one.
pub(crate) fn py_min(mut values: impl Iterator<Item = f64>) -> Option<f64> {
    let first = values.next()?;
    Some(values.fold(first, |m, v| if v < m { v } else { m }))
}

/// `max()`: the first value, replaced only by a strictly greater one.
pub(crate) fn py_max(mut values: impl Iterator<Item = f64>) -> Option<f64> {
    let first = values.next()?;
    Some(values.fold(first, |m, v| if v > m { v } else { m }))
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

/// Sorts `items` by float `keys` exactly as Python's `list.sort(key=…, reverse=…)`
/// does: stable, comparing with `<` only (so NaN keys land where CPython puts them),
/// and `reverse` keeping equal keys in their original order.
pub(crate) fn py_sort_by_keys<T>(items: Vec<T>, keys: &[f64], reverse: bool) -> Vec<T> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    let lt = |a: &usize, b: &usize| keys[*a] < keys[*b];
    if reverse {
        order.reverse();
    }
    py_sort(&mut order, &lt);
    if reverse {
        order.reverse();
    }
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// Python's `sorted()` of floats. Without NaN, `<` is a total order up to the sign
/// of zero, and any stable sort gives Python's result (`-0.0` and `0.0` keep their
/// order); with NaN, CPython's own sequence of comparisons is replayed.
pub(crate) fn py_sort_floats(values: &mut [f64]) {
    if values.iter().any(|v| v.is_nan()) {
        let lt = |a: &f64, b: &f64| a < b;
        py_sort(values, &lt);
    } else {
        values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    }
}

/// CPython's list sort driven by `lt`. Below 64 items (CPython's smallest merge run,
/// so every list a function here sorts in practice) this is CPython's exact sequence
/// of comparisons: the natural run at the start (reversed when strictly descending),
/// then binary insertion. Longer lists are merge-sorted, stable; the two agree
/// whenever `lt` is a strict weak order (always, unless keys are NaN).
pub(crate) fn py_sort<T: Clone>(items: &mut [T], lt: &dyn Fn(&T, &T) -> bool) {
    let n = items.len();
    if n < 2 {
        return;
    }
    if n >= 64 {
        merge_sort(items, lt);
        return;
    }
    // count_run
    let mut run = 2;
    if lt(&items[1], &items[0]) {
        while run < n && lt(&items[run], &items[run - 1]) {
            run += 1;
        }
        items[..run].reverse();
    } else {
        while run < n && !lt(&items[run], &items[run - 1]) {
            run += 1;
        }
    }
    // binarysort
    for start in run..n {
        let pivot = items[start].clone();
        let (mut l, mut r) = (0, start);
        while l < r {
            let p = l + ((r - l) >> 1);
            if lt(&pivot, &items[p]) {
                r = p;
            } else {
                l = p + 1;
            }
        }
        items[l..=start].rotate_right(1);
    }
}

fn merge_sort<T: Clone>(items: &mut [T], lt: &dyn Fn(&T, &T) -> bool) {
    if items.len() < 2 {
        return;
    }
    let mid = items.len() / 2;
    merge_sort(&mut items[..mid], lt);
    merge_sort(&mut items[mid..], lt);
    let left: Vec<T> = items[..mid].to_vec();
    let right: Vec<T> = items[mid..].to_vec();
    let (mut i, mut j) = (0, 0);
    for slot in items.iter_mut() {
        // take from the right only when strictly smaller: stable
        if j < right.len() && (i == left.len() || lt(&right[j], &left[i])) {
            *slot = right[j].clone();
            j += 1;
        } else {
            *slot = left[i].clone();
            i += 1;
        }
    }
}

/// Python's `'%g' % x`: six significant digits, trailing zeros dropped, exponent
/// notation (`1e+06`, `1e-05`) outside `1e-4 <= |x| < 1e6`.
pub(crate) fn format_g(x: f64) -> String {
    format_g_with(x, 6, false)
}

/// Python's `'%.{precision}g'` (with `#`: `alternate`, trailing zeros kept).
pub(crate) fn format_g_with(x: f64, precision: usize, alternate: bool) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let p = precision.max(1) as i32;
    // the decimal exponent after rounding to p significant digits
    let sci = format!("{:.*e}", (p - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = if x == 0.0 {
        0
    } else {
        exp.parse().unwrap_or(0)
    };
    let strip = |s: &str| -> String {
        if alternate {
            s.to_string()
        } else {
            strip_zeros(s).to_string()
        }
    };
    if (-4..p).contains(&exp) {
        strip(&format!("{:.*}", (p - 1 - exp) as usize, x))
    } else {
        format!(
            "{}e{}{:02}",
            strip(mantissa),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Python's `'%.Nf' % x` (`nan`, `inf`, `-inf` spelled as Python does).
pub(crate) fn format_fixed(x: f64, precision: usize) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{x:.precision$}")
    }
}

/// The largest width or precision [`percent_format`] accepts.
const MAX_FORMAT_WIDTH: usize = 10_000;

/// Python's `template % value` for one float, as `aliasQuery` formats names:
/// conversions `d i u e E f F g G s r a` and `%%`, with flags `-+ 0#`, width and
/// precision. `Err` where Python raises (no conversion, more than one, or one that
/// does not take a float).
pub(crate) fn percent_format(template: &str, value: f64) -> Result<String, String> {
    let chars: Vec<char> = template.chars().collect();
    let mut out = String::with_capacity(template.len() + 16);
    let mut used = false;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        let (mut left, mut plus, mut space, mut zero, mut alternate) =
            (false, false, false, false, false);
        while let Some(&c) = chars.get(i) {
            match c {
                '-' => left = true,
                '+' => plus = true,
                ' ' => space = true,
                '0' => zero = true,
                '#' => alternate = true,
                _ => break,
            }
            i += 1;
        }
        let mut width = 0usize;
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
            width = width.saturating_mul(10).saturating_add(d as usize);
            i += 1;
        }
        let mut precision: Option<usize> = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            let mut p = 0usize;
            while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                p = p.saturating_mul(10).saturating_add(d as usize);
                i += 1;
            }
            precision = Some(p);
        }
        // Python would build the string; a width or precision this large only serves
        // to exhaust memory
        if width > MAX_FORMAT_WIDTH || precision.is_some_and(|p| p > MAX_FORMAT_WIDTH) {
            return Err(format!(
                "format width or precision above {MAX_FORMAT_WIDTH}"
            ));
        }
        // length modifiers are read and ignored, as Python does
        while matches!(chars.get(i), Some('h' | 'l' | 'L')) {
            i += 1;
        }
        let Some(&conv) = chars.get(i) else {
            return Err("incomplete format".to_string());
        };
        i += 1;
        if conv == '%' {
            out.push('%');
            continue;
        }
        if used {
            return Err("not enough arguments for format string".to_string());
        }
        used = true;
        let numeric = !matches!(conv, 's' | 'r' | 'a');
        let body = match conv {
            'd' | 'i' | 'u' => {
                if !value.is_finite() {
                    return Err(format!("cannot convert float {} to integer", repr(value)));
                }
                format!("{:.0}", value.abs().trunc())
            }
            'f' | 'F' => {
                let s = format_fixed(value.abs(), precision.unwrap_or(6));
                if conv == 'F' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            'e' | 'E' => {
                let s = format_e(value.abs(), precision.unwrap_or(6));
                if conv == 'E' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            'g' | 'G' => {
                let s = format_g_with(value.abs(), precision.unwrap_or(6), alternate);
                if conv == 'G' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            's' | 'r' | 'a' => {
                let s = repr(value);
                match precision {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                }
            }
            c => return Err(format!("%{c} format: a number is required, not float")),
        };
        let negative = match conv {
            'd' | 'i' | 'u' => value.trunc() < 0.0,
            _ => value.is_sign_negative() && !value.is_nan(),
        };
        let sign = if !numeric {
            ""
        } else if negative {
            "-"
        } else if plus {
            "+"
        } else if space {
            " "
        } else {
            ""
        };
        let len = sign.chars().count() + body.chars().count();
        let fill = width.saturating_sub(len);
        if left {
            out.push_str(sign);
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', fill));
        } else if zero && numeric && value.is_finite() {
            out.push_str(sign);
            out.extend(std::iter::repeat_n('0', fill));
            out.push_str(&body);
        } else {
            out.extend(std::iter::repeat_n(' ', fill));
            out.push_str(sign);
            out.push_str(&body);
        }
    }
    if !used {
        return Err("not all arguments converted during string formatting".to_string());
    }
    Ok(out)
}

/// Python's `'%.{precision}e'`: a signed exponent of at least two digits.
fn format_e(x: f64, precision: usize) -> String {
    if !x.is_finite() {
        return format_fixed(x, precision);
    }
    let s = format!("{x:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!(
        "{mantissa}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

/// graphite's unit systems for `format_units` (glyph.py `UnitSystems`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnitSystem {
    Si,
    Binary,
}

impl UnitSystem {
    pub(crate) fn from_name(name: &str) -> Option<UnitSystem> {
        match name {
            "si" => Some(UnitSystem::Si),
            "binary" => Some(UnitSystem::Binary),
            _ => None,
        }
    }

    fn prefixes(self) -> [(&'static str, f64); 5] {
        match self {
            UnitSystem::Si => [("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)],
            UnitSystem::Binary => [
                ("Pi", 1125899906842624.0),
                ("Ti", 1099511627776.0),
                ("Gi", 1073741824.0),
                ("Mi", 1048576.0),
                ("Ki", 1024.0),
            ],
        }
    }
}

/// glyph.py's `format_units(v, system=…, units=…)`: the value scaled by the largest
/// prefix not above it, and the prefix (with `units` appended). Values within 1e-11 of
/// an integer (and above 1) are floored, as graphite does.
pub(crate) fn format_units(v: f64, system: UnitSystem, units: Option<&str>) -> (f64, String) {
    for (prefix, size) in system.prefixes() {
        if v.abs() >= size {
            let mut v2 = v / size;
            if (v2 - v2.floor()) < 0.00000000001 && v > 1.0 {
                v2 = v2.floor();
            }
            return (v2, format!("{prefix}{}", units.unwrap_or("")));
        }
    }
    let mut v = v;
    if (v - v.floor()) < 0.00000000001 && v > 1.0 {
        v = v.floor();
    }
    (v, units.unwrap_or("").to_string())
}

/// Python's `'%*s' % (width, text)`: right-aligned in `width` characters, or
/// left-aligned when `width` is negative.
pub(crate) fn pad(text: &str, width: i64) -> String {
    let len = text.chars().count() as i64;
    let fill = " ".repeat((width.abs() - len).max(0) as usize);
    if width < 0 {
        format!("{text}{fill}")
    } else {
        format!("{fill}{text}")
    }
}

/// graphite-web's `_getFirstPathExpression`: the first metric path in a series name
/// that reads as a target (`movingAverage(a.b.c,5)` → `a.b.c`), following first
/// arguments down; `None` when the name does not parse or the path is not first.
pub(crate) fn first_path_expression(name: &str) -> Option<String> {
    let parsed = grammar::parse(name).ok()?;
    let mut expr = parsed.expr;
    loop {
        match expr {
            Expr::Path(p) => return Some(p),
            Expr::Call(call) => match call.args.into_iter().next() {
                Some(Arg::Expr(e)) => expr = e,
                _ => return None,
            },
            Expr::Template(_) => return None,
        }
    }
}

/// graphite-web's `getNodeOrTag`: node `n` of the name (or of `path_expression` when
/// given), tags split off first, negative indices from the end; a node that is not an
/// integer, or out of range, is looked up as a tag instead (empty when absent).
pub(crate) fn node_or_tag(series: &TimeSeries, n: &Value, path_expression: Option<&str>) -> String {
    if let Value::Int(i) = n {
        let source = path_expression.unwrap_or(&series.name);
        let metric = source.split(';').next().unwrap_or("");
        let nodes: Vec<&str> = metric.split('.').collect();
        let len = nodes.len() as i64;
        let index = if *i < 0 { len + i } else { *i };
        if (0..len).contains(&index) {
            return nodes[index as usize].to_string();
        }
    }
    series.tags.get(&n.python_str()).unwrap_or("").to_string()
}

/// graphite-web's `aggKey`: the nodes or tags joined with `.`; a name ending in `)`
/// is read through its first path expression.
pub(crate) fn agg_key(series: &TimeSeries, nodes: &[Value]) -> String {
    let path = if series.name.ends_with(')') {
        first_path_expression(&series.name)
    } else {
        None
    };
    let parts: Vec<String> = nodes
        .iter()
        .map(|n| node_or_tag(series, n, path.as_deref()))
        .collect();
    parts.join(".")
}

/// `int(x)` of a Python float for window sizes and counts given as floats: truncation
/// toward zero, saturating (Python would raise on NaN or infinity).
pub(crate) fn py_int(x: f64) -> i64 {
    if x.is_nan() {
        0
    } else {
        x as i64
    }
}

/// Formats a float as Python's `str()`/`repr()` does (`42.0`, `1e-05`).
pub(crate) fn repr(x: f64) -> String {
    py::float_repr(x)
}

/// A function refusing its input (HTTP 400).
pub(crate) fn input_error(function: &str, message: impl Into<String>) -> QueryError {
    QueryError::Function {
        function: function.to_string(),
        message: message.into(),
        input: true,
    }
}

/// graphite-web's `evaluateTarget(newContext, requestContext['args'][0])`: the
/// function's first argument evaluated again over `ctx` (a wider or other interval),
/// with the same `template()` substitutions. graphite-web needs the argument to be
/// positional (it reads the raw argument list); so does this.
pub(crate) fn eval_first_arg(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: &Invocation<'_>,
) -> Result<Vec<TimeSeries>, QueryError> {
    let Some(first) = inv.raw_args.first() else {
        return Err(input_error(
            inv.name,
            "the series list must be the first positional argument",
        ));
    };
    match session.eval_arg(ctx, first, inv.replacements)? {
        Value::SeriesList(series) => Ok(series),
        other if !other.is_truthy() => Ok(Vec::new()),
        other => Err(input_error(
            inv.name,
            format!("the first argument is {}, not a series list", other.kind()),
        )),
    }
}

/// graphite-web's `evaluateTarget(requestContext, text)` for a target it builds itself
/// (`useSeriesAbove`, `aliasQuery`).
pub(crate) fn eval_target_text(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    text: &str,
) -> Result<Vec<TimeSeries>, QueryError> {
    if py::strip(text).is_empty() {
        return Ok(Vec::new());
    }
    let parsed = grammar::parse(text)?;
    match session.eval_expr(ctx, &parsed.expr, None)? {
        Value::SeriesList(series) => Ok(series),
        _ => Ok(Vec::new()),
    }
}

/// The series list in parameter `i` (taken out of the arguments).
pub(crate) fn take_series(inv: &mut Invocation<'_>, i: usize) -> Vec<TimeSeries> {
    inv.args
        .take(i)
        .into_iter()
        .flat_map(|v| match v {
            Value::SeriesList(s) => s,
            _ => Vec::new(),
        })
        .collect()
}

/// Python's `seq[start:stop]` bounds for a sequence of `len` items.
pub(crate) fn py_slice_bounds(len: usize, start: Option<i64>, stop: Option<i64>) -> (usize, usize) {
    let len_i = len as i64;
    let clamp = |i: i64| -> usize {
        let i = if i < 0 {
            (i + len_i).max(0)
        } else {
            i.min(len_i)
        };
        i as usize
    };
    let a = start.map_or(0, clamp);
    let b = stop.map_or(len, clamp);
    (a, b.max(a))
}

/// Python's `seq[start:stop]`.
pub(crate) fn py_slice<T>(mut items: Vec<T>, start: Option<i64>, stop: Option<i64>) -> Vec<T> {
    let (a, b) = py_slice_bounds(items.len(), start, stop);
    items.truncate(b);
    items.drain(..a);
    items
}

/// Python's `seq[i]` index (negative from the end); `None` where Python raises.
pub(crate) fn py_index(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
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

/// Python's `x ** 2` for a float: the C library's `pow(x, 2.0)`, which is not always
/// `x * x` (glibc's `pow` is accurate to about half an ulp, not correctly rounded).
/// The exponent is hidden from the optimiser, which would otherwise fold it to a
/// multiplication.
pub(crate) fn py_square(x: f64) -> f64 {
    x.powf(std::hint::black_box(2.0))
}

/// Python's `round(x, 6)`: correctly rounded to six decimals (half to even on the
/// exact binary value), as `exponentialMovingAverage` rounds.
pub(crate) fn round6(x: f64) -> f64 {
    // every double of magnitude 2^52 or more is an integer: nothing to round
    if !x.is_finite() || x.abs() >= 4503599627370496.0 {
        return x;
    }
    // at most 16 integer digits, a sign, a point and six decimals: a stack buffer
    let mut buf = StackText::<32>::new();
    if std::fmt::Write::write_fmt(&mut buf, format_args!("{x:.6}")).is_err() {
        return x;
    }
    buf.as_str().parse().unwrap_or(x)
}

/// A fixed-size text buffer for formatting without allocating.
struct StackText<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            bytes: [0; N],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> std::fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > N {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

// ---- Aligning series of different steps, graphite's `series.copy()`, calling a
// ---- function by name, and Python's `round()` and `'%d'` (used by Combine and
// ---- Transform)

/// The interval series share once [`normalize`]d: graphite-web's `(start, end, step)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) step: i64,
}

/// graphite-web's `lcm`; `None` for a step that is not positive or a multiple beyond
/// `i64` (where graphite-web divides by zero or grows without bound).
pub(crate) fn lcm(a: i64, b: i64) -> Option<i64> {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if a <= 0 || b <= 0 {
        return None;
    }
    if a == b {
        return Some(a);
    }
    let (a, b) = if a < b { (b, a) } else { (a, b) };
    (a / gcd(a, b)).checked_mul(b)
}

/// graphite-web's `normalize`: the series are read at the least common multiple of
/// their steps (each gets `values_per_point = lcm / step`, so they consolidate), from
/// the earliest start to the latest end, the end trimmed to a whole number of steps
/// from the start. `None` when there is no series (graphite-web's
/// `NormalizeEmptyResultError`, after which a function returns no series) or a step
/// is not positive.
pub(crate) fn normalize(series: &mut [&mut TimeSeries]) -> Option<Span> {
    let (first, rest) = series.split_first()?;
    let mut step = first.step;
    let (mut start, mut end) = (first.start, first.end);
    for s in rest {
        step = lcm(step, s.step)?;
        start = start.min(s.start);
        end = end.max(s.end);
    }
    if step <= 0 {
        return None;
    }
    for s in series.iter_mut() {
        s.values_per_point = usize::try_from(step / s.step).unwrap_or(1);
    }
    end -= (end - start).rem_euclid(step);
    Some(Span { start, end, step })
}

/// [`normalize`] over one list.
pub(crate) fn normalize_list(series: &mut [TimeSeries]) -> Option<Span> {
    let mut refs: Vec<&mut TimeSeries> = series.iter_mut().collect();
    normalize(&mut refs)
}

/// graphite-web's `formatPathExpressions`: the series' path expressions without
/// repeats, in order, joined with `,` (what `sumSeries(a.*,b.*)` is named after).
pub(crate) fn format_path_expressions<'a>(
    series: impl IntoIterator<Item = &'a TimeSeries>,
) -> String {
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut out = String::new();
    for s in series {
        if seen.insert(s.path_expression.as_str()) {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&s.path_expression);
        }
    }
    out
}

/// graphite-web's `series.copy(name=…, values=…)`: a new series with the same
/// interval, tags, consolidation function and xFilesFactor; the path expression is the
/// new name, it is read unconsolidated, and drawing options are not carried over.
pub(crate) fn copy_of(series: &TimeSeries, name: String, values: Vec<Option<f64>>) -> TimeSeries {
    TimeSeries {
        path_expression: name.clone(),
        name,
        start: series.start,
        end: series.end,
        step: series.step,
        values,
        tags: series.tags.clone(),
        consolidation: series.consolidation,
        x_files_factor: series.x_files_factor,
        values_per_point: 1,
        options: crate::series::SeriesOptions::default(),
    }
}

/// Calls the function registered as `name` with `args` as positional arguments, as
/// graphite-web's `groupByNodes`, `groupByTags` and `reduceSeries` call
/// `SeriesFunctions[name](requestContext, …)`. A function that evaluates its raw
/// arguments again (`timeShift`) finds none and fails.
pub(crate) fn call_function(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    name: &str,
    args: Vec<Value>,
) -> Result<Vec<TimeSeries>, QueryError> {
    let Some(def) = session.functions().get(name).copied() else {
        return Err(QueryError::UnknownFunction {
            name: name.to_string(),
        });
    };
    let bound = {
        let functions = session.functions();
        crate::functions::bind(name, def.params, args, Vec::new(), &|n| {
            functions.is_aggregator(n)
        })?
    };
    let invocation = Invocation {
        name,
        args: bound,
        raw_args: &[],
        replacements: None,
    };
    match (def.run)(session, ctx, invocation)? {
        Value::SeriesList(series) => Ok(series),
        _ => Ok(Vec::new()),
    }
}

/// graphite-web's `safePow`: `math.pow(a, b)`, or `None` where Python raises
/// (`ValueError` for a negative base to a fractional power or zero to a negative one,
/// `OverflowError` for a finite result too large).
pub(crate) fn py_pow(a: f64, b: f64) -> Option<f64> {
    let r = a.powf(b);
    if a.is_finite() && b.is_finite() && !r.is_finite() {
        // a NaN from finite operands is a domain error; an infinity is one when the base
        // is zero (division by zero), an overflow otherwise
        return None;
    }
    Some(r)
}

/// graphite-web's `safeDiv(a, b)`: `None` when either is missing or `b` is zero.
pub(crate) fn safe_div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Python's `round(x, ndigits)` of a float: the exact binary value rounded to
/// `ndigits` decimals (tens, hundreds… when negative), ties to even.
pub(crate) fn py_round(x: f64, ndigits: i64) -> f64 {
    // CPython's limits beyond which the answer is x itself, or a zero
    if !x.is_finite() || x == 0.0 || ndigits > 323 {
        return x;
    }
    if ndigits < -308 {
        return 0.0 * x;
    }
    if ndigits >= 0 {
        // Rust's fixed-precision formatting is exact, with ties to even, as dtoa's mode 3
        return format!("{:.*}", ndigits as usize, x).parse().unwrap_or(x);
    }
    let k = (-ndigits) as usize;
    let int_part = x.trunc();
    let has_fraction = x != int_part;
    let digits = format!("{:.0}", int_part.abs());
    let digits = if digits == "0" { String::new() } else { digits };
    // quotient digits and the k digits below the rounding position
    let (quotient, below) = if digits.len() > k {
        digits.split_at(digits.len() - k)
    } else {
        ("", digits.as_str())
    };
    let below_padded = format!("{below:0>k$}");
    let half = format!("5{}", "0".repeat(k - 1));
    let up = match below_padded.as_str().cmp(half.as_str()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            has_fraction || quotient.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1)
        }
    };
    let mut q: Vec<u8> = if quotient.is_empty() {
        vec![b'0']
    } else {
        quotient.bytes().collect()
    };
    if up {
        let mut i = q.len();
        loop {
            if i == 0 {
                q.insert(0, b'1');
                break;
            }
            i -= 1;
            if q[i] == b'9' {
                q[i] = b'0';
            } else {
                q[i] += 1;
                break;
            }
        }
    }
    let text = format!("{}e{k}", String::from_utf8_lossy(&q));
    let magnitude: f64 = text.parse().unwrap_or(0.0);
    if x < 0.0 {
        -magnitude
    } else {
        magnitude
    }
}

/// Python's `'%d' % x` of a float: truncated toward zero; `None` where Python raises
/// (infinity, NaN).
pub(crate) fn format_d(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    let t = x.trunc();
    if t == 0.0 {
        return Some("0".to_string());
    }
    Some(format!("{t:.0}"))
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

    #[test]
    fn python_min_max_keep_the_first_of_unordered_values() {
        let nan = f64::NAN;
        assert!(py_max([nan, 1.0].into_iter()).unwrap().is_nan());
        assert_eq!(py_max([1.0, nan].into_iter()), Some(1.0));
        assert_eq!(py_min([1.0, nan, 0.5].into_iter()), Some(0.5));
    }

    #[test]
    fn python_sort_is_stable_and_reversible() {
        let items = vec!["a", "b", "c", "d", "e"];
        let keys = [2.0, 1.0, 2.0, f64::NEG_INFINITY, 1.0];
        assert_eq!(
            py_sort_by_keys(items.clone(), &keys, false),
            vec!["d", "b", "e", "a", "c"]
        );
        // reverse keeps equal keys in their original order
        assert_eq!(
            py_sort_by_keys(items, &keys, true),
            vec!["a", "c", "b", "e", "d"]
        );
        // CPython: sorted([3.0, nan, 1.0, 2.0]) == [3.0, nan, 1.0, 2.0]
        let mut v = [3.0, f64::NAN, 1.0, 2.0];
        py_sort_floats(&mut v);
        assert_eq!((v[0], v[2], v[3]), (3.0, 1.0, 2.0));
        assert!(v[1].is_nan());
        // CPython: sorted([5.0, 4.0, nan, 1.0]) == [1.0, 4.0, 5.0, nan]
        let mut v = [5.0, 4.0, f64::NAN, 1.0];
        py_sort_floats(&mut v);
        assert_eq!((v[0], v[1], v[2]), (1.0, 4.0, 5.0));
        assert!(v[3].is_nan());
        // without NaN, the sign of zero keeps its order, as in CPython
        let mut z = [0.0, -0.0, -1.0, -0.0, 0.0];
        py_sort_floats(&mut z);
        let signs: Vec<bool> = z.iter().map(|v| v.is_sign_negative()).collect();
        assert_eq!(signs, [true, false, true, true, false]);
        // the merge path agrees with a plain stable sort on ordered keys
        let mut long: Vec<f64> = (0..200).map(|i| ((i * 37) % 101) as f64).collect();
        let mut want = long.clone();
        want.sort_by(f64::total_cmp);
        py_sort(&mut long, &|a: &f64, b: &f64| a < b);
        assert_eq!(long, want);
    }

    #[test]
    fn percent_g_like_python() {
        let cases: &[(f64, &str)] = &[
            (5.0, "5"),
            (2.5, "2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1e16, "1e+16"),
            (-0.5, "-0.5"),
            (95.0, "95"),
            (33.333333333, "33.3333"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
            (999999.5, "1e+06"),
            (1.5e-300, "1.5e-300"),
        ];
        for &(x, want) in cases {
            assert_eq!(format_g(x), want, "{x:e}");
        }
        assert_eq!(format_fixed(0.125, 2), "0.12");
        assert_eq!(format_g_with(1e-7, 3, true), "1.00e-07");
        assert_eq!(format_g_with(0.0, 3, true), "0.00");
        assert_eq!(format_fixed(f64::NAN, 2), "nan");
    }

    #[test]
    fn round6_like_python() {
        // each checked against CPython 3.11's round(x, 6)
        assert_eq!(round6(0.1234565), 0.123456);
        assert_eq!(round6(2.5e-7), 0.0);
        assert_eq!(round6(-1.0000005), -1.000001);
        assert_eq!(round6(123456789.1234567), 123456789.123457);
        assert_eq!(round6(1e300), 1e300);
        assert!(round6(f64::NAN).is_nan());
    }

    #[test]
    fn percent_format_like_python() {
        // each checked against CPython 3.11's `template % value`
        let cases: &[(&str, f64, &str)] = &[
            ("%d Apples", 3.75, "3 Apples"),
            ("%d Apples", -1234567.5, "-1234567 Apples"),
            ("%.2f", -1234567.5, "-1234567.50"),
            ("%5.1f|", 3.75, "  3.8|"),
            ("%-8s|", 1e-7, "1e-07   |"),
            ("%+d", 1e-7, "+0"),
            ("%d", -0.5, "0"),
            ("%e", -1234567.5, "-1.234568e+06"),
            ("%g", -1234567.5, "-1.23457e+06"),
            ("%010.3f", 3.75, "000003.750"),
            ("%s", 0.0, "0.0"),
            ("% d", 3.75, " 3"),
            ("%E", 1e-7, "1.000000E-07"),
            ("%G", 1e-7, "1E-07"),
            ("%.0f", -1234567.5, "-1234568"),
            ("%#.3g", 1e-7, "1.00e-07"),
            ("%05d", 3.75, "00003"),
            ("%-05d|", 3.75, "3    |"),
            ("100%% of %s", 2.0, "100% of 2.0"),
        ];
        for &(t, v, want) in cases {
            assert_eq!(percent_format(t, v).as_deref(), Ok(want), "{t:?} % {v}");
        }
        assert!(percent_format("%x", 3.0).is_err());
        assert!(percent_format("%999999999d", 3.0).is_err());
        assert!(percent_format("%.99999999f", 3.0).is_err());
        assert!(percent_format("plain", 3.0).is_err());
        assert!(percent_format("%s %s", 3.0).is_err());
    }

    #[test]
    fn units_like_glyph() {
        assert_eq!(
            format_units(1500.0, UnitSystem::Si, None),
            (1.5, "k".to_string())
        );
        assert_eq!(
            format_units(2048.0, UnitSystem::Binary, Some("B")),
            (2.0, "KiB".to_string())
        );
        assert_eq!(
            format_units(12.0, UnitSystem::Si, Some("b")),
            (12.0, "b".to_string())
        );
        assert_eq!(
            format_units(-3e6, UnitSystem::Si, None),
            (-3.0, "M".to_string())
        );
        assert_eq!(pad("ab", -4), "ab  ");
        assert_eq!(pad("ab", 4), "  ab");
        assert_eq!(pad("abcdef", -4), "abcdef");
    }

    #[test]
    fn nodes_and_tags() {
        let s = TimeSeries::new("a.b.c;host=x", 0, 60, 60, vec![]);
        assert_eq!(node_or_tag(&s, &Value::Int(1), None), "b");
        assert_eq!(node_or_tag(&s, &Value::Int(-1), None), "c");
        assert_eq!(node_or_tag(&s, &Value::Int(5), None), "");
        assert_eq!(node_or_tag(&s, &Value::Str("host".into()), None), "x");
        let f = TimeSeries::new("movingAverage(x.y.z,5)", 0, 60, 60, vec![]);
        assert_eq!(first_path_expression(&f.name).as_deref(), Some("x.y.z"));
        assert_eq!(agg_key(&f, &[Value::Int(0), Value::Int(2)]), "x.z");
        assert_eq!(first_path_expression("constantLine(5)"), None);
    }
}

#[cfg(test)]
mod alignment_tests {
    use super::*;

    fn series(step: i64, start: i64, n: usize) -> TimeSeries {
        TimeSeries::new(
            "x",
            start,
            start + step * n as i64,
            step,
            vec![Some(1.0); n],
        )
    }

    #[test]
    fn normalize_like_graphite() {
        let mut list = vec![series(10, 100, 6), series(15, 90, 4), series(10, 110, 3)];
        let span = normalize_list(&mut list).unwrap();
        // lcm(10, 15) = 30; start 90, end max(160, 150, 140) = 160 trimmed to 150
        assert_eq!(
            span,
            Span {
                start: 90,
                end: 150,
                step: 30
            }
        );
        let vpp: Vec<usize> = list.iter().map(|s| s.values_per_point).collect();
        assert_eq!(vpp, vec![3, 2, 3]);
        assert_eq!(normalize_list(&mut []), None);
        assert_eq!(normalize_list(&mut [series(0, 0, 1)]), None);
        assert_eq!(lcm(4, 6), Some(12));
        assert_eq!(lcm(60, 60), Some(60));
        assert_eq!(lcm(i64::MAX, i64::MAX - 1), None);
    }

    #[test]
    fn path_expressions_once_each_in_order() {
        let mut a = series(10, 0, 1);
        a.path_expression = "a.*".into();
        let mut b = series(10, 0, 1);
        b.path_expression = "b".into();
        assert_eq!(format_path_expressions([&a, &b, &a]), "a.*,b");
    }

    #[test]
    fn round_like_python() {
        // each checked with CPython 3.11's round()
        let cases: &[(f64, i64, f64)] = &[
            (0.5, 0, 0.0),
            (1.5, 0, 2.0),
            (2.5, 0, 2.0),
            (0.25, 1, 0.2),
            (2.675, 2, 2.67),
            (0.375, 2, 0.38),
            (15.0, -1, 20.0),
            (25.0, -1, 20.0),
            (5.0, -1, 0.0),
            (5.000001, -1, 10.0),
            (1234.5678, -2, 1200.0),
            (-1250.0, -2, -1200.0),
            (-1350.0, -2, -1400.0),
            (99999.0, -3, 100000.0),
            (123.0, -5, 0.0),
            (1.0000005, 6, 1.000001),
            (0.1234565, 6, 0.123456),
        ];
        for &(x, n, want) in cases {
            assert_eq!(py_round(x, n).to_bits(), want.to_bits(), "round({x}, {n})");
        }
        assert_eq!(py_round(-0.4, 0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(py_round(-4.0, -1).to_bits(), (-0.0f64).to_bits());
        assert!(py_round(f64::NAN, 2).is_nan());
        assert_eq!(py_round(f64::INFINITY, 2), f64::INFINITY);
        assert_eq!(py_round(1e300, 6), 1e300);
    }

    #[test]
    fn percent_d_like_python() {
        assert_eq!(format_d(2.7).as_deref(), Some("2"));
        assert_eq!(format_d(-2.7).as_deref(), Some("-2"));
        assert_eq!(format_d(-0.5).as_deref(), Some("0"));
        assert_eq!(format_d(1e20).as_deref(), Some("100000000000000000000"));
        assert_eq!(format_d(f64::INFINITY), None);
        assert_eq!(format_d(f64::NAN), None);
    }
}
