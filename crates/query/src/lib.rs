//! Query: Graphite target expressions evaluated against a [`SeriesSource`], with
//! graphite-web 1.1.10's semantics.
//!
//! The path of a render request through this crate:
//! - [`attime`]: `from`, `until` and `now` (`-1d`, `noon yesterday`, `20240101`…)
//!   into epoch seconds, and the request interval ([`attime::resolve_range`]).
//! - [`grammar`]: a target's text into an [`Expr`] tree, exactly as graphite-web's
//!   pyparsing grammar reads it.
//! - [`eval`]: trees into [`TimeSeries`], fetching through the [`SeriesSource`] seam
//!   ([`source`]) and calling [`functions`] from a [`Registry`].
//! - [`series`]: the series type and its consolidation (`values_per_point`).
//!
//! Also: [`memory`], an in-memory source for tests; [`py`], Python reproduced where
//! graphite-web's results depend on it (number spelling and formatting, sorting,
//! rounding, regular expressions); [`QueryError`], this crate's errors.
//!
//! Nothing here knows HTTP or output formats; `sumi-render` writes the results.

pub mod attime;
pub mod error;
pub mod eval;
pub mod functions;
pub mod grammar;
pub mod memory;
pub mod py;
#[cfg(test)]
mod reference;
pub mod series;
pub mod source;

pub use attime::{parse_at_time, resolve_range, TimeRange};
pub use error::QueryError;
pub use eval::{Evaluator, RequestContext, Session, Value};
pub use functions::Registry;
pub use grammar::{parse, parse_strict, Expr};
pub use series::{Consolidation, Tags, TimeSeries};
pub use source::{FetchedSeries, FindNode, SeriesSource, SourceError};
