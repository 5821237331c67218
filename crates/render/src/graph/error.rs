//! Why a graph could not be drawn.

/// A graph that cannot be drawn. Everything but [`GraphError::Font`] and
/// [`GraphError::Encode`] is the caller's input (an HTTP 400).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    /// A graph parameter whose value cannot be used.
    #[error("invalid graph parameter {name}={value:?}: {reason}")]
    Param {
        name: String,
        value: String,
        reason: String,
    },
    /// A colour that is neither a known name nor a hex code.
    #[error("invalid colour {value:?} ({context}): expected a name such as red or a hex code such as ff0000 or ff000080")]
    Color { value: String, context: String },
    /// Axis settings that contradict each other (yMin above yMax, a log axis with base 1).
    #[error("invalid axis settings: {0}")]
    Axis(String),
    /// A series that cannot be placed on a time axis.
    #[error("series {name:?} cannot be drawn: {reason}")]
    Series { name: String, reason: String },
    /// The embedded font could not be read (a build problem, not the caller's).
    #[error("embedded font could not be loaded: {0}")]
    Font(String),
    /// The image could not be encoded.
    #[error("image encoding failed: {0}")]
    Encode(String),
}

impl GraphError {
    /// True when the request is at fault (an HTTP 400 rather than a 500).
    pub fn is_client_error(&self) -> bool {
        !matches!(self, GraphError::Font(_) | GraphError::Encode(_))
    }

    pub(crate) fn param(name: &str, value: &str, reason: impl Into<String>) -> GraphError {
        GraphError::Param {
            name: name.to_string(),
            value: truncate(value),
            reason: reason.into(),
        }
    }
}

/// Keeps error messages short when a client sends a huge value.
pub(crate) fn truncate(s: &str) -> String {
    const MAX: usize = 64;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
