//! Python's `repr(x)` (and `str(x)`) of a float, the spelling graphite-web's output
//! gives every number it prints (`1e-05`, `42.0`, `1e+16`).

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

    /// `repr` of about fifty thousand floats (powers of ten, values around the layout
    /// boundaries, any bit pattern) as CPython writes them
    /// (`tests/graphite-diff/reference_dump.py repr`, run here; see `crate::reference`).
    #[test]
    fn same_repr_as_cpython() {
        let text = crate::reference::dump("repr");
        let mut bad = Vec::new();
        for line in text.lines() {
            let (bits, want) = line
                .split_once('\t')
                .unwrap_or_else(|| panic!("malformed reference line {line:?}"));
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
