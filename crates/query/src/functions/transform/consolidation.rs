//! `consolidateBy` and `setXFilesFactor` (`xFilesFactor`): the two settings of a series
//! that decide how its points are merged (by `maxDataPoints`, and when functions align
//! series of different steps).

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::args::{input_error, take_series};
use crate::functions::Invocation;
use crate::py;
use crate::series::Consolidation;

use super::pointwise::rename;

type Output = Result<Value, QueryError>;

/// `consolidateBy(seriesList, consolidationFunc)`: renamed
/// `consolidateBy(<name>,"<func>")`, tagged `consolidateBy=<func>` (as written: `avg`
/// stays `avg`).
pub(super) fn consolidate_by(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let func = inv.args.str(1).unwrap_or("").to_string();
    let consolidation: Consolidation = func
        .parse()
        .map_err(|e: crate::series::UnknownConsolidation| input_error(inv.name, e.to_string()))?;
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.consolidation = consolidation;
        s.tags.set("consolidateBy", &func);
        let name = format!("consolidateBy({},\"{func}\")", s.name);
        rename(s, name);
    }
    Ok(Value::SeriesList(series))
}

/// `setXFilesFactor(seriesList, xFilesFactor)`: set on the series (tagged, not
/// renamed) and, as graphite-web writes it into the request context, for the rest of
/// the request.
pub(super) fn set_x_files_factor(
    session: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let xff = inv.args.float(1).unwrap_or(0.0);
    session.set_x_files_factor(xff);
    let tag = py::float_repr(xff);
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.x_files_factor = xff;
        s.tags.set("xFilesFactor", &tag);
    }
    Ok(Value::SeriesList(series))
}
