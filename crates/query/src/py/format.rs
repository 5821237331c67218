//! Python's `%` formatting of one float, as graphite-web writes numbers into series
//! names and labels: `'%g'` and `'%.Ng'`, `'%.Nf'`, `'%d'`, `'%*s'`, and the whole
//! `template % value` of `aliasQuery`.

use super::repr::float_repr;

/// Python's `'%g' % x`: six significant digits, trailing zeros dropped, exponent
/// notation (`1e+06`, `1e-05`) outside `1e-4 <= |x| < 1e6`.
pub fn format_g(x: f64) -> String {
    format_g_with(x, 6, false)
}

/// Python's `'%.{precision}g'` (with `#`: `alternate`, trailing zeros kept).
pub(crate) fn format_g_with(x: f64, precision: usize, alternate: bool) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let p = precision.max(1) as i32;
    // the decimal exponent after rounding to p significant digits
    let sci = format!("{:.*e}", (p - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = if x == 0.0 {
        0
    } else {
        exp.parse().unwrap_or(0)
    };
    let strip = |s: &str| -> String {
        if alternate {
            s.to_string()
        } else {
            strip_zeros(s).to_string()
        }
    };
    if (-4..p).contains(&exp) {
        strip(&format!("{:.*}", (p - 1 - exp) as usize, x))
    } else {
        format!(
            "{}e{}{:02}",
            strip(mantissa),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Python's `'%.Nf' % x` (`nan`, `inf`, `-inf` spelled as Python does).
pub(crate) fn format_fixed(x: f64, precision: usize) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{x:.precision$}")
    }
}

/// The largest width or precision [`percent_format`] accepts.
const MAX_FORMAT_WIDTH: usize = 10_000;

/// Python's `template % value` for one float, as `aliasQuery` formats names:
/// conversions `d i u e E f F g G s r a` and `%%`, with flags `-+ 0#`, width and
/// precision. `Err` where Python raises (no conversion, more than one, or one that
/// does not take a float).
pub(crate) fn percent_format(template: &str, value: f64) -> Result<String, String> {
    let chars: Vec<char> = template.chars().collect();
    let mut out = String::with_capacity(template.len() + 16);
    let mut used = false;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        let (mut left, mut plus, mut space, mut zero, mut alternate) =
            (false, false, false, false, false);
        while let Some(&c) = chars.get(i) {
            match c {
                '-' => left = true,
                '+' => plus = true,
                ' ' => space = true,
                '0' => zero = true,
                '#' => alternate = true,
                _ => break,
            }
            i += 1;
        }
        let mut width = 0usize;
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
            width = width.saturating_mul(10).saturating_add(d as usize);
            i += 1;
        }
        let mut precision: Option<usize> = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            let mut p = 0usize;
            while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                p = p.saturating_mul(10).saturating_add(d as usize);
                i += 1;
            }
            precision = Some(p);
        }
        // Python would build the string; a width or precision this large only serves
        // to exhaust memory
        if width > MAX_FORMAT_WIDTH || precision.is_some_and(|p| p > MAX_FORMAT_WIDTH) {
            return Err(format!(
                "format width or precision above {MAX_FORMAT_WIDTH}"
            ));
        }
        // length modifiers are read and ignored, as Python does
        while matches!(chars.get(i), Some('h' | 'l' | 'L')) {
            i += 1;
        }
        let Some(&conv) = chars.get(i) else {
            return Err("incomplete format".to_string());
        };
        i += 1;
        if conv == '%' {
            out.push('%');
            continue;
        }
        if used {
            return Err("not enough arguments for format string".to_string());
        }
        used = true;
        let numeric = !matches!(conv, 's' | 'r' | 'a');
        let body = match conv {
            'd' | 'i' | 'u' => {
                if !value.is_finite() {
                    return Err(format!(
                        "cannot convert float {} to integer",
                        float_repr(value)
                    ));
                }
                format!("{:.0}", value.abs().trunc())
            }
            'f' | 'F' => {
                let s = format_fixed(value.abs(), precision.unwrap_or(6));
                if conv == 'F' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            'e' | 'E' => {
                let s = format_e(value.abs(), precision.unwrap_or(6));
                if conv == 'E' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            'g' | 'G' => {
                let s = format_g_with(value.abs(), precision.unwrap_or(6), alternate);
                if conv == 'G' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            's' | 'r' | 'a' => {
                let s = float_repr(value);
                match precision {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                }
            }
            c => return Err(format!("%{c} format: a number is required, not float")),
        };
        let negative = match conv {
            'd' | 'i' | 'u' => value.trunc() < 0.0,
            _ => value.is_sign_negative() && !value.is_nan(),
        };
        let sign = if !numeric {
            ""
        } else if negative {
            "-"
        } else if plus {
            "+"
        } else if space {
            " "
        } else {
            ""
        };
        let len = sign.chars().count() + body.chars().count();
        let fill = width.saturating_sub(len);
        if left {
            out.push_str(sign);
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', fill));
        } else if zero && numeric && value.is_finite() {
            out.push_str(sign);
            out.extend(std::iter::repeat_n('0', fill));
            out.push_str(&body);
        } else {
            out.extend(std::iter::repeat_n(' ', fill));
            out.push_str(sign);
            out.push_str(&body);
        }
    }
    if !used {
        return Err("not all arguments converted during string formatting".to_string());
    }
    Ok(out)
}

/// Python's `'%.{precision}e'`: a signed exponent of at least two digits.
fn format_e(x: f64, precision: usize) -> String {
    if !x.is_finite() {
        return format_fixed(x, precision);
    }
    let s = format!("{x:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!(
        "{mantissa}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

/// Python's `'%*s' % (width, text)`: right-aligned in `width` characters, or
/// left-aligned when `width` is negative.
pub(crate) fn pad(text: &str, width: i64) -> String {
    let len = text.chars().count() as i64;
    let fill = " ".repeat((width.abs() - len).max(0) as usize);
    if width < 0 {
        format!("{text}{fill}")
    } else {
        format!("{fill}{text}")
    }
}

/// Python's `'%d' % x` of a float: truncated toward zero; `None` where Python raises
/// (infinity, NaN).
pub(crate) fn format_d(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    let t = x.trunc();
    if t == 0.0 {
        return Some("0".to_string());
    }
    Some(format!("{t:.0}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_g_like_python() {
        let cases: &[(f64, &str)] = &[
            (5.0, "5"),
            (2.5, "2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1e16, "1e+16"),
            (-0.5, "-0.5"),
            (95.0, "95"),
            (33.333333333, "33.3333"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
            (999999.5, "1e+06"),
            (1.5e-300, "1.5e-300"),
        ];
        for &(x, want) in cases {
            assert_eq!(format_g(x), want, "{x:e}");
        }
        assert_eq!(format_fixed(0.125, 2), "0.12");
        assert_eq!(format_g_with(1e-7, 3, true), "1.00e-07");
        assert_eq!(format_g_with(0.0, 3, true), "0.00");
        assert_eq!(format_fixed(f64::NAN, 2), "nan");
    }

    #[test]
    fn percent_format_like_python() {
        // each checked against CPython 3.11's `template % value`
        let cases: &[(&str, f64, &str)] = &[
            ("%d Apples", 3.75, "3 Apples"),
            ("%d Apples", -1234567.5, "-1234567 Apples"),
            ("%.2f", -1234567.5, "-1234567.50"),
            ("%5.1f|", 3.75, "  3.8|"),
            ("%-8s|", 1e-7, "1e-07   |"),
            ("%+d", 1e-7, "+0"),
            ("%d", -0.5, "0"),
            ("%e", -1234567.5, "-1.234568e+06"),
            ("%g", -1234567.5, "-1.23457e+06"),
            ("%010.3f", 3.75, "000003.750"),
            ("%s", 0.0, "0.0"),
            ("% d", 3.75, " 3"),
            ("%E", 1e-7, "1.000000E-07"),
            ("%G", 1e-7, "1E-07"),
            ("%.0f", -1234567.5, "-1234568"),
            ("%#.3g", 1e-7, "1.00e-07"),
            ("%05d", 3.75, "00003"),
            ("%-05d|", 3.75, "3    |"),
            ("100%% of %s", 2.0, "100% of 2.0"),
        ];
        for &(t, v, want) in cases {
            assert_eq!(percent_format(t, v).as_deref(), Ok(want), "{t:?} % {v}");
        }
        assert!(percent_format("%x", 3.0).is_err());
        assert!(percent_format("%999999999d", 3.0).is_err());
        assert!(percent_format("%.99999999f", 3.0).is_err());
        assert!(percent_format("plain", 3.0).is_err());
        assert!(percent_format("%s %s", 3.0).is_err());
    }

    #[test]
    fn percent_d_like_python() {
        assert_eq!(format_d(2.7).as_deref(), Some("2"));
        assert_eq!(format_d(-2.7).as_deref(), Some("-2"));
        assert_eq!(format_d(-0.5).as_deref(), Some("0"));
        assert_eq!(format_d(1e20).as_deref(), Some("100000000000000000000"));
        assert_eq!(format_d(f64::INFINITY), None);
        assert_eq!(format_d(f64::NAN), None);
    }

    #[test]
    fn pad_like_python() {
        assert_eq!(pad("ab", -4), "ab  ");
        assert_eq!(pad("ab", 4), "  ab");
        assert_eq!(pad("abcdef", -4), "abcdef");
    }

    #[test]
    fn percent_g_like_python_on_axis_labels() {
        // Expected strings from CPython 3.11's '%g' (the graph's axis labels).
        let cases = [
            (0.0, "0"),
            (0.0005, "0.0005"),
            (2e-08, "2e-08"),
            (6.000000000000001e-08, "6e-08"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (-3.0, "-3"),
            (0.1, "0.1"),
            (1e-05, "1e-05"),
            (0.00012345678, "0.000123457"),
            (1e22, "1e+22"),
            (999999.5, "1e+06"),
        ];
        for (v, want) in cases {
            assert_eq!(format_g(v), want, "{v}");
        }
    }
}
