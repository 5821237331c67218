//! The carbon plaintext line, `name value timestamp`, parsed exactly as carbon 1.1.10
//! accepts it (`MetricLineReceiver.lineReceived` then `MetricReceiver.metricReceived`
//! in `carbon/protocols.py`), with no allocation for a well-formed line.
//!
//! What carbon does, and what this parser does with it:
//!
//! | carbon (Python 3) | here |
//! | --- | --- |
//! | `line.decode('utf-8')`; a failure raises out of the handler | the line is refused (`invalid_utf8`) |
//! | `line.strip().split()` must give 3 fields; splits on every character `str.isspace()` knows, non-ASCII ones included (U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) and ASCII 0x1C–0x1F | the same set ([`is_python_space`]); not 3 fields: `invalid_line`; no field at all: [`LineError::Blank`], which is not a point and not counted |
//! | `float(timestamp)`, `float(value)` with Python's grammar (`_` between digits, Unicode digits, `inf`, `nan`, any case) | `pyfloat`: same grammar, same bits; `invalid_timestamp` / `invalid_value` (the timestamp is looked at first, as carbon does) |
//! | NaN values are filtered out silently | dropped and counted (`nan_value`) |
//! | `int(timestamp) == -1` means now | a timestamp that truncates to `-1` (anything in `(-2, -1]`) becomes `now` |
//! | `int()` of an infinite or NaN timestamp raises (the point is lost, with a traceback) | refused (`invalid_timestamp`), as is a timestamp outside `i64` |
//! | whisper stores `int(timestamp)` | truncated toward zero to whole seconds; any age is passed on, the store judges it |
//! | the name is used as given | [`sumi_model::name::normalize`]: empty nodes dropped (`a..b` is `a.b`, as on carbon's disk), control characters and over-long names refused |
//!
//! Values of `±inf` are accepted and passed on, as carbon does: whisper stores them and
//! graphite-web's JSON writes them as `1e9999`. Refusing them would lose data a
//! Graphite user can see today.

pub(crate) mod pyfloat;

use std::borrow::Cow;

use sumi_model::name::{normalize_str, NameError};

use crate::stats::Reason;

/// One accepted line.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedLine<'a> {
    /// The normalized metric path: borrowed from the line unless normalization changed it.
    pub name: Cow<'a, str>,
    /// Unix seconds, truncated toward zero; `now` when the line said `-1`.
    pub ts: i64,
    /// Never NaN; may be `±inf`.
    pub value: f64,
    /// Normalization dropped empty nodes (`a..b` became `a.b`).
    pub name_changed: bool,
}

/// Why a line gave no point. [`LineError::reason`] is the counter label.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LineError {
    /// Nothing but whitespace: not a point, not counted as received nor rejected.
    #[error("blank line")]
    Blank,
    /// Not exactly three fields (how many there were).
    #[error("expected 3 fields `name value timestamp`, got {0}")]
    FieldCount(usize),
    /// The byte offset where the invalid UTF-8 starts.
    #[error("line is not valid UTF-8 (bad byte at offset {0})")]
    InvalidUtf8(usize),
    /// The value is not a number to Python's `float()`.
    #[error("value is not a number")]
    InvalidValue,
    /// The timestamp is not a number to Python's `float()`.
    #[error("timestamp is not a number")]
    InvalidTimestamp,
    /// The timestamp is `inf` or `nan` (carbon's `int()` raises on it).
    #[error("timestamp {0} is not finite")]
    NonFiniteTimestamp(f64),
    /// The timestamp truncates to a second outside `i64`.
    #[error("timestamp {0} does not fit in 64-bit seconds")]
    TimestampOutOfRange(f64),
    /// carbon drops NaN values without a word; sumi counts them.
    #[error("value is NaN")]
    NanValue,
    /// Found by the framer ([`crate::frame`]), never by [`parse_line`].
    #[error("line is longer than {0} bytes")]
    LineTooLong(usize),
    /// The name was refused by [`sumi_model::name::normalize`].
    #[error("metric name: {0}")]
    Name(#[from] NameError),
    /// A tagged name carbon cannot parse.
    #[error("tagged metric name: {0}")]
    Tags(#[from] sumi_model::tagged::TagError),
}

impl LineError {
    /// The counter a rejected line is counted under; `None` for a blank line.
    pub fn rejection(&self) -> Option<Reason> {
        Some(match self {
            LineError::Blank => return None,
            LineError::FieldCount(_) => Reason::InvalidLine,
            LineError::InvalidUtf8(_) => Reason::InvalidUtf8,
            LineError::InvalidValue => Reason::InvalidValue,
            LineError::InvalidTimestamp
            | LineError::NonFiniteTimestamp(_)
            | LineError::TimestampOutOfRange(_) => Reason::InvalidTimestamp,
            LineError::NanValue => Reason::NanValue,
            LineError::LineTooLong(_) => Reason::LineTooLong,
            LineError::Name(e) => Reason::for_name(e),
            LineError::Tags(_) => Reason::InvalidTags,
        })
    }

    /// The label for counters and logs (`invalid_line`, `nan_value`, ...; `blank_line`).
    pub fn reason(&self) -> &'static str {
        self.rejection().map_or("blank_line", Reason::label)
    }
}

/// Parses one line (without its `\n`; surrounding whitespace, `\r` included, is
/// ignored). `now` (Unix seconds) replaces a timestamp of `-1`.
pub fn parse_line(line: &[u8], now: i64) -> Result<ParsedLine<'_>, LineError> {
    match parse_plain(line, now) {
        Some(p) => Ok(p),
        None => parse_general(line, now),
    }
}

/// The common line in one pass over its bytes: ASCII only, three fields split by
/// ASCII whitespace, a name of printable bytes with no `;` (untagged) that
/// normalization leaves as it is (no empty node), a timestamp of up to 15 digits and a
/// value that is a number. `None` for anything else, which [`parse_general`] then
/// parses (and refuses, when it must); for every line it accepts this gives
/// [`parse_general`]'s answer (test `plain_lines_parse_as_the_general_parser_does`).
#[inline]
fn parse_plain(line: &[u8], now: i64) -> Option<ParsedLine<'_>> {
    let skip = |mut i: usize| {
        while line
            .get(i)
            .is_some_and(|&b| FAST[usize::from(b)] == F_SPACE)
        {
            i += 1;
        }
        i
    };
    let mut i = skip(0);
    let name_start = i;
    // a leading dot, two dots in a row or a trailing dot is an empty node
    let mut after_dot = true;
    while let Some(&b) = line.get(i) {
        match FAST[usize::from(b)] {
            F_NAME => after_dot = false,
            F_DOT if !after_dot => after_dot = true,
            F_SPACE => break,
            _ => return None,
        }
        i += 1;
    }
    if after_dot || i - name_start > sumi_model::name::MAX_NAME_BYTES {
        return None;
    }
    let name_end = i;
    let field = |i: &mut usize| -> Option<(usize, usize)> {
        let start = skip(*i);
        let mut j = start;
        while let Some(&b) = line.get(j) {
            match FAST[usize::from(b)] {
                F_NAME | F_DOT | F_SEMI => j += 1,
                F_SPACE => break,
                _ => return None,
            }
        }
        *i = j;
        (j > start).then_some((start, j))
    };
    let (vs, ve) = field(&mut i)?;
    let (ts_start, ts_end) = field(&mut i)?;
    if skip(i) != line.len() {
        return None;
    }
    let ts = pyfloat::small_int(line.get(ts_start..ts_end)?)?.to_i64();
    let value = pyfloat::parse(std::str::from_utf8(line.get(vs..ve)?).ok()?)?;
    if value.is_nan() {
        return None;
    }
    let name = std::str::from_utf8(line.get(name_start..name_end)?).ok()?;
    Some(ParsedLine {
        name: Cow::Borrowed(name),
        ts: if ts == -1 { now } else { ts },
        value,
        name_changed: false,
    })
}

const F_OTHER: u8 = 0;
const F_NAME: u8 = 1;
const F_DOT: u8 = 2;
const F_SPACE: u8 = 3;
const F_SEMI: u8 = 4;

/// Per byte, for [`parse_plain`]: ASCII whitespace to Python, a dot, a semicolon, a
/// printable ASCII byte, or anything else (control bytes, DEL, non-ASCII).
const FAST: [u8; 256] = {
    let mut t = [F_OTHER; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c {
            0x09..=0x0D | 0x1C..=0x20 => F_SPACE,
            0x2E => F_DOT,
            0x3B => F_SEMI,
            0x21..=0x7E => F_NAME,
            _ => F_OTHER,
        };
        c += 1;
    }
    t
};

/// [`parse_line`] of any line: Python's split and number grammar, names normalized and
/// tagged names made canonical.
fn parse_general(line: &[u8], now: i64) -> Result<ParsedLine<'_>, LineError> {
    let text = std::str::from_utf8(line).map_err(|e| LineError::InvalidUtf8(e.valid_up_to()))?;
    let [name, value, ts] = split3(text)?;

    // carbon evaluates `float(timestamp)` before `float(value)`, both as "invalid line".
    let ts = parse_timestamp(ts)?;
    let value = pyfloat::parse(value).ok_or(LineError::InvalidValue)?;
    if value.is_nan() {
        return Err(LineError::NanValue);
    }
    let ts = match ts? {
        -1 => now,
        t => t,
    };
    // the line is UTF-8 already: the name is checked without a second validation
    let n = normalize_str(name)?;
    Ok(ParsedLine {
        name: sumi_model::tagged::canonical_name(n.path)?,
        ts,
        value,
        name_changed: n.dropped_empty_nodes,
    })
}

/// Outer `Err`: not a number at all (checked before the value, as carbon does).
/// Inner `Err`: a number that is no usable second (checked after the NaN filter, where
/// carbon's `int()` would raise).
fn parse_timestamp(tok: &str) -> Result<Result<i64, LineError>, LineError> {
    if let Some(i) = pyfloat::small_int(tok.as_bytes()) {
        return Ok(Ok(i.to_i64()));
    }
    let f = pyfloat::parse(tok).ok_or(LineError::InvalidTimestamp)?;
    Ok(truncate_seconds(f))
}

/// `int(f)` when it fits in an `i64`. Shared by the other protocols, which take
/// timestamps through the same `int(float(t))` as carbon.
pub(crate) fn truncate_seconds(f: f64) -> Result<i64, LineError> {
    // 2^63 is exactly representable; `i64` holds [-2^63, 2^63).
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !f.is_finite() {
        return Err(LineError::NonFiniteTimestamp(f));
    }
    let t = f.trunc();
    if !(-LIMIT..LIMIT).contains(&t) {
        return Err(LineError::TimestampOutOfRange(f));
    }
    // In range and integral: the cast is exact.
    Ok(t as i64)
}

/// Python's `str.split()` when it must give exactly three fields.
fn split3(text: &str) -> Result<[&str; 3], LineError> {
    let bytes = text.as_bytes();
    let mut fields = [""; 3];
    let mut count = 0;
    let mut i = 0;
    loop {
        while let Some(w) = space_len(bytes, i) {
            i += w;
        }
        if i >= bytes.len() {
            break;
        }
        let start = i;
        i += 1;
        // One table lookup per byte; only the rare candidates need a closer look.
        while let Some(&b) = bytes.get(i) {
            if CLASS[usize::from(b)] != PLAIN && space_len(bytes, i).is_some() {
                break;
            }
            i += 1;
        }
        // `start` and `i` sit at character boundaries: a field starts after a space
        // and ends at a space (an ASCII byte or a lead byte) or at the end.
        if let Some(slot) = fields.get_mut(count) {
            *slot = text.get(start..i).ok_or(LineError::InvalidUtf8(start))?;
        }
        count += 1;
    }
    match count {
        0 => Err(LineError::Blank),
        3 => Ok(fields),
        n => Err(LineError::FieldCount(n)),
    }
}

/// Bytes of the whitespace character (as Python's `str.isspace()` sees it) starting at
/// `bytes[i]`, or `None` when there is none there. `bytes` must be valid UTF-8; then a
/// match can only start at a character boundary, because the lead bytes looked for
/// (0xC2, 0xE1, 0xE2, 0xE3) are never continuation bytes.
#[inline]
fn space_len(bytes: &[u8], i: usize) -> Option<usize> {
    let b = *bytes.get(i)?;
    match CLASS[usize::from(b)] {
        PLAIN => None,
        ASCII_SPACE => Some(1),
        _ => multibyte_space_len(bytes, i, b),
    }
}

#[cold]
fn multibyte_space_len(bytes: &[u8], i: usize, lead: u8) -> Option<usize> {
    let next = |k: usize| bytes.get(i + k).copied().unwrap_or(0);
    let hit = match lead {
        0xC2 => matches!(next(1), 0x85 | 0xA0),
        0xE1 => next(1) == 0x9A && next(2) == 0x80,
        0xE2 => match next(1) {
            0x80 => matches!(next(2), 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF),
            0x81 => next(2) == 0x9F,
            _ => false,
        },
        0xE3 => next(1) == 0x80 && next(2) == 0x80,
        _ => false,
    };
    if !hit {
        return None;
    }
    Some(if lead == 0xC2 { 2 } else { 3 })
}

const PLAIN: u8 = 0;
const ASCII_SPACE: u8 = 1;
const SPACE_LEAD: u8 = 2;

/// Per byte: Python whitespace in ASCII (`\t \n \v \f \r`, 0x1C–0x1F, space), a lead
/// byte that may start a non-ASCII space, or neither.
const CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    let mut c = 0;
    while c < 256 {
        if matches!(c, 0x09..=0x0D | 0x1C..=0x20) {
            t[c] = ASCII_SPACE;
        } else if matches!(c, 0xC2 | 0xE1 | 0xE2 | 0xE3) {
            t[c] = SPACE_LEAD;
        }
        c += 1;
    }
    t
};

/// Whether `c` is whitespace to Python's `str.split()` (CPython 3.11, Unicode 14.0).
pub fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\u{09}'..='\u{0D}'
            | '\u{1C}'..='\u{20}'
            | '\u{85}'
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

#[cfg(test)]
mod tests;
