//! graphite-web's "Alias" group: functions that rename series — `alias`, `aliasSub`
//! (Python `re.sub`), `aliasByNode`/`aliasByTags` (nodes of the first path in the name,
//! or tags), `aliasByMetric`, `aliasQuery` (a name built from another series' last
//! value), `legendValue` (aggregates appended to the name), `upper`, `lower`.
//!
//! Only names change: values, path expressions and tags stay as they are (the legend
//! shows the name). `aliasQuery` fails as bad input when the query finds no series or
//! no last value (graphite-web: an input error, and a server error for the second).

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{row, AggFunc};
use crate::functions::args::{eval_target_text, input_error, take_series};
use crate::functions::naming::{agg_key, format_units, UnitSystem};
use crate::functions::params::{Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl, Invocation};
use crate::py;
use crate::py::format::{format_fixed, pad, percent_format};
use crate::py::re::Substitution;
use crate::py::seq::{py_index, py_slice};

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();

static ALIAS_PARAMS: [Param; 2] = [SERIES, Param::new("newName", T::String).required()];
static ONLY_SERIES: [Param; 1] = [SERIES];
static BY_NODE_PARAMS: [Param; 2] = [
    SERIES,
    Param::new("nodes", T::NodeOrTag).required().multiple(),
];
static BY_TAGS_PARAMS: [Param; 2] = [
    SERIES,
    Param::new("tags", T::NodeOrTag).required().multiple(),
];
static QUERY_PARAMS: [Param; 4] = [
    SERIES,
    Param::new("search", T::String).required(),
    Param::new("replace", T::String).required(),
    Param::new("newName", T::String).required(),
];
static SUB_PARAMS: [Param; 3] = [
    SERIES,
    Param::new("search", T::String).required(),
    Param::new("replace", T::String).required(),
];
/// graphite-web accepts every aggregation name, its deprecated `…Series` spelling,
/// and a unit system last.
const LEGEND_OPTIONS: &[&str] = &[
    "average",
    "averageSeries",
    "avg",
    "avgSeries",
    "avg_zero",
    "avg_zeroSeries",
    "binary",
    "count",
    "countSeries",
    "current",
    "currentSeries",
    "diff",
    "diffSeries",
    "last",
    "lastSeries",
    "max",
    "maxSeries",
    "median",
    "medianSeries",
    "min",
    "minSeries",
    "multiply",
    "multiplySeries",
    "range",
    "rangeOf",
    "rangeOfSeries",
    "rangeSeries",
    "si",
    "stddev",
    "stddevSeries",
    "sum",
    "sumSeries",
    "total",
    "totalSeries",
];
static LEGEND_PARAMS: [Param; 2] = [
    SERIES,
    Param::new("valuesTypes", T::String)
        .multiple()
        .options(LEGEND_OPTIONS),
];
static CASE_PARAMS: [Param; 2] = [SERIES, Param::new("pos", T::Integer).multiple()];

const fn def(
    name: &'static str,
    params: &'static [Param],
    description: &'static str,
    run: FunctionImpl,
) -> FunctionDef {
    FunctionDef {
        name,
        group: "Alias",
        description,
        params,
        aggregator: false,
        run,
    }
}

/// The renaming functions.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "alias",
        &ALIAS_PARAMS,
        "Renames every series to the given text.",
        alias,
    ),
    def(
        "aliasSub",
        &SUB_PARAMS,
        "Renames series with a regular expression search and replace.\n\n\
        Python syntax: groups are referenced as \\1 or \\g<name> in the replacement.",
        alias_sub,
    ),
    def(
        "aliasByNode",
        &BY_NODE_PARAMS,
        "Renames series to some of their name's nodes or tags.\n\n\
        Nodes are counted from 0 (negative from the end) in the first metric path of the \
        name; a string picks a tag. The parts are joined with dots.",
        alias_by_node,
    ),
    def(
        "aliasByTags",
        &BY_TAGS_PARAMS,
        "Renames series to some of their tags or nodes.\n\n\
        The same as aliasByNode: strings pick tags, numbers pick nodes.",
        alias_by_node,
    ),
    def(
        "aliasByMetric",
        &ONLY_SERIES,
        "Renames series to the last node of their metric path.",
        alias_by_metric,
    ),
    def(
        "aliasQuery",
        &QUERY_PARAMS,
        "Renames series after the last value of another query.\n\n\
        The name is rewritten with search and replace into a target, which is evaluated; the \
        last known value of its first series fills the %-format in newName (e.g. '%d hosts').",
        alias_query,
    ),
    def(
        "legendValue",
        &LEGEND_PARAMS,
        "Appends aggregates of each series to its name.\n\n\
        Any aggregation names (last, avg, total, min, max, …); with 'si' or 'binary' last, \
        the values are written with unit prefixes in aligned columns.",
        legend_value,
    ),
    def(
        "upper",
        &CASE_PARAMS,
        "Upper-cases series names, or only the characters at the given positions.",
        upper,
    ),
    def(
        "lower",
        &CASE_PARAMS,
        "Lower-cases series names, or only the characters at the given positions.",
        lower,
    ),
];

fn alias(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let name = inv.args.str(1).unwrap_or("").to_string();
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.name = name.clone();
    }
    Ok(Value::SeriesList(series))
}

fn alias_sub(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let search = inv.args.str(1).unwrap_or("").to_string();
    let replace = inv.args.str(2).unwrap_or("").to_string();
    let sub =
        Substitution::new(&search, &replace).map_err(|e| input_error(inv.name, e.to_string()))?;
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.name = sub.apply(&s.name);
    }
    Ok(Value::SeriesList(series))
}

fn alias_by_node(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let nodes: Vec<Value> = inv
        .args
        .all(1)
        .iter()
        .map(|n| match n {
            // a whole float would be an index for graphite-web (which then fails)
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 1e15 => Value::Int(*x as i64),
            other => other.clone(),
        })
        .collect();
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.name = agg_key(s, &nodes);
    }
    Ok(Value::SeriesList(series))
}

/// graphite-web's `substr` on one name: the dotted nodes `start..stop` (Python slice;
/// `stop == 0` means to the end) of the innermost parenthesised part, cut at its
/// first comma.
pub(crate) fn substr_name(name: &str, start: i64, stop: i64) -> String {
    let left = name.rfind('(').map_or(0, |i| i + 1);
    let right = name.find(')').unwrap_or(name.len());
    let clean = if right > left { &name[left..right] } else { "" };
    let nodes: Vec<&str> = clean.split('.').collect();
    let kept = py_slice(nodes, Some(start), (stop != 0).then_some(stop));
    cut_at_comma(&kept.join("."))
}

/// `re.sub(',.*$', '', name)`: from the first comma whose rest of the line reaches the
/// end of the text (or a final newline), everything is dropped.
fn cut_at_comma(name: &str) -> String {
    for (i, _) in name.match_indices(',') {
        let rest = &name[i..];
        match rest.find('\n') {
            None => return name[..i].to_string(),
            Some(k) if k == rest.len() - 1 => return format!("{}\n", &name[..i]),
            Some(_) => continue,
        }
    }
    name.to_string()
}

fn alias_by_metric(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.name = substr_name(&s.name, -1, 0);
    }
    Ok(Value::SeriesList(series))
}

fn alias_query(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let search = inv.args.str(1).unwrap_or("").to_string();
    let replace = inv.args.str(2).unwrap_or("").to_string();
    let template = inv.args.str(3).unwrap_or("").to_string();
    let sub =
        Substitution::new(&search, &replace).map_err(|e| input_error(inv.name, e.to_string()))?;
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        let query = sub.apply(&s.name);
        let found = eval_target_text(session, ctx, &query)?;
        let Some(first) = found.first() else {
            return Err(input_error(
                inv.name,
                format!("No series found with query: {query}"),
            ));
        };
        let Some(last) = AggFunc::Last.apply(&row(first)) else {
            return Err(input_error(
                inv.name,
                format!("Cannot get last value of series: {}", first.name),
            ));
        };
        s.name = percent_format(&template, last).map_err(|m| input_error(inv.name, m))?;
    }
    Ok(Value::SeriesList(series))
}

/// `%s` of an aggregate as Python prints it (`count` is an int; `None` for nothing).
fn shown(func: AggFunc, value: Option<f64>) -> String {
    match value {
        None => "None".to_string(),
        Some(v) if func.is_integer() => format!("{}", v as i64),
        Some(v) => py::float_repr(v),
    }
}

fn legend_value(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let mut types: Vec<String> = inv
        .args
        .all(1)
        .iter()
        .filter_map(|v| match v {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let mut series = take_series(&mut inv, 0);
    let system = match types.last().and_then(|t| UnitSystem::from_name(t)) {
        Some(system) => {
            types.pop();
            Some(system)
        }
        None => None,
    };
    for value_type in &types {
        // an unknown name (the deprecated …Series spellings) shows as (?)
        let func = AggFunc::from_name(value_type);
        for s in &mut series {
            let value = func.map(|f| f.apply(&row(s)));
            match system {
                None => {
                    let text = match (func, value) {
                        (Some(f), Some(v)) => shown(f, v),
                        _ => "(?)".to_string(),
                    };
                    s.name = format!("{} ({value_type}: {text})", s.name);
                }
                Some(system) => {
                    let formatted = match value {
                        None => "(?)".to_string(),
                        Some(None) => "None".to_string(),
                        Some(Some(v)) => {
                            let (v, prefix) = format_units(v, system, None);
                            format!("{}{prefix}", format_fixed(v, 2))
                        }
                    };
                    s.name = format!(
                        "{}{}{}",
                        pad(&s.name, -20),
                        pad(value_type, -5),
                        pad(&formatted, -10)
                    );
                }
            }
        }
    }
    Ok(Value::SeriesList(series))
}

/// `upper`/`lower`: the whole name, or the characters at the given positions
/// (negative from the end; positions past the end are ignored).
fn change_case(mut inv: Invocation<'_>, to_upper: bool) -> Value {
    let positions: Vec<i64> = inv
        .args
        .all(1)
        .iter()
        .filter_map(|v| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        })
        .collect();
    let convert = |s: &str| {
        if to_upper {
            s.to_uppercase()
        } else {
            s.to_lowercase()
        }
    };
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        if positions.is_empty() {
            s.name = convert(&s.name);
            continue;
        }
        let mut chars: Vec<String> = s.name.chars().map(String::from).collect();
        for &p in &positions {
            if let Some(i) = py_index(chars.len(), p) {
                chars[i] = convert(&chars[i]);
            }
        }
        s.name = chars.concat();
    }
    Value::SeriesList(series)
}

fn upper(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    Ok(change_case(inv, true))
}

fn lower(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    Ok(change_case(inv, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substr_like_graphite() {
        assert_eq!(substr_name("a.b.c.d", 1, 0), "b.c.d");
        assert_eq!(substr_name("a.b.c.d", 1, 3), "b.c");
        assert_eq!(substr_name("a.b.c.d", -1, 0), "d");
        assert_eq!(substr_name("movingAverage(a.b.c,5)", -1, 0), "c");
        assert_eq!(substr_name("sumSeries(a.b,c.d)", 0, 0), "a.b");
        assert_eq!(substr_name("f(g(x.y),z)", 0, 0), "x.y");
        assert_eq!(substr_name("a.b", 5, 0), "");
        assert_eq!(cut_at_comma("a,b\nc,d"), "a,b\nc");
    }
}
