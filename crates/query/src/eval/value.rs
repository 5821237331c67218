//! What an expression evaluates to: a list of series, or a constant argument.

use crate::grammar::Literal;
use crate::py;
use crate::series::TimeSeries;

/// The value of an expression or argument, as graphite-web's evaluator passes it to
/// functions. `inf` is `Float(f64::INFINITY)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    SeriesList(Vec<TimeSeries>),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
}

impl Value {
    /// A word for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::SeriesList(_) => "a series list",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Bool(_) => "a boolean",
            Value::None => "None",
        }
    }

    /// Python's truth value: graphite-web silently drops a target whose value is
    /// falsy (`0`, `''`, `None`, `False`, an empty list).
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::SeriesList(s) => !s.is_empty(),
            Value::Int(i) => *i != 0,
            Value::Float(x) => *x != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bool(b) => *b,
            Value::None => false,
        }
    }

    /// Python's `str(value)`, as template substitution writes values into paths.
    pub fn python_str(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(x) => py::float_repr(*x),
            Value::Str(s) => s.clone(),
            Value::Bool(true) => "True".to_string(),
            Value::Bool(false) => "False".to_string(),
            Value::None => "None".to_string(),
            Value::SeriesList(s) => format!("[{} series]", s.len()),
        }
    }

    /// The series, when this is a series list.
    #[cfg(test)]
    pub(crate) fn as_series_list(&self) -> Option<&[TimeSeries]> {
        match self {
            Value::SeriesList(s) => Some(s),
            _ => None,
        }
    }
}

impl From<&Literal> for Value {
    fn from(lit: &Literal) -> Value {
        match lit {
            Literal::Int(i) => Value::Int(*i),
            Literal::Float(x) => Value::Float(*x),
            Literal::Str(s) => Value::Str(s.clone()),
            Literal::Bool(b) => Value::Bool(*b),
            Literal::None => Value::None,
            Literal::Inf => Value::Float(f64::INFINITY),
        }
    }
}
