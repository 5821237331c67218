//! A strict JSON scanner (RFC 8259) for the few shapes the bulk API reads: strings
//! borrowed from the body unless they hold escapes, numbers as the exact text's
//! nearest `f64`, and any other value skipped with bounded nesting. Every read is
//! bounds-checked; errors carry the byte offset and what was expected.

use std::borrow::Cow;

/// A syntax error at a byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SyntaxError {
    pub(super) offset: usize,
    pub(super) what: &'static str,
}

pub(super) type Scan<T> = Result<T, SyntaxError>;

/// Values nested deeper than this inside an ignored field are refused.
const MAX_DEPTH: usize = 64;

pub(super) struct Scanner<'a> {
    buf: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Scanner<'a> {
        // A UTF-8 byte order mark is not JSON, but some writers add one.
        let pos = if buf.starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        Scanner { buf, pos }
    }

    pub(super) fn err<T>(&self, what: &'static str) -> Scan<T> {
        Err(SyntaxError {
            offset: self.pos,
            what,
        })
    }

    /// Skips whitespace; returns the next byte without consuming it.
    pub(super) fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.buf.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Consumes `c` (after whitespace) or fails with `what`.
    pub(super) fn expect(&mut self, c: u8, what: &'static str) -> Scan<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Consumes `c` if it is next (after whitespace).
    pub(super) fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// What the next value is, for type errors ("a string", "null", ...).
    pub(super) fn kind(&mut self) -> &'static str {
        match self.peek() {
            Some(b'"') => "a string",
            Some(b'{') => "an object",
            Some(b'[') => "an array",
            Some(b't' | b'f') => "a boolean",
            Some(b'n') => "null",
            Some(b'-' | b'0'..=b'9') => "a number",
            _ => "not a JSON value",
        }
    }

    /// A string (the next value must be one).
    pub(super) fn string(&mut self) -> Scan<Cow<'a, str>> {
        self.expect(b'"', "expected a string")?;
        let start = self.pos;
        // Fast path: no escape before the closing quote.
        let rest = self.buf.get(start..).unwrap_or_default();
        let Some(end) = memchr::memchr2(b'"', b'\\', rest) else {
            return self.err("unterminated string");
        };
        let raw = rest.get(..end).unwrap_or_default();
        if let Some(i) = raw.iter().position(|&b| b < 0x20) {
            self.pos = start + i;
            return self.err("control character in a string");
        }
        if rest.get(end) == Some(&b'"') {
            let text = std::str::from_utf8(raw).map_err(|e| SyntaxError {
                offset: start + e.valid_up_to(),
                what: "invalid UTF-8 in a string",
            })?;
            self.pos = start + end + 1;
            return Ok(Cow::Borrowed(text));
        }
        self.pos = start;
        self.escaped_string().map(Cow::Owned)
    }

    /// The slow path of [`Scanner::string`], from just after the opening quote.
    fn escaped_string(&mut self) -> Scan<String> {
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return self.err("unterminated string");
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&e) = self.buf.get(self.pos) else {
                        return self.err("unterminated string");
                    };
                    self.pos += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0C),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let c = self.unicode_escape()?;
                            let mut tmp = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                        }
                        _ => {
                            self.pos -= 1;
                            return self.err("invalid escape in a string");
                        }
                    }
                }
                0x00..=0x1F => return self.err("control character in a string"),
                _ => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| SyntaxError {
            offset: self.pos,
            what: "invalid UTF-8 in a string",
        })
    }

    /// After `\u`: four hex digits, and a second escape for a surrogate pair.
    fn unicode_escape(&mut self) -> Scan<char> {
        let hi = self.hex4()?;
        let cp = if (0xD800..0xDC00).contains(&hi) {
            if self.buf.get(self.pos..self.pos + 2) != Some(b"\\u") {
                return self.err("lone surrogate in a string");
            }
            self.pos += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return self.err("lone surrogate in a string");
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        match char::from_u32(cp) {
            Some(c) => Ok(c),
            None => self.err("lone surrogate in a string"),
        }
    }

    fn hex4(&mut self) -> Scan<u32> {
        let Some(digits) = self.buf.get(self.pos..self.pos + 4) else {
            return self.err("truncated \\u escape");
        };
        let mut v = 0;
        for &d in digits {
            let x = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return self.err("invalid \\u escape"),
            };
            v = (v << 4) | u32::from(x);
        }
        self.pos += 4;
        Ok(v)
    }

    /// A number (the next value must be one), as the nearest `f64` of its exact text.
    pub(super) fn number(&mut self) -> Scan<f64> {
        self.peek();
        let start = self.pos;
        let b = |i: usize| self.buf.get(i).copied().unwrap_or(0);
        let mut i = start;
        if b(i) == b'-' {
            i += 1;
        }
        let int_start = i;
        match b(i) {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while b(i).is_ascii_digit() {
                    i += 1;
                }
            }
            _ => {
                self.pos = i;
                return self.err("expected a number");
            }
        }
        let int_end = i;
        let mut plain = true;
        if b(i) == b'.' {
            plain = false;
            i += 1;
            if !b(i).is_ascii_digit() {
                self.pos = i;
                return self.err("expected a digit after '.'");
            }
            while b(i).is_ascii_digit() {
                i += 1;
            }
        }
        if matches!(b(i), b'e' | b'E') {
            plain = false;
            i += 1;
            if matches!(b(i), b'+' | b'-') {
                i += 1;
            }
            if !b(i).is_ascii_digit() {
                self.pos = i;
                return self.err("expected a digit in the exponent");
            }
            while b(i).is_ascii_digit() {
                i += 1;
            }
        }
        let text = self.buf.get(start..i).unwrap_or_default();
        self.pos = i;
        // Up to 15 digits an integer is exact in an f64: no parse needed.
        if plain && int_end - int_start <= 15 {
            let mut v: i64 = 0;
            for &d in self.buf.get(int_start..int_end).unwrap_or_default() {
                v = v * 10 + i64::from(d - b'0');
            }
            return Ok(if int_start > start {
                -(v as f64)
            } else {
                v as f64
            });
        }
        // The JSON grammar is a subset of Rust's, which rounds correctly.
        std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .ok_or(SyntaxError {
                offset: start,
                what: "expected a number",
            })
    }

    /// Skips one value of any type.
    pub(super) fn skip_value(&mut self) -> Scan<()> {
        self.skip_nested(0)
    }

    fn skip_nested(&mut self, depth: usize) -> Scan<()> {
        if depth > MAX_DEPTH {
            return self.err("nested too deeply");
        }
        match self.peek() {
            Some(b'"') => self.string().map(drop),
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            Some(b'{') => {
                self.pos += 1;
                if self.eat(b'}') {
                    return Ok(());
                }
                loop {
                    self.string()?;
                    self.expect(b':', "expected ':'")?;
                    self.skip_nested(depth + 1)?;
                    if !self.eat(b',') {
                        return self.expect(b'}', "expected ',' or '}'");
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                if self.eat(b']') {
                    return Ok(());
                }
                loop {
                    self.skip_nested(depth + 1)?;
                    if !self.eat(b',') {
                        return self.expect(b']', "expected ',' or ']'");
                    }
                }
            }
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            _ => self.err("expected a JSON value"),
        }
    }

    fn word(&mut self, w: &'static [u8]) -> Scan<()> {
        if self.buf.get(self.pos..self.pos + w.len()) == Some(w) {
            self.pos += w.len();
            Ok(())
        } else {
            self.err("expected a JSON value")
        }
    }

    /// Consumes `null` if it is next.
    pub(super) fn eat_null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.word(b"null").is_ok()
    }

    /// 1-based line and column (in bytes) of an offset, for messages.
    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = self.buf.get(..offset).unwrap_or(self.buf);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let col = 1 + before.iter().rev().take_while(|&&b| b != b'\n').count();
        (line, col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Scan<f64> {
        Scanner::new(s.as_bytes()).number()
    }

    fn string(s: &str) -> Scan<Cow<'_, str>> {
        Scanner::new(s.as_bytes()).string()
    }

    #[test]
    fn numbers_follow_the_json_grammar() {
        assert_eq!(num("0"), Ok(0.0));
        assert_eq!(num("-0").map(f64::to_bits), Ok((-0.0f64).to_bits()));
        assert_eq!(num("1700000000"), Ok(1.7e9));
        assert_eq!(num("-12.5e-1"), Ok(-1.25));
        assert_eq!(num("1E2"), Ok(100.0));
        assert_eq!(
            num("123456789012345678901234567890"),
            Ok(1.2345678901234568e29)
        );
        assert_eq!(num("0.1"), Ok(0.1));
        assert_eq!(num("1e999"), Ok(f64::INFINITY));
        for bad in [
            "", "-", "+1", ".5", "1.", "1e", "1e+", "NaN", "Infinity", "--1",
        ] {
            assert!(num(bad).is_err(), "{bad}");
        }
        // a leading zero ends the number: what follows is the caller's problem
        let mut s = Scanner::new(b"012");
        assert_eq!(s.number(), Ok(0.0));
        assert_eq!(s.pos, 1);
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        assert!(matches!(string(r#""a.b""#), Ok(Cow::Borrowed("a.b"))));
        assert_eq!(
            string(r#""caf\u00e9 \"q\" \\ \/ \n""#).unwrap(),
            "caf\u{e9} \"q\" \\ / \n"
        );
        assert_eq!(string(r#""\ud83d\ude00""#).unwrap(), "\u{1F600}");
        assert_eq!(string("\"\u{6e29}\"").unwrap(), "\u{6e29}");
        for bad in [
            r#""abc"#,
            r#""a\x""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\u12""#,
            "\"a\nb\"",
            "'a'",
        ] {
            assert!(string(bad).is_err(), "{bad:?}");
        }
        assert!(Scanner::new(b"\"\xff\"").string().is_err());
        assert!(Scanner::new(b"\"\\n\xff\"").string().is_err());
    }

    #[test]
    fn skipping_any_value() {
        let mut s = Scanner::new(br#" {"a": [1, true, null, {"b": "c"}], "d": -1e3} ,"#);
        s.skip_value().unwrap();
        assert_eq!(s.peek(), Some(b','));
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(Scanner::new(deep.as_bytes()).skip_value().is_err());
        for bad in ["[1,]", "{\"a\" 1}", "{1: 2}", "tru", "[1 2]", "{\"a\":1,}"] {
            assert!(Scanner::new(bad.as_bytes()).skip_value().is_err(), "{bad}");
        }
    }

    #[test]
    fn positions() {
        let s = Scanner::new(b"[\n  {\"a\": x}");
        assert_eq!(s.line_col(10), (2, 9));
        assert_eq!(s.line_col(0), (1, 1));
    }
}
