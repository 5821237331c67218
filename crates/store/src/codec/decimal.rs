//! Turning floats that are really decimals into integers, losslessly.
//!
//! Metrics arrive as text (`42`, `12.34`) and are parsed to the nearest double, so a block's
//! values are usually `m / 10^d` for small integers `m` and one small `d`. The decoder
//! computes a value as `m as f64 / 10^d` (one correctly rounded division of two exact
//! operands); the encoder keeps a value on this path only if that very computation gives back
//! its bits, so the path is lossless by construction. Values that fail (NaN, ±inf, -0.0,
//! `0.1 + 0.2`, ...) become *exceptions*, stored as raw bits.

/// Largest `d` allowed: `10^22` is the largest power of ten a double holds exactly.
pub(super) const MAX_DECIMALS: u32 = 22;

/// `10^d` as doubles, exact for every `d <= 22`.
const POW10: [f64; MAX_DECIMALS as usize + 1] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Above this magnitude `v * 10^d` no longer fits an `i64`; trying a larger `d` is pointless.
const I64_LIMIT: f64 = 9.2e18;

/// `10^d` as a double; `d` is clamped to [`MAX_DECIMALS`] (the decoder validates it first).
#[inline]
pub(super) fn pow10(d: u32) -> f64 {
    POW10.get(d as usize).copied().unwrap_or(1e22)
}

/// The decoder's conversion. The encoder verifies with this same function.
#[inline]
pub(super) fn to_f64(m: i64, p: f64) -> f64 {
    m as f64 / p
}

/// `Some(m)` if `v == m / 10^d` bit for bit under [`to_f64`].
#[inline]
fn scaled(v: f64, p: f64) -> Option<i64> {
    let x = v * p;
    // Written so that NaN also fails.
    if x.is_nan() || x.abs() >= I64_LIMIT {
        return None;
    }
    // Round half away from zero without a libm call: truncate, then correct by the fraction
    // (`x - trunc(x)` is exact).
    let t = x as i64;
    let frac = x - t as f64;
    let m = if frac >= 0.5 {
        t + 1
    } else if frac <= -0.5 {
        t - 1
    } else {
        t
    };
    (to_f64(m, p).to_bits() == v.to_bits()).then_some(m)
}

/// A block's values as decimals.
#[derive(Debug, Default)]
pub(super) struct Decimals {
    /// Number of decimal digits: value = `ints[i] / 10^d`.
    pub(super) d: u32,
    /// One integer per value; at an exception, a placeholder (the previous integer) chosen to
    /// keep the deltas small.
    pub(super) ints: Vec<i64>,
    /// Indexes of values stored as raw bits, increasing.
    pub(super) exceptions: Vec<usize>,
}

/// Finds the smallest `d` that covers the values, or `None` when too many values are not
/// decimals for this path to pay (then the caller uses the XOR coder).
pub(super) fn analyze(values: &[f64]) -> Option<Decimals> {
    let n = values.len();
    // Beyond this many exceptions (8 raw bytes each) the XOR coder is at least as good.
    let max_exceptions = n / 4 + 4;
    let mut dec = Decimals {
        d: 0,
        ints: Vec::with_capacity(n),
        exceptions: Vec::new(),
    };
    let mut max_abs = MaxAbs::default();
    let mut rest = values;
    loop {
        // Convert at the current `d` until a value does not fit it.
        let taken = if dec.d == 0 {
            extend_integers(&mut dec.ints, rest)
        } else {
            extend_decimals(&mut dec.ints, rest, pow10(dec.d))
        };
        let Some((&v, tail)) = rest.get(taken..).and_then(<[f64]>::split_first) else {
            break;
        };
        rest = tail;
        match raise(&mut dec, &mut max_abs, v) {
            Some(m) => dec.ints.push(m),
            None => {
                dec.exceptions.push(dec.ints.len());
                dec.ints.push(dec.ints.last().copied().unwrap_or(0));
                // Give up early on blocks that are mostly not decimals (random doubles,
                // ratios): each miss above tried every larger `d`.
                let misses = dec.exceptions.len();
                if misses > max_exceptions || (misses > 8 && 2 * misses > dec.ints.len()) {
                    return None;
                }
            }
        }
    }
    lower_if_cheaper(&mut dec, values);
    Some(dec)
}

/// Appends the integers of `vals` while they are integers (`d = 0`, where the decoder's
/// division by 1 is exact and skipped); returns how many it took.
fn extend_integers(ints: &mut Vec<i64>, vals: &[f64]) -> usize {
    for (i, &v) in vals.iter().enumerate() {
        let m = v as i64; // saturating, NaN to 0: the check below refuses those
        if (m as f64).to_bits() != v.to_bits() {
            return i;
        }
        ints.push(m);
    }
    vals.len()
}

/// Appends `m` for each value of `vals` equal to `m / p`, up to the first that is not;
/// returns how many it took.
fn extend_decimals(ints: &mut Vec<i64>, vals: &[f64], p: f64) -> usize {
    for (i, &v) in vals.iter().enumerate() {
        match scaled(v, p) {
            Some(m) => ints.push(m),
            None => return i,
        }
    }
    vals.len()
}

/// The largest `|m|` of the integers so far, brought up to date lazily (amortised O(1) a
/// value, where a scan at every miss would make blocks of misses quadratic).
#[derive(Debug, Default)]
struct MaxAbs {
    /// How many integers `max` covers.
    upto: usize,
    max: u64,
}

impl MaxAbs {
    fn get(&mut self, ints: &[i64]) -> u64 {
        let new = ints.get(self.upto..).unwrap_or_default();
        self.max = new
            .iter()
            .map(|m| m.unsigned_abs())
            .fold(self.max, u64::max);
        self.upto = ints.len();
        self.max
    }
}

/// Tries the decimal counts above the current one for `v`; on success rescales the integers
/// seen so far and returns `v`'s integer.
fn raise(dec: &mut Decimals, max_abs: &mut MaxAbs, v: f64) -> Option<i64> {
    if !v.is_finite() {
        return None;
    }
    for d in dec.d + 1..=MAX_DECIMALS {
        let pd = pow10(d);
        if (v * pd).abs() >= I64_LIMIT {
            return None;
        }
        let Some(m) = scaled(v, pd) else { continue };
        // The earlier integers times 10^k must stay exactly representable (|m| <= 2^53) for
        // their values to come out of the same division unchanged.
        let k = 10i64.checked_pow(d - dec.d)?;
        let scaled_max = max_abs
            .get(&dec.ints)
            .checked_mul(k.unsigned_abs())
            .filter(|&x| x <= 1u64 << 53)?;
        for x in &mut dec.ints {
            *x *= k;
        }
        max_abs.max = scaled_max;
        dec.d = d;
        return Some(m);
    }
    None
}

/// When a few values force a large `d` on many, storing those few as exceptions is cheaper:
/// each decimal digit costs about 3.3 bits on every value, an exception about 80 bits.
fn lower_if_cheaper(dec: &mut Decimals, values: &[f64]) {
    if dec.d == 0 {
        return;
    }
    // need[j]: values that need exactly d - j digits (j trailing decimal zeros, capped at d).
    let mut need = [0usize; MAX_DECIMALS as usize + 1];
    let mut exc = dec.exceptions.iter().peekable();
    for (i, &m) in dec.ints.iter().enumerate() {
        if exc.next_if(|&&e| e == i).is_some() {
            continue;
        }
        let mut tz = 0;
        let mut m = m;
        while tz < dec.d && m % 10 == 0 {
            m /= 10;
            tz += 1;
        }
        if let Some(c) = need.get_mut((dec.d - tz) as usize) {
            *c += 1;
        }
    }
    let n = values.len() as f64;
    let mut best = (0.0f64, dec.d);
    let mut extra_exceptions = 0usize;
    for target in (0..dec.d).rev() {
        extra_exceptions += need.get(target as usize + 1).copied().unwrap_or(0);
        let saving = 3.32 * f64::from(dec.d - target) * n - 80.0 * extra_exceptions as f64;
        if saving > best.0 {
            best = (saving, target);
        }
    }
    if best.1 == dec.d {
        return;
    }
    let target = best.1;
    let p = pow10(target);
    let mut ints = Vec::with_capacity(values.len());
    let mut exceptions = Vec::new();
    for &v in values {
        match scaled(v, p) {
            Some(m) => ints.push(m),
            None => {
                exceptions.push(ints.len());
                ints.push(ints.last().copied().unwrap_or(0));
            }
        }
    }
    *dec = Decimals {
        d: target,
        ints,
        exceptions,
    };
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )]

    use super::*;

    fn check(values: &[f64]) -> Decimals {
        let dec = analyze(values).expect("decimal path");
        let p = pow10(dec.d);
        for (i, (&v, &m)) in values.iter().zip(&dec.ints).enumerate() {
            if !dec.exceptions.contains(&i) {
                assert_eq!(to_f64(m, p).to_bits(), v.to_bits(), "value {i} = {v}");
            }
        }
        dec
    }

    #[test]
    fn two_decimal_gauges_get_d_2() {
        let vals: Vec<f64> = [1234i64, 5, -7, 9999, 100, 0]
            .iter()
            .map(|&m| m as f64 / 100.0)
            .collect();
        let dec = check(&vals);
        assert_eq!(dec.d, 2);
        assert_eq!(dec.ints, vec![1234, 5, -7, 9999, 100, 0]);
        assert!(dec.exceptions.is_empty());
    }

    #[test]
    fn integers_get_d_0_even_when_large() {
        let vals = [0.0, 8e9, 9_007_199_254_740_993f64, -4e15, 1e18];
        let dec = check(&vals);
        assert_eq!(dec.d, 0);
        assert!(dec.exceptions.is_empty());
    }

    #[test]
    fn non_decimals_become_exceptions() {
        let mut vals = vec![1.5; 40];
        vals[3] = f64::NAN;
        vals[7] = -0.0;
        vals[9] = f64::INFINITY;
        vals[11] = 0.1 + 0.2;
        let dec = check(&vals);
        assert_eq!(dec.d, 1);
        assert_eq!(dec.exceptions, vec![3, 7, 9, 11]);
        // Placeholders repeat the previous integer.
        assert_eq!(dec.ints[3], 15);
    }

    #[test]
    fn raising_d_rescales_earlier_integers() {
        let dec = check(&[3.0, 2.5, 1.25, 7.0]);
        assert_eq!(dec.d, 2);
        assert_eq!(dec.ints, vec![300, 250, 125, 700]);
    }

    #[test]
    fn one_long_decimal_does_not_widen_a_large_block() {
        let mut vals: Vec<f64> = (0..1000).map(|i| f64::from(i) / 10.0).collect();
        vals[500] = 0.123_456_789;
        let dec = check(&vals);
        assert_eq!(dec.d, 1);
        assert_eq!(dec.exceptions, vec![500]);
    }

    #[test]
    fn random_doubles_are_refused() {
        let mut s = 1u64;
        let vals: Vec<f64> = (0..100)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                (s >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect();
        assert!(analyze(&vals).is_none());
    }
}
