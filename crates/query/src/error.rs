//! The query crate's error type: everything that can go wrong between a target's text
//! and its series, each variant saying what failed and on which input.

use crate::attime::{AtTimeError, TimeRangeError};
use crate::grammar::ParseError;
use crate::source::SourceError;

/// Why a query could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Time(#[from] AtTimeError),
    #[error(transparent)]
    TimeRange(#[from] TimeRangeError),
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// graphite-web: "Received request for unknown function".
    #[error("unknown function {name:?}")]
    UnknownFunction { name: String },
    /// `template(...)` that the grammar could only read as an ordinary call.
    #[error("invalid template() syntax in {call:?}: only string and numeric arguments are allowed, all positional or all key=value")]
    InvalidTemplate { call: String },
    /// Arguments that do not fit a function's parameters (graphite-web's
    /// `InputParameterError` from `validateParams`).
    #[error("invalid parameters for {function}(): {message}")]
    InvalidParams { function: String, message: String },
    /// A target that evaluates to something other than series (`template($1, 5)`).
    #[error("target {target:?} evaluates to {what}, not to a list of series")]
    NotSeries { target: String, what: String },
    /// A template value that looks like a number but is not one (`1.2.3`).
    #[error("template value {value:?} for ${name} is not a number")]
    TemplateNumber { name: String, value: String },
    /// Something a later version will do (tag queries need the tag index).
    #[error("{0} is not supported yet")]
    Unsupported(&'static str),
    /// A function refused its input while running.
    #[error("{function}(): {message}")]
    Function {
        function: String,
        message: String,
        /// Caused by the request (HTTP 400) rather than by sumi (500).
        input: bool,
    },
    #[error(transparent)]
    Source(#[from] SourceError),
}

impl QueryError {
    /// Whether the request is at fault (HTTP 400) rather than the server (500).
    pub fn is_input_error(&self) -> bool {
        match self {
            QueryError::Time(_)
            | QueryError::TimeRange(_)
            | QueryError::Parse(_)
            | QueryError::UnknownFunction { .. }
            | QueryError::InvalidTemplate { .. }
            | QueryError::InvalidParams { .. }
            | QueryError::NotSeries { .. }
            | QueryError::TemplateNumber { .. } => true,
            QueryError::Function { input, .. } => *input,
            QueryError::Source(SourceError::TooLarge(_) | SourceError::Invalid(_)) => true,
            QueryError::Unsupported(_) | QueryError::Source(_) => false,
        }
    }
}
