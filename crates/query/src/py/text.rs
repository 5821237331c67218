//! Python's text conversions that decide what graphite-web accepts: `str.isspace()`,
//! `str.strip()`, `int(str)`, `float(str)` and `str.expandtabs()`. Only ASCII digits
//! are treated as digits here; CPython also accepts other Unicode decimal digits in
//! `int()`, which no Graphite client sends.

/// Python's `str.isspace()` for one character: Unicode white space plus the four
/// ASCII separators `\x1c`..`\x1f`, which CPython also counts.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.strip()` with no argument.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `int(s)` for a string: surrounding white space, an optional sign, ASCII
/// digits with single underscores between them. `None` when Python would raise
/// (including values that do not fit an `i64`, which Python would accept but which
/// every caller here treats as out of range anyway).
pub fn int(s: &str) -> Option<i64> {
    let t = strip(s);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') {
        return None;
    }
    let mut value: i64 = 0;
    let mut prev_underscore = false;
    for b in digits.bytes() {
        match b {
            b'_' if !prev_underscore => prev_underscore = true,
            b'0'..=b'9' => {
                prev_underscore = false;
                let d = i64::from(b - b'0');
                value = value.checked_mul(10)?;
                value = if neg {
                    value.checked_sub(d)?
                } else {
                    value.checked_add(d)?
                };
            }
            _ => return None,
        }
    }
    Some(value)
}

/// Python's `float(s)` for a string: surrounding white space, decimal and exponent
/// forms, `inf`/`infinity`/`nan` in any case with an optional sign, single underscores
/// between digits.
pub fn float(s: &str) -> Option<f64> {
    let t = strip(s);
    if t.is_empty() {
        return None;
    }
    let cleaned: std::borrow::Cow<'_, str> = if t.contains('_') {
        let b = t.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if c == b'_' {
                let before = i.checked_sub(1).and_then(|j| b.get(j));
                let after = b.get(i + 1);
                if !matches!(before, Some(b'0'..=b'9')) || !matches!(after, Some(b'0'..=b'9')) {
                    return None;
                }
            }
        }
        t.replace('_', "").into()
    } else {
        t.into()
    };
    // Rust accepts the same spellings as Python ("1.", ".5", "1e5", "inf", "nan",
    // "infinity", any case), except that it also takes a bare "+"/"-" prefix on
    // "nan", which Python accepts too.
    cleaned.parse::<f64>().ok()
}

/// Python's `str.expandtabs()` (tab stops every 8 columns; the column restarts after
/// `\n` and `\r`). pyparsing applies it to every target before parsing.
pub fn expandtabs(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\t') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut column = 0usize;
    for c in s.chars() {
        match c {
            '\t' => {
                let spaces = 8 - column % 8;
                out.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            '\n' | '\r' => {
                out.push(c);
                column = 0;
            }
            _ => {
                out.push(c);
                column += 1;
            }
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_like_python() {
        assert_eq!(int("12"), Some(12));
        assert_eq!(int(" -7 "), Some(-7));
        assert_eq!(int("+3"), Some(3));
        assert_eq!(int("-0"), Some(0));
        assert_eq!(int("1_000"), Some(1000));
        assert_eq!(int("1__0"), None);
        assert_eq!(int("_1"), None);
        assert_eq!(int(""), None);
        assert_eq!(int("-"), None);
        assert_eq!(int("5p"), None);
        assert_eq!(int("1.0"), None);
        assert_eq!(int("99999999999999999999"), None);
        assert_eq!(int("-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn float_like_python() {
        assert_eq!(float("1.5"), Some(1.5));
        assert_eq!(float(" 2 "), Some(2.0));
        assert_eq!(float("1."), Some(1.0));
        assert_eq!(float(".5"), Some(0.5));
        assert_eq!(float("-.5"), Some(-0.5));
        assert_eq!(float("1e3"), Some(1000.0));
        assert_eq!(float("1_0.5"), Some(10.5));
        assert_eq!(float("Infinity"), Some(f64::INFINITY));
        assert_eq!(float("-inf"), Some(f64::NEG_INFINITY));
        assert!(float("nan").is_some_and(f64::is_nan));
        assert_eq!(float("."), None);
        assert_eq!(float("1.2.3"), None);
        assert_eq!(float("_1"), None);
        assert_eq!(float(""), None);
    }

    #[test]
    fn expandtabs_like_python() {
        assert_eq!(expandtabs("a\tb"), "a       b");
        assert_eq!(expandtabs("abcdefgh\tb"), "abcdefgh        b");
        assert_eq!(expandtabs("ab\ncd\te"), "ab\ncd      e");
        assert_eq!(expandtabs("none"), "none");
    }

    #[test]
    fn strip_like_python() {
        assert_eq!(strip("\x1c a \u{a0}"), "a");
        assert_eq!(strip("\t\n"), "");
    }
}
