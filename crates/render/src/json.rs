//! A JSON writer that lays out text byte for byte as Python's `json.dumps` does, the
//! encoder behind every JSON answer of graphite-web.
//!
//! Without `indent`: `[1, 2]`, `{"k": v, "k2": v2}` (a space after `,` and `:`). With
//! `indent=2`: one item a line, `,` at line ends, `": "` between key and value, and
//! empty containers as `[]`/`{}`. Strings escape `"`, `\`, `\n`, `\r`, `\t`, `\b`, `\f`
//! and other control characters as `\u00XX`; with `ensure_ascii` (Python's default)
//! every non-ASCII character becomes `\uXXXX` (a surrogate pair above U+FFFF). Floats
//! are Python's `repr`; NaN and the infinities are `NaN`, `Infinity`, `-Infinity`.

use std::fmt::Write as _;

use sumi_query::py;

/// Builds one JSON document.
pub(crate) struct JsonWriter {
    buf: String,
    indent: Option<usize>,
    ensure_ascii: bool,
    /// For each open container: whether it has an item yet.
    stack: Vec<bool>,
    /// A key was just written: the next value follows it directly.
    after_key: bool,
    /// graphite-web's render view rewrites `NaN,` and `Infinity,` in its output text,
    /// strings included; with this set, strings get the same rewrite.
    graphite_rewrite: bool,
}

impl JsonWriter {
    pub(crate) fn new(indent: Option<usize>, ensure_ascii: bool) -> JsonWriter {
        JsonWriter {
            buf: String::new(),
            indent,
            ensure_ascii,
            stack: Vec::new(),
            after_key: false,
            graphite_rewrite: false,
        }
    }

    /// Rewrites `NaN,` → `null,` and `Infinity,` → `1e9999,` inside strings, as
    /// graphite-web's render view does to its whole output.
    pub(crate) fn graphite_rewrite(mut self) -> JsonWriter {
        self.graphite_rewrite = true;
        self
    }

    pub(crate) fn reserve(&mut self, bytes: usize) {
        self.buf.reserve(bytes);
    }

    pub(crate) fn finish(self) -> String {
        self.buf
    }

    /// Bytes written since the last [`take`](Self::take).
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// The text written so far, leaving the writer where it was (inside whatever is
    /// open) with an empty buffer of `capacity` bytes: for output in chunks.
    pub(crate) fn take(&mut self, capacity: usize) -> String {
        std::mem::replace(&mut self.buf, String::with_capacity(capacity))
    }

    /// Appends text as is, outside the JSON structure (a JSONP callback).
    pub(crate) fn verbatim(&mut self, text: &str) {
        self.buf.push_str(text);
    }

    /// Separator and indentation before a value or key.
    fn prefix(&mut self) {
        if self.after_key {
            self.after_key = false;
            return;
        }
        let depth = self.stack.len();
        if let Some(has_items) = self.stack.last_mut() {
            if *has_items {
                self.buf.push(',');
                if self.indent.is_none() {
                    self.buf.push(' ');
                }
            }
            *has_items = true;
            if let Some(width) = self.indent {
                self.buf.push('\n');
                self.buf.extend(std::iter::repeat_n(' ', width * depth));
            }
        }
    }

    fn open(&mut self, c: char) {
        self.prefix();
        self.buf.push(c);
        self.stack.push(false);
    }

    fn close(&mut self, c: char) {
        let had_items = self.stack.pop().unwrap_or(false);
        if had_items {
            if let Some(width) = self.indent {
                self.buf.push('\n');
                self.buf
                    .extend(std::iter::repeat_n(' ', width * self.stack.len()));
            }
        }
        self.buf.push(c);
    }

    pub(crate) fn begin_array(&mut self) {
        self.open('[');
    }

    pub(crate) fn end_array(&mut self) {
        self.close(']');
    }

    pub(crate) fn begin_object(&mut self) {
        self.open('{');
    }

    pub(crate) fn end_object(&mut self) {
        self.close('}');
    }

    pub(crate) fn key(&mut self, key: &str) {
        self.prefix();
        self.write_str(key);
        self.buf.push_str(": ");
        self.after_key = true;
    }

    pub(crate) fn string(&mut self, s: &str) {
        self.prefix();
        self.write_str(s);
    }

    pub(crate) fn int(&mut self, i: i64) {
        self.prefix();
        let mut b = itoa::Buffer::new();
        self.buf.push_str(b.format(i));
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.prefix();
        self.buf.push_str(if b { "true" } else { "false" });
    }

    pub(crate) fn null(&mut self) {
        self.prefix();
        self.buf.push_str("null");
    }

    /// Writes raw JSON text as a value (`1e9999`).
    pub(crate) fn raw(&mut self, text: &str) {
        self.prefix();
        self.buf.push_str(text);
    }

    /// A float as `json.dumps` writes it (`NaN`, `Infinity`, `-Infinity` for the
    /// non-finite ones).
    pub(crate) fn float(&mut self, x: f64) {
        self.prefix();
        if x.is_nan() {
            self.buf.push_str("NaN");
        } else if x.is_infinite() {
            self.buf
                .push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        } else {
            py::write_float_repr(&mut self.buf, x);
        }
    }

    /// `[value, timestamp]` as graphite-web's render view writes a datapoint: null for
    /// a missing value or NaN, `1e9999`/`-1e9999` for the infinities. The hot loop of
    /// `format=json`, so the compact layout is written directly.
    pub(crate) fn datapoint(&mut self, value: Option<f64>, ts: i64) {
        if self.indent.is_some() {
            self.begin_array();
            match value {
                Some(x) if x.is_infinite() => self.raw(if x > 0.0 { "1e9999" } else { "-1e9999" }),
                Some(x) if !x.is_nan() => self.float(x),
                _ => self.null(),
            }
            self.int(ts);
            self.end_array();
            return;
        }
        self.prefix();
        self.buf.push('[');
        match value {
            Some(x) if x.is_infinite() => {
                self.buf
                    .push_str(if x > 0.0 { "1e9999" } else { "-1e9999" })
            }
            Some(x) if !x.is_nan() => write_finite(&mut self.buf, x),
            _ => self.buf.push_str("null"),
        }
        self.buf.push_str(", ");
        let mut b = itoa::Buffer::new();
        self.buf.push_str(b.format(ts));
        self.buf.push(']');
    }

    fn write_str(&mut self, s: &str) {
        let start = self.buf.len();
        self.buf.push('"');
        escape_into(&mut self.buf, s, self.ensure_ascii);
        self.buf.push('"');
        if self.graphite_rewrite {
            let written = &self.buf[start..];
            // both patterns end with a comma, which most names lack
            if written.as_bytes().contains(&b',')
                && (written.contains("NaN,") || written.contains("Infinity,"))
            {
                let rewritten = written
                    .replace("NaN,", "null,")
                    .replace("Infinity,", "1e9999,");
                self.buf.truncate(start);
                self.buf.push_str(&rewritten);
            }
        }
    }
}

/// Python's `repr` of a finite float. Whole numbers below 1e16 (most metric values)
/// take a shortcut: there `repr` is the integer's digits and `.0` (`72.0`, `-0.0`),
/// since the shortest digits that read back as such a float are its own.
fn write_finite(out: &mut String, x: f64) {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        if x.is_sign_negative() && x == 0.0 {
            out.push('-');
        }
        let mut b = itoa::Buffer::new();
        out.push_str(b.format(x as i64));
        out.push_str(".0");
    } else {
        py::write_float_repr(out, x);
    }
}

/// Python's `json` string escaping (without the quotes).
pub(crate) fn escape_into(out: &mut String, s: &str, ensure_ascii: bool) {
    // printable ASCII without quotes or backslashes (most series names) is kept as is
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(indent: Option<usize>) -> String {
        let mut w = JsonWriter::new(indent, true);
        w.begin_array();
        w.begin_object();
        w.key("target");
        w.string("a\"b\\c\n\u{e9}\u{1f600}\u{7f}\u{1}");
        w.key("empty");
        w.begin_object();
        w.end_object();
        w.key("list");
        w.begin_array();
        w.float(1.0);
        w.int(-3);
        w.null();
        w.bool(true);
        w.float(f64::NAN);
        w.float(f64::NEG_INFINITY);
        w.begin_array();
        w.end_array();
        w.end_array();
        w.end_object();
        w.end_array();
        w.finish()
    }

    #[test]
    fn compact_layout_like_python() {
        // json.dumps([{"target": "a\"b\\c\n\u00e9\U0001F600\x7f\x01", "empty": {},
        //   "list": [1.0, -3, None, True, float("nan"), float("-inf"), []]}])
        assert_eq!(
            doc(None),
            r#"[{"target": "a\"b\\c\n\u00e9\ud83d\ude00\u007f\u0001", "empty": {}, "list": [1.0, -3, null, true, NaN, -Infinity, []]}]"#
        );
    }

    #[test]
    fn indented_layout_like_python() {
        let want = "[\n  {\n    \"target\": \"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\\u007f\\u0001\",\n    \"empty\": {},\n    \"list\": [\n      1.0,\n      -3,\n      null,\n      true,\n      NaN,\n      -Infinity,\n      []\n    ]\n  }\n]";
        assert_eq!(doc(Some(2)), want);
    }

    #[test]
    fn whole_numbers_like_python_repr() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            72.0,
            1e15,
            9_007_199_254_740_992.0,
            9_007_199_254_740_994.0,
            9_999_999_999_999_998.0,
            -9_999_999_999_999_998.0,
            1e16,
            -1e16,
            1e22,
            0.5,
            -2.5e-7,
            123.456,
        ];
        let mut x = 1.0f64;
        for _ in 0..60 {
            x = x * 3.0 + 1.0;
            values.push(x.trunc());
            values.push(-x.trunc());
        }
        for v in values {
            let (mut fast, mut slow) = (String::new(), String::new());
            write_finite(&mut fast, v);
            py::write_float_repr(&mut slow, v);
            assert_eq!(fast, slow, "{v:e}");
        }
    }

    #[test]
    fn unicode_passes_without_ensure_ascii() {
        let mut w = JsonWriter::new(None, false);
        w.string("\u{e9}\u{7f}\u{1}");
        assert_eq!(w.finish(), "\"\u{e9}\u{7f}\\u0001\"");
    }

    #[test]
    fn taken_chunks_join_into_the_document() {
        let whole = doc(Some(2));
        let mut w = JsonWriter::new(Some(2), true);
        let mut chunks = String::new();
        w.begin_array();
        w.begin_object();
        w.key("target");
        chunks.push_str(&w.take(4));
        assert_eq!(w.len(), 0);
        w.string("a\"b\\c\n\u{e9}\u{1f600}\u{7f}\u{1}");
        w.key("empty");
        w.begin_object();
        chunks.push_str(&w.take(0));
        w.end_object();
        w.key("list");
        w.begin_array();
        for x in [1.0, -3.0] {
            if x < 0.0 {
                w.int(-3);
            } else {
                w.float(x);
            }
            chunks.push_str(&w.take(0));
        }
        w.null();
        w.bool(true);
        w.float(f64::NAN);
        w.float(f64::NEG_INFINITY);
        w.begin_array();
        w.end_array();
        w.end_array();
        w.end_object();
        w.end_array();
        chunks.push_str(&w.finish());
        assert_eq!(chunks, whole);
    }

    #[test]
    fn graphite_rewrites_strings_too() {
        let mut w = JsonWriter::new(None, true).graphite_rewrite();
        w.begin_array();
        w.string("NaN, and Infinity, but not NaN or -Infinity");
        w.end_array();
        assert_eq!(
            w.finish(),
            r#"["null, and 1e9999, but not NaN or -Infinity"]"#
        );
    }
}
