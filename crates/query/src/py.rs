//! Python's text conversions, reproduced where graphite-web's results depend on them:
//! `str.strip()`/`isspace()`, `int(str)`, `float(str)`, `str.expandtabs()` and
//! `repr(float)`.
//!
//! graphite-web is written in Python, so the exact spelling of a number in its output
//! (`1e-05`, `42.0`, `1e+16`) and the exact set of strings it accepts as a number come
//! from CPython. Only ASCII digits are treated as digits here; CPython also accepts
//! other Unicode decimal digits in `int()`, which no Graphite client sends.

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

/// Appends Python's `repr(x)` of a float: the shortest digits that read back as `x`,
/// in fixed notation when the decimal exponent is in `-4 <= e < 16` (`0.0001`,
/// `42.0`, `1234567890123456.0`), else in exponent notation with a signed exponent of
/// at least two digits (`1e-05`, `1e+16`, `1.5e+300`). `nan`, `inf`, `-inf` as Python
/// spells them.
///
/// ryu finds the same shortest digits and already uses Python's layout for decimal
/// exponents -5 < e <= 16, except that it writes 1e-05..9.99e-05 in fixed notation;
/// only its exponent spelling (`1e16`, `1e-7`) needs rewriting.
pub fn write_float_repr(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
        return;
    }
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(x);
    let (sign, body) = match s.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", s),
    };
    if let Some(digits) = body.strip_prefix("0.0000") {
        // 0.0000ddd: ryu's fixed notation for a decimal exponent of -5
        out.push_str(sign);
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push_str("e-05");
        return;
    }
    match body.split_once('e') {
        None => out.push_str(s),
        Some((mantissa, exp)) => {
            out.push_str(sign);
            out.push_str(mantissa);
            out.push('e');
            let (exp_sign, exp_digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            out.push(exp_sign);
            if exp_digits.len() < 2 {
                out.push('0');
            }
            out.push_str(exp_digits);
        }
    }
}

/// Python's `repr(x)` of a float, as a new string.
pub fn float_repr(x: f64) -> String {
    let mut s = String::with_capacity(24);
    write_float_repr(&mut s, x);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        // each pair checked against CPython 3.11's repr()
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (42.0, "42.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e-5, "1e-05"),
            (1.5e300, "1.5e+300"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (1234567890123456.0, "1234567890123456.0"),
            (9999999999999998.0, "9999999999999998.0"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (1e22, "1e+22"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-2.5, "-2.5"),
            (100.0, "100.0"),
            (123.456, "123.456"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0, "0.6666666666666666"),
            (1e100, "1e+100"),
            (1.1e-10, "1.1e-10"),
            (-981446413237567.2, "-981446413237567.2"),
            (1.5e-5, "1.5e-05"),
            (9.99e-5, "9.99e-05"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for &(x, want) in cases {
            assert_eq!(float_repr(x), want, "repr of {x:e}");
        }
    }

    /// The layout rule spelled out from the digits (ryu's: they break ties to even as
    /// CPython does, e.g. -981446413237567.25 → `…567.2`, where `{:e}` gives `…567.3`),
    /// to hold the fast path to it.
    fn reference_repr(x: f64) -> String {
        let mut buf = ryu::Buffer::new();
        let s = buf.format_finite(x.abs());
        let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
        let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all = format!("{int_part}{frac_part}");
        let lead = all.len() - all.trim_start_matches('0').len();
        let digits = all
            .trim_start_matches('0')
            .trim_end_matches('0')
            .to_string();
        let decpt = int_part.len() as i32 - lead as i32 + exp.parse::<i32>().unwrap();
        let n = digits.len() as i32;
        let sign = if x.is_sign_negative() { "-" } else { "" };
        if digits.is_empty() {
            return format!("{sign}0.0");
        }
        if decpt <= -4 || decpt > 16 {
            let m = if n > 1 {
                format!("{}.{}", &digits[..1], &digits[1..])
            } else {
                digits.clone()
            };
            let e = decpt - 1;
            format!("{sign}{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        } else if decpt <= 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-decpt) as usize))
        } else if decpt >= n {
            format!("{sign}{digits}{}.0", "0".repeat((decpt - n) as usize))
        } else {
            format!(
                "{sign}{}.{}",
                &digits[..decpt as usize],
                &digits[decpt as usize..]
            )
        }
    }

    #[test]
    fn float_repr_follows_the_layout_rule() {
        let mut state = 0x1234_5678_9abc_def1u64;
        let check = |x: f64| {
            if x.is_finite() {
                assert_eq!(float_repr(x), reference_repr(x), "{x:e}");
            }
        };
        for e in -330..310 {
            check(10f64.powi(e));
            check(-1.5 * 10f64.powi(e));
        }
        for _ in 0..50_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            check(f64::from_bits(state));
            // and values of every magnitude around the layout boundaries
            let y = (state % 1_000_000) as f64 * 10f64.powi((state % 40) as i32 - 20);
            check(y);
        }
    }

    #[test]
    fn float_repr_reads_back() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::from_bits(state);
            if !x.is_finite() {
                continue;
            }
            let s = float_repr(x);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{s}");
        }
    }

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

    /// Compares `float_repr` with CPython on a file of `bits-in-hex\trepr` lines. Run with
    /// `SUMI_REPR_DIFF=/path cargo test -p sumi-query -- --ignored repr_differential`.
    #[test]
    #[ignore]
    fn repr_differential() {
        let Ok(path) = std::env::var("SUMI_REPR_DIFF") else {
            return;
        };
        let text = std::fs::read_to_string(path).expect("readable");
        let mut bad = Vec::new();
        for line in text.lines() {
            let Some((bits, want)) = line.split_once('\t') else {
                continue;
            };
            let x = f64::from_bits(u64::from_str_radix(bits, 16).expect("hex"));
            let got = float_repr(x);
            if got != want {
                bad.push(format!("{bits}: got {got}, want {want}"));
            }
        }
        assert!(
            bad.is_empty(),
            "{} differ:\n{}",
            bad.len(),
            bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}
