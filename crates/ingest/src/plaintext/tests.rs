//! Parser tests. Expected values were printed by carbon's own interpreter
//! (`/tmp/gw/venv/bin/python`, CPython 3.11.7) running carbon's expressions:
//! `line.strip().split()`, `float(...)`, `int(float(...))`.

use super::*;

const NOW: i64 = 1_700_000_123;

fn ok(line: &str) -> ParsedLine<'_> {
    parse_line(line.as_bytes(), NOW).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

fn err(line: &[u8]) -> LineError {
    match parse_line(line, NOW) {
        Ok(p) => panic!("{line:?} parsed as {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn benchmark_shaped_line() {
    let p = ok("host00042.disk.sda.write_bytes 123456789 1700000000");
    assert_eq!(p.name, "host00042.disk.sda.write_bytes");
    assert!(
        matches!(p.name, Cow::Borrowed(_)),
        "a clean name is not copied"
    );
    assert_eq!(p.value, 123456789.0);
    assert_eq!(p.ts, 1_700_000_000);
    assert!(!p.name_changed);
}

#[test]
fn surrounding_and_repeated_whitespace() {
    for line in [
        "  a.b   1.5\t 10  ",
        "a.b 1.5 10\r",
        "\ta.b\x0b1.5\x0c10",
        "a.b\x1c1.5\x1f10",
        "a.b\u{85}1.5\u{a0}10",
        "\u{3000}a.b\u{2028}1.5\u{2029}10\u{202f}",
        "a.b\u{1680}1.5\u{205f}10",
        "a.b\u{2000}1.5\u{200a}10",
    ] {
        let p = ok(line);
        assert_eq!(
            (p.name.as_ref(), p.value, p.ts),
            ("a.b", 1.5, 10),
            "{line:?}"
        );
    }
}

#[test]
fn whitespace_set_is_pythons() {
    // [hex(c) for c in range(0x110000) if len(('a'+chr(c)+'b').split()) == 2]
    let python: Vec<u32> = [
        0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
        0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029,
        0x202f, 0x205f, 0x3000,
    ]
    .to_vec();
    let mut ours = Vec::new();
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
        let line = format!("a{c}b");
        let split_here = split3(&line) == Err(LineError::FieldCount(2));
        assert_eq!(split_here, is_python_space(c), "U+{:04X}", u32::from(c));
        if split_here {
            ours.push(u32::from(c));
        }
    }
    assert_eq!(ours, python);
}

#[test]
fn non_space_unicode_stays_in_the_name() {
    // U+2030 (per mille) starts with E2 80 like the spaces but is not one.
    let p = ok("caf\u{e9}.\u{2030}.\u{3001} 1 2");
    assert_eq!(p.name, "caf\u{e9}.\u{2030}.\u{3001}");
}

#[test]
fn field_count() {
    assert_eq!(err(b"a.b 1"), LineError::FieldCount(2));
    assert_eq!(err(b"a.b"), LineError::FieldCount(1));
    assert_eq!(err(b"a.b 1 2 3"), LineError::FieldCount(4));
    assert_eq!(err(b"a b c d e f"), LineError::FieldCount(6));
    // a name with a space is two fields in carbon too
    assert_eq!(err(b"my metric 1 2"), LineError::FieldCount(4));
    assert_eq!(err(b"a.b 1 2 3").reason(), "invalid_line");
}

#[test]
fn blank_lines_are_not_points() {
    for line in ["", " ", "\r", "\t \u{3000} "] {
        let e = err(line.as_bytes());
        assert_eq!(e, LineError::Blank);
        assert_eq!(e.rejection(), None);
        assert_eq!(e.reason(), "blank_line");
    }
}

#[test]
fn value_grammar_is_pythons() {
    let cases: &[(&str, f64)] = &[
        ("1_0", 10.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("-.5", -0.5),
        ("+.5e1", 5.0),
        ("1E+5", 100000.0),
        ("1_000.000_1e1_0", 10000001000000.0),
        ("\u{661}\u{662}\u{663}", 123.0),
        ("inf", f64::INFINITY),
        ("-Infinity", f64::NEG_INFINITY),
        ("1e400", f64::INFINITY),
    ];
    for &(v, want) in cases {
        let line = format!("a.b {v} 100");
        assert_eq!(ok(&line).value, want, "{v:?}");
    }
    for v in [
        "1__0", "_1", "1_", "1e", ".", "0x10", "1,5", "infinit", "1.2.3", "\u{b2}",
    ] {
        let line = format!("a.b {v} 100");
        assert_eq!(err(line.as_bytes()), LineError::InvalidValue, "{v:?}");
    }
}

#[test]
fn nan_values_are_dropped_and_named() {
    for v in ["nan", "NaN", "-nan", "+NAN"] {
        let line = format!("a.b {v} 100");
        let e = err(line.as_bytes());
        assert_eq!(e, LineError::NanValue);
        assert_eq!(e.reason(), "nan_value");
    }
}

#[test]
fn timestamps_truncate_toward_zero() {
    // int(float(t)) in Python
    let cases: &[(&str, i64)] = &[
        ("1700000000", 1_700_000_000),
        ("1700000000.9", 1_700_000_000),
        ("1.7e9", 1_700_000_000),
        ("-5.5", -5),
        ("-0.5", 0),
        ("-2", -2),
        ("0", 0),
        ("-86400", -86_400),
        ("4102444800", 4_102_444_800), // 2100-01-01
        ("1_700_000_000", 1_700_000_000),
        ("-9223372036854775808", i64::MIN),
        ("-9223372036854775809", i64::MIN), // rounds to -2^63 as a float
        ("9223372036854775295", 9_223_372_036_854_774_784),
        ("9007199254740993", 9_007_199_254_740_992),
    ];
    for &(t, want) in cases {
        let line = format!("a.b 1 {t}");
        assert_eq!(ok(&line).ts, want, "{t:?}");
    }
}

#[test]
fn minus_one_means_now() {
    // carbon: int(float(t)) == -1
    for t in ["-1", "-1.0", "-1.9", "-1.5", "-1e0", "-1_0e-1"] {
        let line = format!("a.b 1 {t}");
        assert_eq!(ok(&line).ts, NOW, "{t:?}");
    }
    assert_eq!(ok("a.b 1 -2.0").ts, -2);
    assert_eq!(ok("a.b 1 -0.9").ts, 0);
}

#[test]
fn unusable_timestamps() {
    assert_eq!(err(b"a.b 1 x"), LineError::InvalidTimestamp);
    assert_eq!(err(b"a.b 1 1e"), LineError::InvalidTimestamp);
    assert_eq!(
        err(b"a.b 1 inf"),
        LineError::NonFiniteTimestamp(f64::INFINITY)
    );
    assert_eq!(
        err(b"a.b 1 -inf"),
        LineError::NonFiniteTimestamp(f64::NEG_INFINITY)
    );
    assert!(matches!(err(b"a.b 1 nan"), LineError::NonFiniteTimestamp(f) if f.is_nan()));
    // float('9223372036854775807') is 2^63, one past i64::MAX
    assert!(matches!(
        err(b"a.b 1 9223372036854775807"),
        LineError::TimestampOutOfRange(_)
    ));
    assert!(matches!(
        err(b"a.b 1 1e300"),
        LineError::TimestampOutOfRange(_)
    ));
    for e in [err(b"a.b 1 x"), err(b"a.b 1 inf"), err(b"a.b 1 1e300")] {
        assert_eq!(e.reason(), "invalid_timestamp");
    }
}

#[test]
fn timestamp_is_judged_before_value_like_carbon() {
    // carbon: datapoint = (float(timestamp), float(value)) raises on the timestamp first
    assert_eq!(err(b"a.b x y"), LineError::InvalidTimestamp);
    // the NaN filter runs before int(timestamp) would raise
    assert_eq!(err(b"a.b nan inf"), LineError::NanValue);
}

#[test]
fn infinite_values_pass() {
    assert_eq!(ok("a.b inf 1").value, f64::INFINITY);
    assert_eq!(ok("a.b -INF 1").value, f64::NEG_INFINITY);
}

#[test]
fn negative_zero_value_keeps_its_sign() {
    assert_eq!(ok("a.b -0 1").value.to_bits(), (-0.0f64).to_bits());
}

#[test]
fn names_are_normalized() {
    let p = ok("a..b 1 2");
    assert_eq!(p.name, "a.b");
    assert!(p.name_changed);
    assert_eq!(ok(".a.b. 1 2").name, "a.b");
    assert_eq!(err(b"... 1 2"), LineError::Name(NameError::Empty));
    assert_eq!(err(b"... 1 2").reason(), "empty_name");
    assert_eq!(
        err(b"a\x00b 1 2"),
        LineError::Name(NameError::ControlChar(0))
    );
    assert_eq!(err(b"a\x7fb 1 2").reason(), "control_char");
    let long = format!("{} 1 2", "a".repeat(sumi_model::name::MAX_NAME_BYTES + 1));
    assert_eq!(err(long.as_bytes()).reason(), "name_too_long");
}

#[test]
fn invalid_utf8_anywhere_refuses_the_line() {
    assert_eq!(err(b"a\xffb 1 2"), LineError::InvalidUtf8(1));
    assert_eq!(err(b"a.b 1\xff 2"), LineError::InvalidUtf8(5));
    assert_eq!(err(b"a.b 1 2\xc2"), LineError::InvalidUtf8(7));
    // a lone continuation byte equal to NEL's second byte is not a space
    assert_eq!(err(b"a.b\x851 2"), LineError::InvalidUtf8(3));
    assert_eq!(err(b"a.b 1 2 \xe2\x80").reason(), "invalid_utf8");
}

#[test]
fn reasons_cover_the_documented_labels() {
    assert_eq!(LineError::LineTooLong(16384).reason(), "line_too_long");
    assert_eq!(LineError::InvalidValue.reason(), "invalid_value");
}

/// Whitespace Python splits on, for generated separators.
const SEPARATORS: &[&str] = &[" ", "  ", "\t", " \u{a0}", "\u{3000}", "\x1f", "\u{2009}"];

proptest::proptest! {
    #[test]
    fn formatted_points_parse_back_exactly(
        name in "[a-z0-9_-]{1,8}(\\.[a-z0-9_-]{1,8}){0,4}",
        value in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO | proptest::num::f64::INFINITE,
        exp_form in proptest::bool::ANY,
        ts in -100_000_000_000i64..100_000_000_000,
        seps in proptest::collection::vec(proptest::sample::select(SEPARATORS), 4),
    ) {
        // Rust prints the shortest text that reads back to the same bits; Python's
        // float() of that text gives the same bits (both round correctly).
        let v = if exp_form { format!("{value:e}") } else { format!("{value}") };
        let line = format!("{}{name}{}{v}{}{ts}{}", seps[0], seps[1], seps[2], seps[3]);
        let p = parse_line(line.as_bytes(), NOW).unwrap();
        proptest::prop_assert_eq!(p.name.as_ref(), name.as_str());
        proptest::prop_assert_eq!(p.value.to_bits(), value.to_bits());
        proptest::prop_assert_eq!(p.ts, if ts == -1 { NOW } else { ts });
    }

    #[test]
    fn no_input_panics(line in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let _ = parse_line(&line, NOW);
    }
}

/// Every line the one-pass parser takes gets the general parser's answer, and the
/// usual lines do take it. Lines are drawn from pieces that matter to either parser:
/// ASCII and non-ASCII spaces, dots, tags, control bytes, numbers of every shape.
#[test]
fn plain_lines_parse_as_the_general_parser_does() {
    const PIECES: [&str; 30] = [
        "a",
        "host7",
        ".",
        "..",
        ";",
        "x=y",
        " ",
        "  ",
        "\t",
        "\r",
        "\u{a0}",
        "\u{2003}",
        "\u{1}",
        "\u{7f}",
        "é",
        "-1",
        "12",
        "1.5",
        "1e3",
        "nan",
        "inf",
        "_",
        "+",
        "1_000",
        "-",
        "1700000000",
        "0.25",
        "-1.0",
        "1234567890123456",
        "٣",
    ];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let mut taken = 0;
    for _ in 0..200_000 {
        let mut line = String::new();
        // mostly three fields, so that many lines get past the split
        for f in 0..3 + usize::from(next(8) == 0) {
            if f > 0 || next(4) == 0 {
                line.push_str(PIECES[6 + next(5)].trim_end_matches('\u{1}'));
            }
            for _ in 0..1 + next(3) {
                // usually a piece that suits the field (name pieces, then numbers)
                let piece = match (next(4), f) {
                    (0, _) => next(PIECES.len()),
                    (_, 0) => [0, 1, 2, 4, 5, 14][next(6)],
                    _ => 15 + next(14),
                };
                line.push_str(PIECES[piece]);
            }
        }
        if next(4) == 0 {
            line.push_str(PIECES[6 + next(4)]);
        }
        if let Some(p) = parse_plain(line.as_bytes(), NOW) {
            taken += 1;
            let g = parse_general(line.as_bytes(), NOW);
            assert_eq!(g.as_ref(), Ok(&p), "{line:?}");
            assert!(matches!(p.name, Cow::Borrowed(_)));
        }
    }
    assert!(taken > 500, "only {taken} lines took the one-pass parser");
    for line in [
        "host00042.disk.sda.write_bytes 123456789 1700000000",
        "  a.b.c 1.25 -1\r",
        "a 2.5e3 1700000000",
    ] {
        let p = parse_plain(line.as_bytes(), NOW).unwrap_or_else(|| panic!("{line:?}"));
        assert_eq!(Ok(p), parse_general(line.as_bytes(), NOW));
    }
}
