//! The arguments of the text opcodes of pickle protocol 0 (Python 2's default, still
//! sent by old clients) and of the `LONG1`/`LONG4` integers, decoded as CPython 3.11's
//! unpickler decodes them.

use super::value::Value;

/// `codecs.escape_decode`, which CPython applies to the quoted argument of `STRING`
/// (a Python 2 `repr()` of a byte string): `\\ \' \" \a \b \f \n \r \t \v`, octal
/// `\ooo` (1 to 3 digits, high bits dropped as CPython does), `\xhh` (exactly two hex
/// digits), a backslash before a newline is dropped, and any other escape is kept as
/// it is, backslash included.
pub(super) fn escape_decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let mut i = 0;
    while let Some(&b) = src.get(i) {
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&c) = src.get(i) else {
            return Err("trailing \\ in STRING argument");
        };
        i += 1;
        match c {
            b'\n' => {}
            b'\\' | b'\'' | b'"' => out.push(c),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0C),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0B),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match src.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                // CPython keeps the low 8 bits of `\777`.
                out.push((v & 0xFF) as u8);
            }
            b'x' => {
                let hi = src.get(i).and_then(|&d| hex(d));
                let lo = src.get(i + 1).and_then(|&d| hex(d));
                match (hi, lo) {
                    (Some(h), Some(l)) => {
                        out.push((h << 4) | l);
                        i += 2;
                    }
                    _ => return Err("invalid \\x escape in STRING argument"),
                }
            }
            _ => {
                out.push(b'\\');
                out.push(c);
            }
        }
    }
    Ok(())
}

/// The `raw-unicode-escape` codec, which CPython applies to the argument of `UNICODE`:
/// every byte is the code point of the same number (Latin-1), except `\uXXXX` and
/// `\UXXXXXXXX`; a backslash before any other byte stays, with that byte. Written as
/// UTF-8; a lone surrogate (which a Python `str` may hold) is written as its 3-byte
/// form, which is not UTF-8, so that a name holding one is refused later, as carbon's
/// writer would fail on it.
pub(super) fn raw_unicode_escape(src: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let mut i = 0;
    while let Some(&b) = src.get(i) {
        i += 1;
        if b != b'\\' {
            push_code_point(out, u32::from(b));
            continue;
        }
        let digits = match src.get(i) {
            Some(b'u') => 4,
            Some(b'U') => 8,
            Some(&c) => {
                out.push(b'\\');
                push_code_point(out, u32::from(c));
                i += 1;
                continue;
            }
            None => {
                out.push(b'\\');
                break;
            }
        };
        i += 1;
        let mut cp: u32 = 0;
        for _ in 0..digits {
            let d = src
                .get(i)
                .and_then(|&d| hex(d))
                .ok_or("truncated \\uXXXX escape in UNICODE argument")?;
            cp = (cp << 4) | u32::from(d);
            i += 1;
        }
        if cp > 0x10FFFF {
            return Err("\\Uxxxxxxxx out of range in UNICODE argument");
        }
        push_code_point(out, cp);
    }
    Ok(())
}

/// UTF-8 of a code point, surrogates included (see [`raw_unicode_escape`]).
fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    // The casts keep the bits each byte is made of.
    match cp {
        0..=0x7F => out.push(cp as u8),
        0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
        0x800..=0xFFFF => out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
        _ => out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
    }
}

fn hex(d: u8) -> Option<u8> {
    match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        b'A'..=b'F' => Some(d - b'A' + 10),
        _ => None,
    }
}

/// The argument of `INT`, `LONG` (without its `L`): a decimal integer as Python's
/// `int()` reads it (surrounding ASCII whitespace, a sign, `_` between digits).
/// Python 2 wrote only plain decimals here; CPython's C unpickler would also take
/// `0x..` and octal through `strtol`, which no pickler writes and which are refused.
pub(super) fn decimal_int(text: &[u8]) -> Option<Value> {
    let t = text.trim_ascii();
    let (negative, digits) = match t.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, t),
    };
    if digits.first()? == &b'_' || digits.last()? == &b'_' || digits.windows(2).any(|w| w == b"__")
    {
        return None;
    }
    if !digits.iter().all(|&d| d.is_ascii_digit() || d == b'_') {
        return None;
    }
    let mut v: i64 = 0;
    let mut fits = true;
    for &d in digits.iter().filter(|&&d| d != b'_') {
        let d = i64::from(d - b'0');
        match v.checked_mul(10).and_then(|v| {
            if negative {
                v.checked_sub(d)
            } else {
                v.checked_add(d)
            }
        }) {
            Some(n) => v = n,
            None => {
                fits = false;
                break;
            }
        }
    }
    if fits {
        return Some(Value::Int(v));
    }
    // Beyond i64: only `float()` of it is ever needed. The standard parser rounds a
    // digit string correctly (half to even), as CPython's int-to-float does.
    let mut s = String::with_capacity(digits.len() + 1);
    if negative {
        s.push('-');
    }
    s.extend(
        digits
            .iter()
            .filter(|&&d| d != b'_')
            .map(|&d| char::from(d)),
    );
    let f: f64 = s.parse().ok()?;
    Some(Value::BigInt(f))
}

/// The little-endian two's-complement integer of `LONG1`/`LONG4`.
pub(super) fn long_bytes(le: &[u8]) -> Value {
    let negative = le.last().is_some_and(|&b| b & 0x80 != 0);
    if le.len() <= 8 {
        let mut bytes = [if negative { 0xFF } else { 0 }; 8];
        bytes
            .iter_mut()
            .zip(le.iter())
            .for_each(|(dst, &src)| *dst = src);
        return Value::Int(i64::from_le_bytes(bytes));
    }
    // Magnitude, little-endian: two's complement negated when negative.
    let mut mag: Vec<u8> = le.to_vec();
    if negative {
        let mut carry = true;
        for b in mag.iter_mut() {
            *b = !*b;
            if carry {
                let (v, overflow) = b.overflowing_add(1);
                *b = v;
                carry = overflow;
            }
        }
    }
    let f = magnitude_to_f64(&mag);
    Value::BigInt(if negative { -f } else { f })
}

/// A little-endian unsigned magnitude as the nearest `f64` (ties to even), or
/// infinity when it is too large, which `float()` would refuse (see
/// [`Value::BigInt`]).
fn magnitude_to_f64(mag: &[u8]) -> f64 {
    let Some(top) = mag.iter().rposition(|&b| b != 0) else {
        return 0.0;
    };
    let used = mag.get(..=top).unwrap_or_default();
    if used.len() <= 8 {
        let mut bytes = [0u8; 8];
        bytes.iter_mut().zip(used).for_each(|(d, &s)| *d = s);
        // Rust's integer-to-float conversion rounds to nearest, ties to even.
        return u64::from_le_bytes(bytes) as f64;
    }
    // Take the top 64 bits; fold every lower bit into a sticky bit 0, which lies far
    // below the rounding point of a 53-bit mantissa, so the conversion of those 64
    // bits rounds exactly as the whole number would.
    let lead = used.last().map_or(0, |b| b.leading_zeros()) as usize;
    let bits = used.len() * 8 - lead;
    let shift = bits - 64;
    let bit = |k: usize| -> u64 {
        used.get(k / 8)
            .map_or(0, |&b| u64::from((b >> (k % 8)) & 1))
    };
    let mut hi: u64 = 0;
    for k in (shift..bits).rev() {
        hi = (hi << 1) | bit(k);
    }
    let sticky = (0..shift).any(|k| bit(k) == 1);
    if sticky {
        hi |= 1;
    }
    let f = hi as f64;
    // `f` is below 2^64; scaling by a power of two is exact until it overflows.
    let exp = i32::try_from(shift).unwrap_or(i32::MAX);
    if exp > 1023 {
        return f64::INFINITY;
    }
    f * f64::powi(2.0, exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &[u8]) -> Result<Vec<u8>, &'static str> {
        let mut out = Vec::new();
        escape_decode(s, &mut out).map(|()| out)
    }

    fn raw(s: &[u8]) -> Result<String, &'static str> {
        let mut out = Vec::new();
        raw_unicode_escape(s, &mut out).map(|()| String::from_utf8_lossy(&out).into_owned())
    }

    // Expected values from CPython 3.11: codecs.escape_decode(b"...")[0].
    #[test]
    fn escape_decode_as_python() {
        assert_eq!(esc(br"a\qAA\n").unwrap(), b"a\\qAA\n");
        assert_eq!(esc(br"a\\q\101\x41\n").unwrap(), b"a\\qAA\n");
        assert_eq!(esc(br"\'\t\0\777").unwrap(), b"'\t\0\xff");
        assert_eq!(esc(b"a\\\nb").unwrap(), b"ab");
        assert!(esc(br"\x4").is_err());
        assert!(esc(br"\xzz").is_err());
        assert!(esc(b"abc\\").is_err());
    }

    // Expected values from CPython 3.11: b"...".decode("raw_unicode_escape").
    #[test]
    fn raw_unicode_escape_as_python() {
        assert_eq!(raw(b"caf\xe9").unwrap(), "caf\u{e9}");
        assert_eq!(raw(br"a\u0041\x41").unwrap(), "aA\\x41");
        assert_eq!(raw(br"\\u0041").unwrap(), "\\\\u0041");
        assert_eq!(raw(br"\u005c\u000a").unwrap(), "\\\n");
        assert_eq!(raw(br"\U0001F600").unwrap(), "\u{1F600}");
        assert_eq!(raw(b"end\\").unwrap(), "end\\");
        assert!(raw(br"\u12").is_err());
        assert!(raw(br"\U00110000").is_err());
        let mut out = Vec::new();
        raw_unicode_escape(br"\ud800", &mut out).unwrap();
        assert_eq!(out, b"\xed\xa0\x80");
        assert!(std::str::from_utf8(&out).is_err());
    }

    #[test]
    fn decimal_ints() {
        assert_eq!(decimal_int(b"1700000000"), Some(Value::Int(1_700_000_000)));
        assert_eq!(decimal_int(b" -12 "), Some(Value::Int(-12)));
        assert_eq!(decimal_int(b"+1_000"), Some(Value::Int(1000)));
        assert_eq!(
            decimal_int(b"-9223372036854775808"),
            Some(Value::Int(i64::MIN))
        );
        // float(2**70) == 1.1805916207174113e+21
        assert_eq!(
            decimal_int(b"1180591620717411303424"),
            Some(Value::BigInt(1.1805916207174113e21))
        );
        for bad in [
            &b""[..],
            b"-",
            b"1__0",
            b"_1",
            b"1_",
            b"0x10",
            b"1.5",
            b"12L",
        ] {
            assert_eq!(decimal_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn long_bytes_as_python() {
        assert_eq!(long_bytes(b""), Value::Int(0));
        assert_eq!(long_bytes(b"\xff"), Value::Int(-1));
        assert_eq!(long_bytes(b"\x00\x80"), Value::Int(-32768));
        assert_eq!(long_bytes(b"\xff\x00"), Value::Int(255));
        // pickle.dumps(2**70, 2) holds LONG1 with these 9 bytes
        assert_eq!(
            long_bytes(b"\x00\x00\x00\x00\x00\x00\x00\x00@"),
            Value::BigInt(1.1805916207174113e21)
        );
        // -(2**70)
        assert_eq!(
            long_bytes(b"\x00\x00\x00\x00\x00\x00\x00\x00\xc0"),
            Value::BigInt(-1.1805916207174113e21)
        );
        // 2**64 + 2**11 + 1: rounds up past the tie thanks to the sticky bit
        // (float(2**64 + 2**11 + 1) == 18446744073709555712.0)
        assert_eq!(
            long_bytes(b"\x01\x08\x00\x00\x00\x00\x00\x00\x01\x00"),
            Value::BigInt(18446744073709555712.0)
        );
        // 2**64 + 2**11: a tie, to even (float(2**64 + 2**11) == 18446744073709551616.0)
        assert_eq!(
            long_bytes(b"\x00\x08\x00\x00\x00\x00\x00\x00\x01\x00"),
            Value::BigInt(18446744073709551616.0)
        );
        // 2**1024 overflows float()
        let mut big = vec![0u8; 128];
        big.push(1);
        assert_eq!(long_bytes(&big), Value::BigInt(f64::INFINITY));
        // 2**1024 - 1 as well: it rounds to 2**1024
        let max = vec![0xFFu8; 128];
        let mut with_sign = max.clone();
        with_sign.push(0);
        assert_eq!(long_bytes(&with_sign), Value::BigInt(f64::INFINITY));
        // 2**1023 is fine
        let mut p = vec![0u8; 127];
        p.push(0x80);
        p.push(0);
        assert_eq!(long_bytes(&p), Value::BigInt(f64::powi(2.0, 1023)));
    }
}
