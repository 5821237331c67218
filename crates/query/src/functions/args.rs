//! What a function body does with its invocation: take a series list out of its
//! arguments, evaluate its first argument again over another interval, evaluate a
//! target it builds itself, call another function by name, and refuse its input.

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::Invocation;
use crate::grammar;
use crate::py;
use crate::series::TimeSeries;

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
