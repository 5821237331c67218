//! Evaluating targets: graphite-web's `evaluateTarget`/`evaluateTokens`.
//!
//! A request's targets are parsed first (so a syntax error in any of them fails the
//! request before anything is fetched); their path expressions are then found and
//! fetched in one batch (`fetch.rs`); finally each target is evaluated and the series
//! of all targets are concatenated in order. A path evaluates to the series of its
//! matching leaves, sorted by name; a call to a function from the [`Registry`] with its
//! arguments evaluated first; a `template(...)` to its inner expression with `$name`
//! substituted (`template.rs`).
//!
//! A target whose value is falsy (no series, `0`, an empty string) contributes nothing,
//! as in graphite-web; a target that yields a non-empty constant is an error.

mod fetch;
mod stream;
mod tags;
mod targets;
mod template;
mod value;

pub use template::{substitute, Replacements, Substituted};
pub use value::Value;

use std::collections::HashMap;

use chrono_tz::Tz;

use crate::attime::TimeRange;
use crate::error::QueryError;
use crate::functions::{bind, Invocation, Registry};
use crate::grammar::{Arg, Call, Expr};
use crate::series::TimeSeries;
use crate::source::SeriesSource;

/// Everything about a render request that evaluation needs (graphite-web's
/// `requestContext`).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestContext {
    /// Epoch seconds; `from < until`.
    pub from: i64,
    pub until: i64,
    /// The `now` the request's times were read against (and that storage uses to pick
    /// an archive).
    pub now: i64,
    /// For functions that read wall-clock times (`timeSlice`, `summarize` alignment).
    pub tz: Tz,
    /// Given to every fetched series; graphite-web's default is 0.
    pub x_files_factor: f64,
    pub max_data_points: Option<u64>,
    /// The request's `template[name]=value` parameters, in order.
    pub template: Vec<(String, String)>,
    /// Refuse targets with trailing text instead of ignoring it as graphite-web does.
    pub strict: bool,
}

impl RequestContext {
    /// A context for `range` in `tz`, with graphite-web's defaults for the rest.
    pub fn new(range: TimeRange, tz: Tz) -> RequestContext {
        RequestContext {
            from: range.from,
            until: range.until,
            now: range.now,
            tz,
            x_files_factor: 0.0,
            max_data_points: None,
            template: Vec::new(),
            strict: false,
        }
    }

    /// The same request over another interval (for functions that look back further).
    pub fn with_interval(&self, from: i64, until: i64) -> RequestContext {
        RequestContext {
            from,
            until,
            ..self.clone()
        }
    }
}

/// Evaluates targets against a source with a set of functions.
pub struct Evaluator<'a> {
    source: &'a dyn SeriesSource,
    functions: &'a Registry,
}

impl<'a> Evaluator<'a> {
    pub fn new(source: &'a dyn SeriesSource, functions: &'a Registry) -> Evaluator<'a> {
        Evaluator { source, functions }
    }

    /// Every target's series, in order. Blank targets are skipped. (See
    /// [`evaluate`](Self::evaluate), in `targets.rs`, for the answer a renderer can
    /// read lazily.)
    pub fn evaluate_targets<S: AsRef<str>>(
        &self,
        ctx: &RequestContext,
        targets: &[S],
    ) -> Result<Vec<TimeSeries>, QueryError> {
        Ok(self.evaluate(ctx, targets)?.into_vec())
    }
}

/// The state of one request's evaluation: the source, the functions and the series
/// fetched so far. Functions receive it to evaluate arguments again.
pub struct Session<'a> {
    source: &'a dyn SeriesSource,
    functions: &'a Registry,
    prefetched: HashMap<fetch::Key, fetch::Entry>,
    /// `stacked()`'s running totals per stack name, shared by all the request's targets
    /// (graphite-web's `requestContext['totalStack']`).
    stacks: HashMap<String, Vec<f64>>,
    /// Set by `setXFilesFactor()`: graphite-web writes it into the request context, so
    /// it holds for whatever is evaluated after it in the same request.
    x_files_factor: Option<f64>,
}

impl<'a> Session<'a> {
    pub fn new(source: &'a dyn SeriesSource, functions: &'a Registry) -> Session<'a> {
        Session {
            source,
            functions,
            prefetched: HashMap::new(),
            stacks: HashMap::new(),
            x_files_factor: None,
        }
    }

    /// The xFilesFactor in force: the request's, or the last one `setXFilesFactor()`
    /// set. Functions give it to the series they create; fetched series get it too.
    pub fn x_files_factor(&self, ctx: &RequestContext) -> f64 {
        self.x_files_factor.unwrap_or(ctx.x_files_factor)
    }

    /// `setXFilesFactor()`: the xFilesFactor for the rest of the request.
    pub fn set_x_files_factor(&mut self, xff: f64) {
        self.x_files_factor = Some(xff);
    }

    pub fn functions(&self) -> &Registry {
        self.functions
    }

    /// The running totals of the stack `name` (empty at first), for `stacked()`.
    pub fn stack_totals(&mut self, name: &str) -> &mut Vec<f64> {
        self.stacks.entry(name.to_string()).or_default()
    }

    /// Evaluates an expression (`replacements` from an enclosing `template()`).
    pub fn eval_expr(
        &mut self,
        ctx: &RequestContext,
        expr: &Expr,
        replacements: Option<&Replacements>,
    ) -> Result<Value, QueryError> {
        match expr {
            Expr::Template(t) => {
                let own = Replacements::for_template(t, ctx);
                self.eval_expr(ctx, &t.inner, Some(&own))
            }
            Expr::Path(path) => match substitute(path, replacements)? {
                Substituted::Value(v) => Ok(v),
                Substituted::Pattern(p) => Ok(Value::SeriesList(self.fetch(ctx, &p)?)),
            },
            Expr::Call(call) => self.eval_call(ctx, call, replacements),
        }
    }

    /// Evaluates one argument.
    pub fn eval_arg(
        &mut self,
        ctx: &RequestContext,
        arg: &Arg,
        replacements: Option<&Replacements>,
    ) -> Result<Value, QueryError> {
        match arg {
            Arg::Literal(lit) => Ok(Value::from(lit)),
            Arg::Expr(e) => self.eval_expr(ctx, e, replacements),
        }
    }

    fn eval_call(
        &mut self,
        ctx: &RequestContext,
        call: &Call,
        replacements: Option<&Replacements>,
    ) -> Result<Value, QueryError> {
        match call.name.as_str() {
            // the grammar read `template(...)` as a call: its arguments were not literals
            "template" => {
                return Err(QueryError::InvalidTemplate {
                    call: call.raw.as_str().to_string(),
                })
            }
            "seriesByTag" => return self.series_by_tag(ctx, call),
            _ => {}
        }
        if replacements.is_none() {
            if let Some(plan) = stream::plan(call, self.functions) {
                return self.stream_aggregate(ctx, call, &plan);
            }
        }
        let Some(def) = self.functions.get(&call.name).copied() else {
            return Err(QueryError::UnknownFunction {
                name: call.name.clone(),
            });
        };
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            args.push(self.eval_arg(ctx, a, replacements)?);
        }
        // a Python dict: the last value of a repeated key wins, in the first one's place
        let mut kwargs: Vec<(String, Value)> = Vec::with_capacity(call.kwargs.len());
        for (name, a) in &call.kwargs {
            let v = self.eval_arg(ctx, a, replacements)?;
            match kwargs.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = v,
                None => kwargs.push((name.clone(), v)),
            }
        }
        let functions = self.functions;
        let bound = bind(&call.name, def.params, args, kwargs, &|n| {
            functions.is_aggregator(n)
        })?;
        let invocation = Invocation {
            name: &call.name,
            args: bound,
            raw_args: &call.args,
            replacements,
        };
        (def.run)(self, ctx, invocation)
    }
}

#[cfg(test)]
mod tests;
