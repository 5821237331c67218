//! The values the unpickler builds: small `Copy` cells that point into the message
//! (strings), into the unpickler's arenas (tuples, lists, decoded text), or hold a
//! number. Nothing is ever deep-copied, so `GET` of a large list costs as little as
//! `GET` of an int, and no memo trick can multiply memory.

/// A byte range, in the message or in the unpickler's text arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) len: u32,
}

impl Span {
    pub(super) fn of<'a>(&self, bytes: &'a [u8]) -> Option<&'a [u8]> {
        let start = self.start as usize;
        bytes.get(start..start + self.len as usize)
    }
}

/// One Python object, as far as carbon's shapes need it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An int beyond `i64`, as `float()` makes it; infinite when `float()` would raise
    /// (the int is 2^1024 or more).
    BigInt(f64),
    Float(f64),
    /// A `str` (or a Python 2 `str` that CPython decodes as UTF-8) in the message.
    /// Not checked for UTF-8 here: a name is checked when it is used.
    Str(Span),
    /// A `str` decoded from a protocol 0 argument, in the text arena.
    Text(Span),
    /// `bytes` or `bytearray`, in the message.
    Bytes(Span),
    /// A tuple: a range of the tuple arena.
    Tuple(Span),
    /// A list: an index into the list arena (lists are mutable and shared, as in
    /// Python: `APPEND` after `GET` is seen through every reference).
    List(u32),
    /// A dict: never part of a point, so only its type is kept.
    Dict,
    /// A set or frozenset, likewise.
    Set,
}

impl Value {
    /// The Python type name, for error messages.
    pub(super) fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "a bool",
            Value::Int(_) | Value::BigInt(_) => "an int",
            Value::Float(_) => "a float",
            Value::Str(_) | Value::Text(_) => "a str",
            Value::Bytes(_) => "bytes",
            Value::Tuple(_) => "a tuple",
            Value::List(_) => "a list",
            Value::Dict => "a dict",
            Value::Set => "a set",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_small() {
        // Every stack slot, memo entry and list item is one of these.
        assert!(std::mem::size_of::<Value>() <= 16);
    }

    #[test]
    fn span_out_of_range_is_none() {
        let s = Span { start: 2, len: 5 };
        assert_eq!(s.of(b"abcdefg"), Some(&b"cdefg"[..]));
        assert_eq!(s.of(b"abc"), None);
    }
}
