//! From an unpickled message to points: each element must be
//! `(name, (timestamp, value))`, taken as carbon 1.1.10's
//! `MetricPickleReceiver.stringReceived` and `MetricReceiver.metricReceived` take it.
//!
//! | carbon | here |
//! | --- | --- |
//! | `(metric, (t, v)) = raw` on any 2-item sequence; otherwise the element is skipped | a list or tuple of 2 whose second item is a list or tuple of 2; otherwise `invalid_element` (carbon would also unpack a 2-character string; no client sends one) |
//! | `float(t)`, `float(v)`: int, bool, float, or a str/bytes that `float()` reads; otherwise skipped silently | the same numbers and strings (`pyfloat`); otherwise `invalid_timestamp` / `invalid_value` |
//! | `float()` of an int of 2^1024 or more raises `OverflowError`, which escapes the handler and drops the connection | that element is refused (`invalid_value` / `invalid_timestamp`) |
//! | a `str` name is used as is; `bytes` (Python 3 clients with protocol 3+) make `metric.encode` raise, which drops the connection | `str` and `bytes` names are both taken as UTF-8; any other type is `invalid_element` |
//! | NaN values dropped silently; `int(t) == -1` means now | the same, NaN counted (`nan_value`) |
//! | `int()` of an infinite or NaN timestamp raises out of the handler | refused (`invalid_timestamp`), as is one beyond 64-bit seconds |
//!
//! Names then go through [`sumi_model::name::normalize`] and, when tagged, carbon's
//! canonical form, as plaintext names do.

use sumi_model::name::{normalize, NameError};

use super::value::Value;
use super::Unpickler;
use crate::plaintext::{is_python_space, pyfloat, truncate_seconds, ParsedLine};
use crate::stats::Reason;

/// Why one element of a good message gave no point. [`ElementError::rejection`] is its
/// counter.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ElementError {
    /// The element is not a 2-item list or tuple.
    #[error("element is {}, not a (name, (timestamp, value)) pair", describe(kind, *len))]
    NotAPair {
        kind: &'static str,
        len: Option<usize>,
    },
    /// Its second item is not a 2-item list or tuple.
    #[error("point is {}, not a (timestamp, value) pair", describe(kind, *len))]
    PointNotAPair {
        kind: &'static str,
        len: Option<usize>,
    },
    /// The name is not a `str` or `bytes`.
    #[error("metric name is {0}, not a string")]
    NameType(&'static str),
    /// `float()` refuses the timestamp (what it is).
    #[error("timestamp is {0}, not a number")]
    InvalidTimestamp(&'static str),
    /// `float()` refuses the value (what it is).
    #[error("value is {0}, not a number")]
    InvalidValue(&'static str),
    /// The timestamp is `inf` or `nan`.
    #[error("timestamp {0} is not finite")]
    NonFiniteTimestamp(f64),
    /// The timestamp truncates to a second outside `i64`.
    #[error("timestamp {0} does not fit in 64-bit seconds")]
    TimestampOutOfRange(f64),
    /// carbon drops NaN values without a word; sumi counts them.
    #[error("value is NaN")]
    NanValue,
    /// The name was refused by [`sumi_model::name::normalize`].
    #[error("metric name: {0}")]
    Name(#[from] NameError),
    /// A tagged name carbon cannot parse.
    #[error("tagged metric name: {0}")]
    Tags(#[from] sumi_model::tagged::TagError),
}

fn describe(kind: &str, len: Option<usize>) -> String {
    match len {
        Some(n) => format!("{kind} of {n} items"),
        None => kind.to_string(),
    }
}

impl ElementError {
    /// The counter the element is counted under.
    pub fn rejection(&self) -> Reason {
        match self {
            ElementError::NotAPair { .. }
            | ElementError::PointNotAPair { .. }
            | ElementError::NameType(_) => Reason::InvalidElement,
            ElementError::InvalidTimestamp(_)
            | ElementError::NonFiniteTimestamp(_)
            | ElementError::TimestampOutOfRange(_) => Reason::InvalidTimestamp,
            ElementError::InvalidValue(_) => Reason::InvalidValue,
            ElementError::NanValue => Reason::NanValue,
            ElementError::Name(e) => Reason::for_name(e),
            ElementError::Tags(_) => Reason::InvalidTags,
        }
    }
}

impl Unpickler {
    /// Element `index` of the message last loaded from `msg` (pass the same bytes) as a
    /// point; `now` replaces a timestamp of `-1`.
    pub fn point<'s>(
        &'s self,
        msg: &'s [u8],
        index: usize,
        now: i64,
    ) -> Result<ParsedLine<'s>, ElementError> {
        let element = self.elements().get(index).ok_or(ElementError::NotAPair {
            kind: "missing",
            len: None,
        })?;
        let [name, point] = self
            .pair(element)
            .map_err(|(kind, len)| ElementError::NotAPair { kind, len })?;
        let [ts, value] = self
            .pair(&point)
            .map_err(|(kind, len)| ElementError::PointNotAPair { kind, len })?;
        // carbon converts the timestamp first, then the value.
        let ts = self
            .float(msg, &ts)
            .map_err(ElementError::InvalidTimestamp)?;
        let value = self
            .float(msg, &value)
            .map_err(ElementError::InvalidValue)?;
        if value.is_nan() {
            return Err(ElementError::NanValue);
        }
        let ts = match truncate_seconds(ts) {
            Ok(-1) => now,
            Ok(t) => t,
            Err(_) if !ts.is_finite() => return Err(ElementError::NonFiniteTimestamp(ts)),
            Err(_) => return Err(ElementError::TimestampOutOfRange(ts)),
        };
        let raw = self
            .bytes_of(msg, &name)
            .ok_or(ElementError::NameType(name.type_name()))?;
        let n = normalize(raw)?;
        Ok(ParsedLine {
            name: sumi_model::tagged::canonical_name(n.path)?,
            ts,
            value,
            name_changed: n.dropped_empty_nodes,
        })
    }

    /// The name of element `index`, when it has one, to show in a log line.
    pub fn element_name<'s>(&'s self, msg: &'s [u8], index: usize) -> Option<&'s [u8]> {
        let element = self.elements().get(index)?;
        let [name, _] = self.pair(element).ok()?;
        self.bytes_of(msg, &name)
    }

    /// Every element of the loaded message, in order.
    pub fn points<'s>(
        &'s self,
        msg: &'s [u8],
        now: i64,
    ) -> impl ExactSizeIterator<Item = Result<ParsedLine<'s>, ElementError>> + 's {
        (0..self.elements().len()).map(move |i| self.point(msg, i, now))
    }

    /// The two items of a 2-item list or tuple; else what it is.
    fn pair(&self, v: &Value) -> Result<[Value; 2], (&'static str, Option<usize>)> {
        match self.seq(v) {
            Some(&[a, b]) => Ok([a, b]),
            Some(items) => Err((v.type_name(), Some(items.len()))),
            None => Err((v.type_name(), None)),
        }
    }

    /// Python's `float(v)`; else what `v` is.
    fn float(&self, msg: &[u8], v: &Value) -> Result<f64, &'static str> {
        match *v {
            Value::Int(i) => Ok(i as f64),
            Value::Bool(b) => Ok(if b { 1.0 } else { 0.0 }),
            Value::Float(f) => Ok(f),
            Value::BigInt(f) if f.is_infinite() => Err("an int too large to convert to float"),
            Value::BigInt(f) => Ok(f),
            Value::Str(_) | Value::Text(_) | Value::Bytes(_) => {
                let raw = self.bytes_of(msg, v).unwrap_or_default();
                let text = std::str::from_utf8(raw).map_err(|_| "a string that is not a number")?;
                // `float(bytes)` reads the bytes as they are: no Unicode digits.
                if matches!(v, Value::Bytes(_)) && !text.is_ascii() {
                    return Err("bytes that are not a number");
                }
                pyfloat::parse(text.trim_matches(is_python_space))
                    .ok_or("a string that is not a number")
            }
            Value::None | Value::Tuple(_) | Value::List(_) | Value::Dict | Value::Set => {
                Err(v.type_name())
            }
        }
    }
}
