//! Python's `float(str)` for one whitespace-free token, as CPython 3.11 (the
//! interpreter carbon 1.1.10 runs on) accepts it.
//!
//! CPython first maps every Unicode decimal digit (general category Nd) to its ASCII
//! digit and refuses any other non-ASCII character; then, when the text holds `_`,
//! checks that every `_` sits between two digits and removes them (PEP 515); then
//! parses `[sign] (digits [. [digits]] | . digits) [e [sign] digits]` or
//! `inf`/`infinity`/`nan` in any case, correctly rounded.
//!
//! That last grammar is exactly the one Rust's `str::parse::<f64>` documents, and both
//! round correctly, so after the first two steps the standard parser gives Python's
//! bits. The tests hold values printed by the real interpreter.

/// The first code point (digit zero) of every run of ten Unicode decimal digits that
/// CPython 3.11 (Unicode 14.0) accepts in `float()`. Generated with
/// `[c for c in range(0x80, 0x110000) if float(chr(c)) == 0.0]` (each run is the ten
/// digits 0..9 in order, which the same script checked).
const NON_ASCII_ZEROS: [u32; 65] = [
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// Tokens up to this many bytes are rewritten on the stack; longer ones (only with
/// `_` or non-ASCII digits, so never in real traffic) use a heap buffer.
const STACK_BYTES: usize = 128;

/// The value of a short plain integer token: an optional sign and 1 to 15 ASCII
/// digits. Any such integer is below 2^53, so it is exactly representable as an
/// `f64` and `float()` of it is the integer itself: no rounding to get wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SmallInt {
    pub(crate) negative: bool,
    pub(crate) magnitude: u64,
}

impl SmallInt {
    pub(crate) fn to_f64(self) -> f64 {
        // `magnitude < 10^15 < 2^53`: the conversion is exact; negating keeps `-0`.
        let v = self.magnitude as f64;
        if self.negative {
            -v
        } else {
            v
        }
    }

    pub(crate) fn to_i64(self) -> i64 {
        // `magnitude < 10^15`, far inside i64.
        let v = self.magnitude as i64;
        if self.negative {
            -v
        } else {
            v
        }
    }
}

/// Recognises the common case (`123456789`, `-1`) without the general parser.
#[inline]
pub(crate) fn small_int(tok: &[u8]) -> Option<SmallInt> {
    let (negative, digits) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, tok),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut magnitude = 0u64;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(d);
    }
    Some(SmallInt {
        negative,
        magnitude,
    })
}

/// `float(tok)` as CPython computes it, or `None` where CPython raises `ValueError`.
/// `tok` must hold no whitespace (the line splitter removed it).
pub(crate) fn parse(tok: &str) -> Option<f64> {
    let bytes = tok.as_bytes();
    if let Some(i) = small_int(bytes) {
        return Some(i.to_f64());
    }
    if let Some(v) = short_decimal(bytes) {
        return Some(v);
    }
    if bytes.is_ascii() && !bytes.contains(&b'_') {
        return tok.parse::<f64>().ok();
    }
    if tok.len() <= STACK_BYTES {
        let mut buf = [0u8; STACK_BYTES];
        let n = rewrite(tok, &mut buf)?;
        parse_ascii(buf.get(..n)?)
    } else {
        let mut buf = vec![0u8; tok.len()];
        let n = rewrite(tok, &mut buf)?;
        parse_ascii(buf.get(..n)?)
    }
}

/// `10^k` for `k` in `0..=15`, each exactly representable as an `f64`.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// `float()` of the common decimal (`12.34`, `-0.5`, `7.`, `.25`): an optional sign,
/// then ASCII digits around one `.`, at most 15 digits in all; `None` for anything
/// else. Without the general parser: the digits make an integer below 2^53 and
/// `10^k` (k ≤ 15) is exact, so one IEEE division rounds the exact quotient
/// correctly (Clinger's fast path), giving the bits CPython's strtod gives.
#[inline]
fn short_decimal(tok: &[u8]) -> Option<f64> {
    let (negative, rest) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, tok),
    };
    let dot = rest.iter().position(|&b| b == b'.')?;
    let (int, frac) = rest.split_at(dot);
    let frac = frac.get(1..)?;
    let digits = int.len() + frac.len();
    if digits == 0 || digits > 15 {
        return None;
    }
    let mut m = 0u64;
    for &b in int.iter().chain(frac) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        m = m * 10 + u64::from(d);
    }
    // `m < 10^15 < 2^53`: exact as an f64
    let v = m as f64 / POW10.get(frac.len())?;
    Some(if negative { -v } else { v })
}

fn parse_ascii(ascii: &[u8]) -> Option<f64> {
    std::str::from_utf8(ascii).ok()?.parse::<f64>().ok()
}

/// Writes `tok` as CPython hands it to its strtod: Unicode digits made ASCII, `_`
/// checked and removed. Returns the length written, or `None` for a token CPython
/// refuses at this stage. `out` must hold at least `tok.len()` bytes (the rewrite
/// never grows: every character becomes at most one byte).
fn rewrite(tok: &str, out: &mut [u8]) -> Option<usize> {
    let mut n = 0;
    // The previous character after the digit mapping, for the underscore rule.
    let mut prev: Option<u8> = None;
    let mut pending_underscore = false;
    for c in tok.chars() {
        let b = if c.is_ascii() {
            c as u8
        } else {
            b'0' + decimal_digit(c)?
        };
        if b == b'_' {
            // Only after a digit (which also refuses a leading and a doubled `_`).
            if !prev.is_some_and(|p| p.is_ascii_digit()) {
                return None;
            }
            pending_underscore = true;
        } else {
            // Only before a digit.
            if pending_underscore && !b.is_ascii_digit() {
                return None;
            }
            pending_underscore = false;
            *out.get_mut(n)? = b;
            n += 1;
        }
        prev = Some(b);
    }
    if pending_underscore {
        return None;
    }
    Some(n)
}

/// The value 0..=9 of a non-ASCII Unicode decimal digit, as CPython's
/// `Py_UNICODE_TODECIMAL` gives it; `None` for any other character.
fn decimal_digit(c: char) -> Option<u8> {
    let cp = u32::from(c);
    // The last run starting at or below `cp`.
    let idx = NON_ASCII_ZEROS.partition_point(|&zero| zero <= cp);
    let zero = *NON_ASCII_ZEROS.get(idx.checked_sub(1)?)?;
    let d = cp - zero;
    if d < 10 {
        u8::try_from(d).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(token, Python's float(token) as f64 bits, or None for ValueError)`, printed
    /// by `/tmp/gw/venv/bin/python` (CPython 3.11.7) with `float(t).hex()`.
    fn check(tok: &str, want: Option<f64>) {
        let got = parse(tok);
        match (got, want) {
            (Some(g), Some(w)) if w.is_nan() => assert!(g.is_nan(), "{tok:?}: got {g}"),
            (Some(g), Some(w)) => {
                assert_eq!(g.to_bits(), w.to_bits(), "{tok:?}: got {g}, want {w}")
            }
            (None, None) => {}
            _ => panic!("{tok:?}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn plain_numbers_as_python() {
        check("1", Some(1.0));
        check("-1", Some(-1.0));
        check("+1", Some(1.0));
        check("1.5", Some(1.5));
        check(".5", Some(0.5));
        check("5.", Some(5.0));
        check("-.5", Some(-0.5));
        check("+.5e1", Some(5.0));
        check("1e5", Some(100000.0));
        check("1E5", Some(100000.0));
        check("1e+5", Some(100000.0));
        check("1e-5", Some(f64::from_bits(0x3EE4F8B588E368F1))); // 0x1.4f8b588e368f1p-17
        check("1.e5", Some(100000.0));
        check("00012", Some(12.0));
        check("0e0", Some(0.0));
        check("0.1", Some(f64::from_bits(0x3FB999999999999A)));
        check("123456789", Some(123456789.0));
        check("1700000000", Some(1700000000.0));
        check("1e00000000000000000000000001", Some(10.0));
    }

    /// The short-decimal path gives the general parser's bits (correctly rounded, as
    /// CPython) on every shape it takes, and leaves the rest to it.
    #[test]
    fn short_decimals_as_the_general_parser() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut taken = 0;
        for _ in 0..200_000 {
            let r = next();
            let digits = (r % 15 + 1) as usize;
            let dot = ((r >> 8) % (digits as u64 + 1)) as usize;
            let sign = ["", "-", "+"][((r >> 16) % 3) as usize];
            let mut t = String::from(sign);
            for i in 0..digits {
                if i == dot {
                    t.push('.');
                }
                t.push(char::from(b'0' + (next() % 10) as u8));
            }
            if dot == digits {
                t.push('.');
            }
            let want: f64 = t.parse().unwrap();
            let got = short_decimal(t.as_bytes()).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{t:?}");
            taken += 1;
        }
        assert_eq!(taken, 200_000);
        assert_eq!(
            short_decimal(b"-0.0").map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        assert_eq!(
            short_decimal(b"0.1").map(f64::to_bits),
            Some(0x3FB999999999999A)
        );
        for other in [
            "1234567890.1234567", // 17 digits: the general parser
            ".",
            "-.",
            "1.2.3",
            "1e5",
            "1.5e3",
            "12",
            "1_0.5",
            "inf",
            "",
            "-",
            "1.-5",
        ] {
            assert_eq!(short_decimal(other.as_bytes()), None, "{other:?}");
        }
        check("1234567890.1234567", Some(1234567890.1234567));
        check("-0.25", Some(-0.25));
    }

    #[test]
    fn negative_zero_keeps_its_sign() {
        let v = parse("-0").unwrap();
        assert_eq!(v.to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn rounding_as_python() {
        // 2^53 + 1 rounds to even.
        check("9007199254740993", Some(9007199254740992.0));
        check(
            "123456789012345678901234567890",
            Some(f64::from_bits(0x45F8EE90FF6C373E)),
        );
        check("9223372036854775807", Some(9223372036854775808.0));
        check(
            "9223372036854775295",
            Some(f64::from_bits(0x43DFFFFFFFFFFFFF)),
        );
        check("9223372036854775296", Some(9223372036854775808.0));
        check("1.7976931348623157e308", Some(f64::MAX));
        check("1.7976931348623159e308", Some(f64::INFINITY));
        check("4.9e-324", Some(f64::from_bits(1)));
        check("2.5e-324", Some(f64::from_bits(1)));
        check("2.4e-324", Some(0.0));
        check(
            "2.2250738585072011e-308",
            Some(f64::from_bits(0x000FFFFFFFFFFFFF)),
        );
        check(
            "0.30000000000000004441",
            Some(f64::from_bits(0x3FD3333333333334)),
        );
        check("1e400", Some(f64::INFINITY));
        check("-1e400", Some(f64::NEG_INFINITY));
        check("1e-400", Some(0.0));
        check("1e1000000000000000000000000", Some(f64::INFINITY));
        let long_tiny = format!("0.{}1e400", "0".repeat(400));
        check(&long_tiny, Some(f64::from_bits(0x3FB999999999999A)));
        check(&"1".repeat(400), Some(f64::INFINITY));
        check(
            &format!("{}e-400", "1".repeat(400)),
            Some(f64::from_bits(0x3FBC71C71C71C71C)),
        );
    }

    #[test]
    fn specials_as_python() {
        for t in [
            "inf", "+inf", "Inf", "INF", "infinity", "Infinity", "iNfInItY",
        ] {
            check(t, Some(f64::INFINITY));
        }
        check("-inf", Some(f64::NEG_INFINITY));
        check("-INFINITY", Some(f64::NEG_INFINITY));
        for t in ["nan", "-nan", "+NaN", "NAN"] {
            check(t, Some(f64::NAN));
        }
        for t in [
            "infinit",
            "infinityy",
            "nan(1)",
            "in_f",
            "infinity_",
            "_inf",
            "snan",
        ] {
            check(t, None);
        }
    }

    #[test]
    fn malformed_as_python() {
        for t in [
            "", "1e", "1e+", ".", "-", "+", ".e5", "e5", "++1", "--1", "+-1", "1.2.3", "0x10",
            "true", "0b1", "1j", "1d", "1f", "1\u{0}", "1,5",
        ] {
            check(t, None);
        }
    }

    #[test]
    fn underscores_as_python() {
        check("1_0", Some(10.0));
        check("1.5_5", Some(f64::from_bits(0x3FF8CCCCCCCCCCCD)));
        check("1e1_0", Some(10000000000.0));
        check("1_000.000_1e1_0", Some(10000001000000.0));
        for t in [
            "1__0", "_1", "1_", "1_.5", "1._5", "1e_10", "1_e5", "-_1", "+_1",
        ] {
            check(t, None);
        }
    }

    #[test]
    fn unicode_digits_as_python() {
        check("\u{661}\u{662}\u{663}", Some(123.0)); // Arabic-Indic
        check("\u{661}_\u{662}", Some(12.0));
        check("1.5e\u{663}", Some(1500.0));
        check("\u{663}e2", Some(300.0));
        check("\u{FF11}\u{FF12}", Some(12.0)); // fullwidth digits
        check("\u{1D7CF}", Some(1.0)); // mathematical bold digit one
        check("\u{1FBF9}", Some(9.0)); // last digit of the last run
        check("\u{FF11}\u{FF12}\u{FF13}\u{FF0E}\u{FF15}", None); // fullwidth full stop is no dot
        check("\u{B2}", None); // superscript two is not a decimal digit
        check("\u{2167}", None); // roman numeral eight
        check("\u{65F}", None); // just below a run
        check("\u{66A}", None); // just past a run
        let long = format!("{}{}", "\u{661}".repeat(200), "_1");
        check(&long, Some("1".repeat(201).parse::<f64>().unwrap()));
    }

    #[test]
    fn decimal_digit_table_is_runs_of_ten() {
        for w in NON_ASCII_ZEROS.windows(2) {
            assert!(w[1] >= w[0] + 10, "{:x} overlaps {:x}", w[0], w[1]);
        }
        for &z in &NON_ASCII_ZEROS {
            for d in 0..10u8 {
                let c = char::from_u32(z + u32::from(d)).unwrap();
                assert_eq!(decimal_digit(c), Some(d));
            }
        }
        assert_eq!(decimal_digit('\u{7F}'), None);
    }

    #[test]
    fn small_int_bounds() {
        assert_eq!(
            small_int(b"999999999999999").map(|i| i.magnitude),
            Some(999_999_999_999_999)
        );
        assert_eq!(small_int(b"1000000000000000"), None); // 16 digits: general parser
        assert_eq!(small_int(b"-"), None);
        assert_eq!(small_int(b"1.0"), None);
        assert_eq!(small_int(b"-12").map(SmallInt::to_i64), Some(-12));
    }
}
