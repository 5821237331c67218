//! The function registry: name → implementation with typed parameters, as
//! graphite-web's `SeriesFunctions` table with each function's `params`.
//!
//! A function is a [`FunctionDef`]: its name, its group (as `/functions` lists them),
//! its [`Param`]s, whether it aggregates (so `aggregate(…, 'sumSeries')` may name it)
//! and a plain `fn` that receives the evaluation [`Session`], the request context and
//! its [`Invocation`] (the bound arguments plus the raw argument trees, for functions
//! such as `timeShift` that evaluate an argument again over another interval).
//!
//! The families, one file (or directory) each, follow graphite-web's groups; each
//! exports a `static` table of definitions that [`Registry::standard`] registers:
//! - `anomaly`: `anomalyScore`, the scores of sumi's ingest-time anomaly detector
//!   (not a graphite-web function);
//! - `alias`: renaming series (`alias`, `aliasSub`, `aliasByNode`, `aliasQuery`, …);
//! - `combine/`: merging series (`sumSeries`, `aggregate`, `asPercent`,
//!   `divideSeries`, `groupByNode`, `reduceSeries`, …);
//! - `transform/`: one series into another (`scale`, `derivative`, `perSecond`,
//!   `keepLastValue`, `summarize`, `timeShift`, `consolidateBy`, …);
//! - `calculate`, `moving`, `holt_winters`: statistics, moving windows, forecasts;
//! - `filter` (whole series) and `filter_data` (single points), `sort`;
//! - `graph`: drawing options and reference lines; `special`: generated series,
//!   `cactiStyle`, `cumulative` and the rest of graphite-web's odd ones.
//!
//! Beside them, what the families share: [`params`] (parameter types and binding),
//! `args` (taking arguments, evaluating one again, calling a function by name),
//! `aggregation` (graphite-web's aggregation functions and percentile), `align`
//! (`normalize` and `series.copy()`) and `naming` (node and tag lookup, unit
//! prefixes, path expressions). Python's own semantics (formatting, sorting, rounding,
//! regular expressions) are in [`crate::py`].

mod aggregation;
mod alias;
mod align;
pub mod anomaly;
mod args;
mod calculate;
mod combine;
mod filter;
mod filter_data;
mod graph;
mod holt_winters;
mod moving;
mod naming;
pub mod params;
mod sort;
mod special;
mod transform;

pub(crate) use aggregation::AggFunc;
pub(crate) use align::lcm;
pub(crate) use args::{call_function, input_error};
pub(crate) use combine::aggregate::{agg_func, Fold};
pub(crate) use naming::agg_key;

pub use params::{
    bind, is_agg_func, BoundArgs, DefaultValue, OnFloat, Param, ParamType, AGG_FUNCS,
};

use std::collections::HashMap;

use crate::error::QueryError;
use crate::eval::{Replacements, RequestContext, Session, Value};
use crate::grammar::Arg;

/// What a function is called with.
#[derive(Debug)]
pub struct Invocation<'a> {
    /// The name as written in the target.
    pub name: &'a str,
    /// The evaluated arguments, matched to the parameters.
    pub args: BoundArgs,
    /// The positional arguments as written (the piped value first, if any).
    pub raw_args: &'a [Arg],
    /// The `template()` substitutions in force, to evaluate `raw_args` again.
    pub replacements: Option<&'a Replacements>,
}

/// A function's body.
pub type FunctionImpl =
    fn(&mut Session<'_>, &RequestContext, Invocation<'_>) -> Result<Value, QueryError>;

/// One function of the target language.
#[derive(Clone, Copy, Debug)]
pub struct FunctionDef {
    pub name: &'static str,
    /// The group `/functions` shows (`Combine`, `Transform`, …).
    pub group: &'static str,
    /// What the function does, in our own words (shown by `/functions`, and so in
    /// Grafana's function editor). The first line is a one-sentence summary.
    pub description: &'static str,
    pub params: &'static [Param],
    /// Whether `aggregate()` and friends accept its name (graphite-web's
    /// `aggregator = True`).
    pub aggregator: bool,
    pub run: FunctionImpl,
}

/// The functions a target may call.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    functions: HashMap<&'static str, FunctionDef>,
}

impl Registry {
    /// A registry with no function: only paths and templates evaluate.
    pub fn empty() -> Registry {
        Registry::default()
    }

    /// Every function sumi implements.
    pub fn standard() -> Registry {
        // Function families register here as they are written.
        let mut r = Registry::empty();
        r.register_all(alias::FUNCTIONS);
        r.register_all(anomaly::FUNCTIONS);
        r.register_all(calculate::FUNCTIONS);
        r.register_all(filter::FUNCTIONS);
        r.register_all(filter_data::FUNCTIONS);
        r.register_all(graph::FUNCTIONS);
        r.register_all(holt_winters::FUNCTIONS);
        r.register_all(moving::FUNCTIONS);
        r.register_all(sort::FUNCTIONS);
        r.register_all(special::FUNCTIONS);
        r.register_all(combine::FUNCTIONS);
        r.register_all(transform::FUNCTIONS);
        r
    }

    /// Adds every function of a family's table.
    pub fn register_all(&mut self, defs: &[FunctionDef]) {
        for def in defs {
            self.register(*def);
        }
    }

    /// Adds (or replaces) a function under its name.
    pub fn register(&mut self, def: FunctionDef) {
        self.functions.insert(def.name, def);
    }

    /// Adds a function under another name too (`sum` for `sumSeries`).
    #[cfg(test)]
    pub(crate) fn alias(&mut self, alias: &'static str, def: FunctionDef) {
        self.functions
            .insert(alias, FunctionDef { name: alias, ..def });
    }

    pub fn get(&self, name: &str) -> Option<&FunctionDef> {
        self.functions.get(name)
    }

    /// Whether `name` is an aggregating function (for `aggOrSeriesFunc` parameters).
    pub fn is_aggregator(&self, name: &str) -> bool {
        self.functions.get(name).is_some_and(|f| f.aggregator)
    }

    /// Every function, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &FunctionDef> {
        let mut all: Vec<&FunctionDef> = self.functions.values().collect();
        all.sort_by_key(|f| f.name);
        all.into_iter()
    }

    pub fn len(&self) -> usize {
        self.functions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }
}

#[cfg(test)]
mod deviations;
#[cfg(test)]
mod golden;
#[cfg(test)]
mod perf;
#[cfg(test)]
mod tests;
