//! The Combine functions that group series by name or tags and combine each group:
//! `groupByNode`, `groupByNodes`, `groupByTags`, `mapSeries` (`map`),
//! `reduceSeries` (`reduce`) and `applyByNode`.
//!
//! A group's callback is a registered function when one has that name (as graphite-web
//! looks in its `SeriesFunctions` first: `sum` and `avg` are `sumSeries` and
//! `averageSeries`), otherwise an aggregation function.
//!
//! `mapSeries` returns a list of lists in graphite-web, which only `reduceSeries` can
//! take (anything else, a render included, fails). sumi has no list of lists: it
//! returns the groups one after the other, which `reduceSeries` reads the same way,
//! and which renders as the series regrouped instead of failing.

use std::collections::HashMap;

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::args::{call_function, eval_target_text, input_error, take_series};
use crate::functions::naming::agg_key;
use crate::functions::Invocation;
use crate::py::seq::{py_index, py_slice};
use crate::series::{Tags, TimeSeries};

use super::aggregate::{agg_func, aggregate};

type Output = Result<Value, QueryError>;

/// Series in groups by key, groups in order of first appearance.
struct Groups {
    keys: Vec<String>,
    members: HashMap<String, Vec<TimeSeries>>,
}

impl Groups {
    fn new() -> Groups {
        Groups {
            keys: Vec::new(),
            members: HashMap::new(),
        }
    }

    fn add(&mut self, key: String, s: TimeSeries) {
        if !self.members.contains_key(&key) {
            self.keys.push(key.clone());
        }
        self.members.entry(key).or_default().push(s);
    }

    fn into_iter(mut self) -> impl Iterator<Item = (String, Vec<TimeSeries>)> {
        self.keys.into_iter().map(move |k| {
            let members = self.members.remove(&k).unwrap_or_default();
            (k, members)
        })
    }
}

/// Node arguments as graphite-web's `getNodeOrTag` takes them: integers (a boolean is
/// one, as in Python) and tag names. What it cannot take (a series list, `None`, a
/// whole float) fails there with a server error; sumi refuses it as bad input.
pub(super) fn check_nodes(function: &str, nodes: &[Value]) -> Result<Vec<Value>, QueryError> {
    nodes
        .iter()
        .map(|n| match n {
            Value::Int(_) | Value::Str(_) => Ok(n.clone()),
            Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
            Value::Float(x) if x.fract() != 0.0 => Ok(n.clone()),
            other => Err(input_error(
                function,
                format!(
                    "a node must be an integer or a tag name, not {}",
                    other.kind()
                ),
            )),
        })
        .collect()
}

/// The callback of `groupByNode(s)`/`groupByTags` applied to one group: a function
/// of the registry by that name, else an aggregation; its first series.
fn combine_group(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    function: &str,
    callback: &Value,
    group: Vec<TimeSeries>,
) -> Result<TimeSeries, QueryError> {
    let Value::Str(callback) = callback else {
        return Err(input_error(
            function,
            "the callback must name an aggregation function or an aggregating series function",
        ));
    };
    let result = if session.functions().get(callback).is_some() {
        call_function(session, ctx, callback, vec![Value::SeriesList(group)])?
    } else {
        let (name, func) = agg_func(callback).ok_or_else(|| {
            input_error(
                function,
                format!("unsupported aggregation function: {callback:?}"),
            )
        })?;
        let name = name.to_string();
        let xff = session.x_files_factor(ctx);
        aggregate(group, &name, func, xff).into_iter().collect()
    };
    result.into_iter().next().ok_or_else(|| {
        input_error(
            function,
            format!("{callback}() returned no series for a group"),
        )
    })
}

/// `groupByNodes(seriesList, callback, *nodes)`: grouped by the nodes (or tags) given,
/// each group combined and named after its key.
pub(super) fn group_by_nodes(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let callback = inv.args.get(1).cloned().unwrap_or(Value::None);
    let nodes = check_nodes(inv.name, inv.args.all(2))?;
    let series = take_series(&mut inv, 0);
    by_nodes(session, ctx, inv.name, series, &callback, &nodes)
}

/// `groupByNode(seriesList, nodeNum, callback='average')`.
pub(super) fn group_by_node(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let nodes = check_nodes(inv.name, inv.args.all(1))?;
    let callback = inv.args.get(2).cloned().unwrap_or(Value::None);
    let series = take_series(&mut inv, 0);
    by_nodes(session, ctx, inv.name, series, &callback, &nodes)
}

fn by_nodes(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    function: &str,
    series: Vec<TimeSeries>,
    callback: &Value,
    nodes: &[Value],
) -> Output {
    let mut groups = Groups::new();
    for s in series {
        groups.add(agg_key(&s, nodes), s);
    }
    let mut out = Vec::new();
    for (key, group) in groups.into_iter() {
        let mut result = combine_group(session, ctx, function, callback, group)?;
        result.name = key;
        out.push(result);
    }
    Ok(Value::SeriesList(out))
}

/// `groupByTags(seriesList, callback, *tags)`: grouped by the values of the tags
/// given, each group combined and named in carbon's tagged form
/// (`name;tag1=v1;tag2=v2`, tags sorted), which also gives its tags. The name is the
/// series' common `name` tag, or the callback's name when they differ.
pub(super) fn group_by_tags(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let callback = inv.args.get(1).cloned().unwrap_or(Value::None);
    let mut tags: Vec<String> = Vec::new();
    for t in inv.args.all(2) {
        match t {
            Value::Str(t) => tags.push(t.clone()),
            other => {
                return Err(input_error(
                    inv.name,
                    format!("a tag must be a name, not {}", other.kind()),
                ))
            }
        }
    }
    let series = take_series(&mut inv, 0);
    if tags.is_empty() {
        return Err(input_error(inv.name, "no tags specified"));
    }
    let by_name = tags.iter().any(|t| t == "name");
    let common_name = {
        let mut names: Vec<&str> = series
            .iter()
            .map(|s| s.tags.get("name").unwrap_or(""))
            .collect();
        names.sort_unstable();
        names.dedup();
        match names.as_slice() {
            [one] => one.to_string(),
            _ => callback.python_str(),
        }
    };
    let mut groups = Groups::new();
    for s in series {
        let mut parts: Vec<String> = tags
            .iter()
            .filter(|t| !by_name || t.as_str() != "name")
            .map(|t| format!("{t}={}", s.tags.get(t).unwrap_or("")))
            .collect();
        parts.sort();
        let head = if by_name {
            s.tags.get("name").unwrap_or("").to_string()
        } else {
            common_name.clone()
        };
        let key = std::iter::once(head)
            .chain(parts)
            .collect::<Vec<_>>()
            .join(";");
        groups.add(key, s);
    }
    let mut out = Vec::new();
    for (key, group) in groups.into_iter() {
        let tags = Tags::from_name(&key);
        if key.contains(';') && tags.len() < 2 {
            // graphite-web fails reading the tags back (a series without one of the
            // tags gives an empty value)
            return Err(input_error(
                inv.name,
                format!("the group name {key:?} is not a valid tagged name (does every series have the tags?)"),
            ));
        }
        let mut result = combine_group(session, ctx, inv.name, &callback, group)?;
        result.tags = tags;
        result.path_expression = key.clone();
        result.name = key;
        out.push(result);
    }
    Ok(Value::SeriesList(out))
}

/// `mapSeries(seriesList, *mapNodes)`: the series regrouped by the key of the nodes
/// given (see the module documentation).
pub(super) fn map_series(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let nodes = check_nodes(inv.name, inv.args.all(1))?;
    let mut groups = Groups::new();
    for s in take_series(&mut inv, 0) {
        groups.add(agg_key(&s, &nodes), s);
    }
    Ok(Value::SeriesList(
        groups
            .into_iter()
            .flat_map(|(_, members)| members)
            .collect(),
    ))
}

/// `reduceSeries(seriesLists, reduceFunction, reduceNode, *reduceMatchers)`: series
/// whose node `reduceNode` is one of the matchers are gathered under the rest of their
/// name up to that node; the function is called with one series per matcher, in the
/// matchers' order, and its result named `<prefix>.reduce.<function>`.
pub(super) fn reduce_series(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let function = inv.args.str(1).unwrap_or("").to_string();
    let node = inv.args.int(2).unwrap_or(0);
    let matchers: Vec<Option<String>> = inv
        .args
        .all(3)
        .iter()
        .map(|v| match v {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let mut keys: Vec<String> = Vec::new();
    let mut slots: HashMap<String, Vec<Option<TimeSeries>>> = HashMap::new();
    for s in take_series(&mut inv, 0) {
        let nodes: Vec<&str> = s.name.split('.').collect();
        let Some(at) = py_index(nodes.len(), node) else {
            return Err(input_error(
                inv.name,
                format!("series {:?} has no node {node}", s.name),
            ));
        };
        let here = nodes[at];
        let Some(i) = matchers.iter().position(|m| m.as_deref() == Some(here)) else {
            continue;
        };
        let prefix = py_slice(nodes.clone(), None, Some(node)).join(".");
        let key = format!("{prefix}.reduce.{function}");
        let entry = slots.entry(key.clone()).or_insert_with(|| {
            keys.push(key);
            vec![None; matchers.len()]
        });
        entry[i] = Some(s);
    }
    let mut out = Vec::new();
    for key in keys {
        let Some(members) = slots.remove(&key) else {
            continue;
        };
        let mut args = Vec::with_capacity(members.len());
        for (m, s) in matchers.iter().zip(members) {
            let Some(s) = s else {
                return Err(input_error(
                    inv.name,
                    format!(
                        "no series for matcher {:?} under {key:?}",
                        m.as_deref().unwrap_or("")
                    ),
                ));
            };
            args.push(Value::SeriesList(vec![s]));
        }
        let mut result = call_function(session, ctx, &function, args)?
            .into_iter()
            .next()
            .ok_or_else(|| {
                input_error(
                    inv.name,
                    format!("{function}() returned no series for {key:?}"),
                )
            })?;
        result.name = key;
        out.push(result);
    }
    Ok(Value::SeriesList(out))
}

/// `applyByNode(seriesList, nodeNum, templateFunction, newName=None)`: for each
/// distinct name prefix up to node `nodeNum` (sorted), the template with `%` replaced
/// by the prefix is evaluated as a target; its series take the prefix as path
/// expression, `newName` with `%` replaced as name when given, and the interval of the
/// last input series (graphite-web's leftover loop variable).
pub(super) fn apply_by_node(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let node = inv.args.int(1).unwrap_or(0);
    let template = inv.args.str(2).unwrap_or("").to_string();
    let new_name = inv.args.str(3).map(str::to_string);
    let series = take_series(&mut inv, 0);
    let Some(last) = series.last() else {
        return Ok(Value::SeriesList(Vec::new()));
    };
    let (start, end) = (last.start, last.end);
    let mut prefixes: Vec<String> = series
        .iter()
        .map(|s| {
            let nodes: Vec<&str> = s.name.split('.').collect();
            py_slice(nodes, None, Some(node.saturating_add(1))).join(".")
        })
        .collect();
    prefixes.sort();
    prefixes.dedup();
    let mut out = Vec::new();
    for prefix in prefixes {
        for mut s in eval_target_text(session, ctx, &template.replace('%', &prefix))? {
            if let Some(n) = new_name.as_deref().filter(|n| !n.is_empty()) {
                s.name = n.replace('%', &prefix);
            }
            s.path_expression = prefix.clone();
            s.start = start;
            s.end = end;
            out.push(s);
        }
    }
    Ok(Value::SeriesList(out))
}
