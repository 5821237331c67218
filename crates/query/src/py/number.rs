//! Python's arithmetic where its result differs from the obvious Rust: the builtins
//! `sum()`, `min()` and `max()` over floats (order of operations, first of equal or
//! unordered values), `int()` of a float, `x ** 2` and `math.pow` (the C library's
//! `pow`), and `round()` (correctly rounded on the exact binary value, ties to even).

/// `sum()` of floats: from zero, left to right (so `-0.0` alone sums to `0.0`); `None`
/// for no value (`safeSum`).
pub(crate) fn py_sum(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut any = false;
    let sum = values.fold(0.0, |acc, v| {
        any = true;
        acc + v
    });
    any.then_some(sum)
}

/// `min()`: the first value, replaced only by a strictly smaller one.
pub(crate) fn py_min(mut values: impl Iterator<Item = f64>) -> Option<f64> {
    let first = values.next()?;
    Some(values.fold(first, |m, v| if v < m { v } else { m }))
}

/// `max()`: the first value, replaced only by a strictly greater one.
pub(crate) fn py_max(mut values: impl Iterator<Item = f64>) -> Option<f64> {
    let first = values.next()?;
    Some(values.fold(first, |m, v| if v > m { v } else { m }))
}

/// `int(x)` of a Python float for window sizes and counts given as floats: truncation
/// toward zero, saturating (Python would raise on NaN or infinity).
pub(crate) fn py_int(x: f64) -> i64 {
    if x.is_nan() {
        0
    } else {
        x as i64
    }
}

/// Python's `x ** 2` for a float: the C library's `pow(x, 2.0)`, which is not always
/// `x * x` (glibc's `pow` is accurate to about half an ulp, not correctly rounded).
/// The exponent is hidden from the optimiser, which would otherwise fold it to a
/// multiplication.
pub(crate) fn py_square(x: f64) -> f64 {
    x.powf(std::hint::black_box(2.0))
}

/// Python's `round(x, 6)`: correctly rounded to six decimals (half to even on the
/// exact binary value), as `exponentialMovingAverage` rounds.
pub(crate) fn round6(x: f64) -> f64 {
    // every double of magnitude 2^52 or more is an integer: nothing to round
    if !x.is_finite() || x.abs() >= 4503599627370496.0 {
        return x;
    }
    // at most 16 integer digits, a sign, a point and six decimals: a stack buffer
    let mut buf = StackText::<32>::new();
    if std::fmt::Write::write_fmt(&mut buf, format_args!("{x:.6}")).is_err() {
        return x;
    }
    buf.as_str().parse().unwrap_or(x)
}

/// A fixed-size text buffer for formatting without allocating.
struct StackText<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            bytes: [0; N],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> std::fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > N {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// graphite-web's `safePow`: `math.pow(a, b)`, or `None` where Python raises
/// (`ValueError` for a negative base to a fractional power or zero to a negative one,
/// `OverflowError` for a finite result too large).
pub(crate) fn py_pow(a: f64, b: f64) -> Option<f64> {
    let r = a.powf(b);
    if a.is_finite() && b.is_finite() && !r.is_finite() {
        // a NaN from finite operands is a domain error; an infinity is one when the base
        // is zero (division by zero), an overflow otherwise
        return None;
    }
    Some(r)
}

/// Python's `round(x, ndigits)` of a float: the exact binary value rounded to
/// `ndigits` decimals (tens, hundreds… when negative), ties to even.
pub(crate) fn py_round(x: f64, ndigits: i64) -> f64 {
    // CPython's limits beyond which the answer is x itself, or a zero
    if !x.is_finite() || x == 0.0 || ndigits > 323 {
        return x;
    }
    if ndigits < -308 {
        return 0.0 * x;
    }
    if ndigits >= 0 {
        // Rust's fixed-precision formatting is exact, with ties to even, as dtoa's mode 3
        return format!("{:.*}", ndigits as usize, x).parse().unwrap_or(x);
    }
    let k = (-ndigits) as usize;
    let int_part = x.trunc();
    let has_fraction = x != int_part;
    let digits = format!("{:.0}", int_part.abs());
    let digits = if digits == "0" { String::new() } else { digits };
    // quotient digits and the k digits below the rounding position
    let (quotient, below) = if digits.len() > k {
        digits.split_at(digits.len() - k)
    } else {
        ("", digits.as_str())
    };
    let below_padded = format!("{below:0>k$}");
    let half = format!("5{}", "0".repeat(k - 1));
    let up = match below_padded.as_str().cmp(half.as_str()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            has_fraction || quotient.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1)
        }
    };
    let mut q: Vec<u8> = if quotient.is_empty() {
        vec![b'0']
    } else {
        quotient.bytes().collect()
    };
    if up {
        let mut i = q.len();
        loop {
            if i == 0 {
                q.insert(0, b'1');
                break;
            }
            i -= 1;
            if q[i] == b'9' {
                q[i] = b'0';
            } else {
                q[i] += 1;
                break;
            }
        }
    }
    let text = format!("{}e{k}", String::from_utf8_lossy(&q));
    let magnitude: f64 = text.parse().unwrap_or(0.0);
    if x < 0.0 {
        -magnitude
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_min_max_keep_the_first_of_unordered_values() {
        let nan = f64::NAN;
        assert!(py_max([nan, 1.0].into_iter()).unwrap().is_nan());
        assert_eq!(py_max([1.0, nan].into_iter()), Some(1.0));
        assert_eq!(py_min([1.0, nan, 0.5].into_iter()), Some(0.5));
    }

    #[test]
    fn round6_like_python() {
        // each checked against CPython 3.11's round(x, 6)
        assert_eq!(round6(0.1234565), 0.123456);
        assert_eq!(round6(2.5e-7), 0.0);
        assert_eq!(round6(-1.0000005), -1.000001);
        assert_eq!(round6(123456789.1234567), 123456789.123457);
        assert_eq!(round6(1e300), 1e300);
        assert!(round6(f64::NAN).is_nan());
    }

    #[test]
    fn round_like_python() {
        // each checked with CPython 3.11's round()
        let cases: &[(f64, i64, f64)] = &[
            (0.5, 0, 0.0),
            (1.5, 0, 2.0),
            (2.5, 0, 2.0),
            (0.25, 1, 0.2),
            (2.675, 2, 2.67),
            (0.375, 2, 0.38),
            (15.0, -1, 20.0),
            (25.0, -1, 20.0),
            (5.0, -1, 0.0),
            (5.000001, -1, 10.0),
            (1234.5678, -2, 1200.0),
            (-1250.0, -2, -1200.0),
            (-1350.0, -2, -1400.0),
            (99999.0, -3, 100000.0),
            (123.0, -5, 0.0),
            (1.0000005, 6, 1.000001),
            (0.1234565, 6, 0.123456),
        ];
        for &(x, n, want) in cases {
            assert_eq!(py_round(x, n).to_bits(), want.to_bits(), "round({x}, {n})");
        }
        assert_eq!(py_round(-0.4, 0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(py_round(-4.0, -1).to_bits(), (-0.0f64).to_bits());
        assert!(py_round(f64::NAN, 2).is_nan());
        assert_eq!(py_round(f64::INFINITY, 2), f64::INFINITY);
        assert_eq!(py_round(1e300, 6), 1e300);
    }
}
