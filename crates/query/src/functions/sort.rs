//! graphite-web's "Sorting" group: `sortBy`, `sortByName`, `sortByTotal`,
//! `sortByMaxima`, `sortByMinima`. Orders follow Python's stable `list.sort`,
//! `reverse` included (equal keys keep their original order either way); series
//! without a known value sort as `-inf`.

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{row, sort_key, AggFunc};
use crate::functions::args::{input_error, take_series};
use crate::functions::params::{DefaultValue as D, Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl, Invocation};
use crate::py::sort::py_sort_by_keys;

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();
static ONLY_SERIES: [Param; 1] = [SERIES];
static SORT_BY_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("func", T::AggFunc).default(D::Str("average")),
    Param::new("reverse", T::Boolean).default(D::Bool(false)),
];
static SORT_BY_NAME_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("natural", T::Boolean).default(D::Bool(false)),
    Param::new("reverse", T::Boolean).default(D::Bool(false)),
];

const fn def(
    name: &'static str,
    params: &'static [Param],
    description: &'static str,
    run: FunctionImpl,
) -> FunctionDef {
    FunctionDef {
        name,
        group: "Sorting",
        description,
        params,
        aggregator: false,
        run,
    }
}

/// The sorting functions.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "sortBy",
        &SORT_BY_PARAMS,
        "Sorts the series by an aggregate, ascending.\n\n\
        The aggregate is average by default, or any aggregation name; reverse=true sorts \
        descending.",
        sort_by,
    ),
    def(
        "sortByName",
        &SORT_BY_NAME_PARAMS,
        "Sorts the series by name.\n\n\
        natural=true compares runs of digits as numbers (host2 before host10); \
        reverse=true sorts descending.",
        sort_by_name,
    ),
    def(
        "sortByTotal",
        &ONLY_SERIES,
        "Sorts the series by the sum of their values, largest first.",
        sort_by_total,
    ),
    def(
        "sortByMaxima",
        &ONLY_SERIES,
        "Sorts the series by their maximum, largest first.",
        sort_by_maxima,
    ),
    def(
        "sortByMinima",
        &ONLY_SERIES,
        "Sorts the series by their minimum, smallest first.\n\n\
        Series whose maximum is not above zero are dropped.",
        sort_by_minima,
    ),
];

fn sorted(mut inv: Invocation<'_>, func: AggFunc, reverse: bool) -> Value {
    let series = take_series(&mut inv, 0);
    let keys: Vec<f64> = series.iter().map(|s| sort_key(func, s)).collect();
    Value::SeriesList(py_sort_by_keys(series, &keys, reverse))
}

fn sort_by(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let name = inv.args.str(1).unwrap_or("average");
    let func = AggFunc::from_name(name).ok_or_else(|| {
        input_error(
            inv.name,
            format!("Unsupported aggregation function: {name}"),
        )
    })?;
    let reverse = inv.args.bool(2).unwrap_or(false);
    Ok(sorted(inv, func, reverse))
}

fn sort_by_total(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    Ok(sorted(inv, AggFunc::Sum, true))
}

fn sort_by_maxima(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    Ok(sorted(inv, AggFunc::Max, true))
}

fn sort_by_minima(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let series: Vec<_> = take_series(&mut inv, 0)
        .into_iter()
        .filter(|s| AggFunc::Max.apply(&row(s)).unwrap_or(0.0) > 0.0)
        .collect();
    let keys: Vec<f64> = series.iter().map(|s| sort_key(AggFunc::Min, s)).collect();
    Ok(Value::SeriesList(py_sort_by_keys(series, &keys, false)))
}

/// graphite-web's natural sort key: every run of digits as a ten-digit zero-padded
/// number (Python's `"{0:010}".format(int(run))`, so longer runs stay as they are).
fn natural_key(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 16);
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.is_empty() {
            return;
        }
        let trimmed = digits.trim_start_matches('0');
        let number = if trimmed.is_empty() { "0" } else { trimmed };
        for _ in number.len()..10 {
            out.push('0');
        }
        out.push_str(number);
        digits.clear();
    };
    for c in name.chars() {
        // Python's \d matches every Unicode decimal digit; int() reads them all
        if let Some(d) = c.to_digit(10).or_else(|| unicode_decimal(c)) {
            digits.push(char::from_digit(d, 10).unwrap_or('0'));
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

/// The value of a non-ASCII decimal digit (Unicode category Nd), for the common
/// blocks whose digits run from a zero code point.
fn unicode_decimal(c: char) -> Option<u32> {
    const ZEROS: &[u32] = &[
        0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6,
        0x0D66, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x17E0, 0x1810, 0xFF10,
    ];
    let cp = c as u32;
    ZEROS
        .iter()
        .find(|&&z| (z..z + 10).contains(&cp))
        .map(|&z| cp - z)
}

fn sort_by_name(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let natural = inv.args.bool(1).unwrap_or(false);
    let reverse = inv.args.bool(2).unwrap_or(false);
    let mut series = take_series(&mut inv, 0);
    let mut keyed: Vec<(String, usize)> = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                if natural {
                    natural_key(&s.name)
                } else {
                    s.name.clone()
                },
                i,
            )
        })
        .collect();
    // stable, and reverse keeps equal names in their original order (Python's sort)
    if reverse {
        keyed.reverse();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.reverse();
    } else {
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let mut slots: Vec<Option<_>> = series.drain(..).map(Some).collect();
    Ok(Value::SeriesList(
        keyed
            .into_iter()
            .filter_map(|(_, i)| slots[i].take())
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_keys_pad_digit_runs() {
        assert_eq!(natural_key("host2.cpu"), "host0000000002.cpu");
        assert_eq!(natural_key("a10b007"), "a0000000010b0000000007");
        assert_eq!(natural_key("x12345678901"), "x12345678901");
        assert_eq!(natural_key("no digits"), "no digits");
        assert!(natural_key("host2") < natural_key("host10"));
    }
}
