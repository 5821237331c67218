//! Grammar tests. The expected trees were produced by graphite-web 1.1.10's own
//! grammar (pyparsing 3) on the same inputs and written out here in a compact JSON
//! form (`dump`), so no Python is needed to run them.

use super::*;
use proptest::prelude::*;

/// The tree as compact JSON, in the shape the reference dump uses:
/// `["path",p]`, `["call",name,[args],[[k,v]]]`, `["template",inner,[args],[[k,v]]]`,
/// `["int","1"]`, `["float",repr]`, `["str",s]`, `["bool",b]`, `["none"]`, `["inf"]`.
pub(crate) fn dump(expr: &Expr) -> String {
    let mut out = String::new();
    dump_expr(&mut out, expr);
    out
}

fn dump_expr(out: &mut String, expr: &Expr) {
    match expr {
        Expr::Path(p) => {
            out.push_str("[\"path\",");
            json_str(out, p);
            out.push(']');
        }
        Expr::Call(c) => {
            out.push_str("[\"call\",");
            json_str(out, &c.name);
            out.push_str(",[");
            for (i, a) in c.args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                dump_arg(out, a);
            }
            out.push_str("],[");
            for (i, (k, v)) in c.kwargs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('[');
                json_str(out, k);
                out.push(',');
                dump_arg(out, v);
                out.push(']');
            }
            out.push_str("]]");
        }
        Expr::Template(t) => {
            out.push_str("[\"template\",");
            dump_expr(out, &t.inner);
            out.push_str(",[");
            for (i, a) in t.args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                dump_literal(out, a);
            }
            out.push_str("],[");
            for (i, (k, v)) in t.kwargs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('[');
                json_str(out, k);
                out.push(',');
                dump_literal(out, v);
                out.push(']');
            }
            out.push_str("]]");
        }
    }
}

fn dump_arg(out: &mut String, arg: &Arg) {
    match arg {
        Arg::Expr(e) => dump_expr(out, e),
        Arg::Literal(l) => dump_literal(out, l),
    }
}

fn dump_literal(out: &mut String, lit: &Literal) {
    match lit {
        Literal::Int(i) => out.push_str(&format!("[\"int\",\"{i}\"]")),
        Literal::Float(x) => {
            out.push_str("[\"float\",");
            json_str(out, &crate::py::float_repr(*x));
            out.push(']');
        }
        Literal::Str(s) => {
            out.push_str("[\"str\",");
            json_str(out, s);
            out.push(']');
        }
        Literal::Bool(b) => out.push_str(if *b {
            "[\"bool\",true]"
        } else {
            "[\"bool\",false]"
        }),
        Literal::None => out.push_str("[\"none\"]"),
        Literal::Inf => out.push_str("[\"inf\"]"),
    }
}

/// Python's `json.dumps` of a string (ASCII output).
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
}

fn parsed(s: &str) -> String {
    match parse(s) {
        Ok(p) => dump(&p.expr),
        Err(e) if e.too_deep => "DEEP".to_string(),
        Err(_) => "ERR".to_string(),
    }
}

/// (target, graphite-web's tree or ERR)
const CASES: &[(&str, &str)] = &include!("cases.in");

#[test]
fn same_trees_as_graphite_web() {
    let mut failures = Vec::new();
    for &(target, want) in CASES {
        let got = parsed(target);
        if got != want {
            failures.push(format!("{target:?}\n   got  {got}\n   want {want}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

fn round_trip(target: &str) {
    let Ok(first) = parse(target) else { return };
    let printed = first.expr.to_string();
    let second = parse_strict(&printed)
        .unwrap_or_else(|e| panic!("{target:?} printed as {printed:?}, which fails: {e}"));
    assert_eq!(first.expr, second, "{target:?} printed as {printed:?}");
    assert_eq!(
        second.to_string(),
        printed,
        "printing is stable for {target:?}"
    );
}

#[test]
fn round_trips() {
    for &(target, _) in CASES {
        round_trip(target);
    }
}

#[test]
fn canonical_spelling() {
    let print = |s: &str| parse(s).unwrap().expr.to_string();
    assert_eq!(
        print("sumSeries( a.b , c.{d,e} )"),
        "sumSeries(a.b,c.{d,e})"
    );
    assert_eq!(
        print("a.b | scale(2) | alias('x')"),
        "a.b|scale(2)|alias('x')"
    );
    assert_eq!(
        print("f(a, 1e5, -1.5E-3, 2.0, 1e400)"),
        "f(a,100000.0,-0.0015,2.0,1e999)"
    );
    assert_eq!(
        print("f(a, TRUE, none, INF, k=\"it's\")"),
        "f(a,true,None,inf,k=\"it's\")"
    );
    assert_eq!(print("a\\(b\\)"), "a\\(b\\)");
    assert_eq!(print("f(a\\=b)"), "f(a\\=b)");
    // found by fuzzing: an escape is all that keeps this argument from being a number
    assert_eq!(print("f(a, -1\\.5E-3)"), "f(a,-1\\.5E-3)");
    assert_eq!(print("template(a.$1, 'x')"), "template(a.$1,'x')");
    assert_eq!(print("template(f(a.$n), n=3)"), "template(f(a.$n),n=3)");
}

#[test]
fn integers_beyond_i64_become_floats() {
    // graphite-web keeps a Python int of any size; sumi reads it as the nearest float
    let p = parse("f(a, 99999999999999999999)").unwrap();
    assert_eq!(
        dump(&p.expr),
        r#"["call","f",[["path","a"],["float","1e+20"]],[]]"#
    );
}

#[test]
fn trailing_text_is_ignored_like_graphite() {
    let p = parse("sumSeries(a.b").unwrap();
    assert_eq!(p.expr, Expr::Path("sumSeries".into()));
    assert!(p.trailing);
    assert_eq!(p.consumed, 9);
    let p = parse("  a.b  ").unwrap();
    assert!(!p.trailing);
}

#[test]
fn strict_errors_say_where_and_what() {
    let e = parse_strict("sumSeries(a.b").unwrap_err();
    assert_eq!(e.position, 13);
    assert!(e.expected.contains(&"')'"), "{e}");
    assert_eq!(e.found, None);
    assert_eq!(
        e.to_string(),
        "invalid target \"sumSeries(a.b\": expected ',' or ')' at position 13, found the end of the target"
    );
    let e = parse_strict("f(x=1)").unwrap_err();
    assert!(
        e.to_string()
            .contains("a positional argument before keyword arguments at position 2"),
        "{e}"
    );
    let e = parse_strict("a.b c").unwrap_err();
    assert_eq!((e.position, e.found), (4, Some('c')));
    let e = parse_strict("(a").unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid target \"(a\": expected a metric path, a function call or template() at position 0, found '('"
    );
    let e = parse("").unwrap_err();
    assert_eq!((e.position, e.found), (0, None));
    let e = parse_strict("f('abc)").unwrap_err();
    assert!(e.expected.contains(&"a closing quote"), "{e}");
    assert!(parse_strict(" f( a )\n").is_ok());
}

#[test]
fn nesting_is_limited() {
    let deep = format!(
        "{}a{}",
        "f(".repeat(parser::MAX_DEPTH + 5),
        ")".repeat(parser::MAX_DEPTH + 5)
    );
    let e = parse(&deep).unwrap_err();
    assert!(e.too_deep);
    assert!(e.to_string().contains("nested deeper than"), "{e}");
    let ok = format!(
        "{}a{}",
        "f(".repeat(parser::MAX_DEPTH - 1),
        ")".repeat(parser::MAX_DEPTH - 1)
    );
    assert!(parse(&ok).is_ok());
}

#[test]
fn nested_templates_parse_in_linear_time() {
    // each failing template is re-read as a call; the call cache keeps that linear
    let n = 60;
    let s = format!("{}a{}", "template(f(".repeat(n), "),x=1,2)".repeat(n));
    let start = std::time::Instant::now();
    let _ = parse(&s);
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn raw_text_is_kept_for_calls() {
    let p = parse("seriesByTag('name=cpu',  'host=a')").unwrap();
    let Expr::Call(c) = p.expr else {
        panic!("not a call")
    };
    assert_eq!(c.raw.as_str(), "seriesByTag('name=cpu',  'host=a')");
    let p = parse("a.b |  seriesByTag( 'x=y' )").unwrap();
    let Expr::Call(c) = p.expr else {
        panic!("not a call")
    };
    assert!(c.piped);
    assert_eq!(c.raw.as_str(), "seriesByTag( 'x=y' )");
}

/// Generates target-like text: mostly grammar pieces, with some noise.
fn target_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("f(".to_string()),
        Just("sumSeries(".to_string()),
        Just("template(".to_string()),
        Just(")".to_string()),
        Just(",".to_string()),
        Just(", ".to_string()),
        Just("|".to_string()),
        Just(" | ".to_string()),
        Just("=".to_string()),
        Just("x=".to_string()),
        Just(".".to_string()),
        Just("{a,b}".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("a.b".to_string()),
        Just("web*".to_string()),
        Just("$1".to_string()),
        Just("1".to_string()),
        Just("-2.5".to_string()),
        Just("1e5".to_string()),
        Just("E-3".to_string()),
        Just("true".to_string()),
        Just("None".to_string()),
        Just("inf".to_string()),
        Just("'s'".to_string()),
        Just("\"d\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just("\\(".to_string()),
        Just("\t".to_string()),
        Just("\n".to_string()),
        "[ -~]{1,3}",
    ];
    proptest::collection::vec(piece, 0..16).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_ascii_never_panics(s in "[\\x00-\\x7f]{0,64}") {
        let _ = parse(&s);
        let _ = parse_strict(&s);
    }

    #[test]
    fn random_text_never_panics(s in "\\PC{0,32}") {
        let _ = parse(&s);
        let _ = parse_strict(&s);
    }

    #[test]
    fn target_like_text_round_trips(s in target_like()) {
        round_trip(&s);
    }
}

/// `["int","<digits>"]` of a Python int beyond `i64` as sumi reads it: the float
/// nearest to it (sumi's literals are `i64` or `f64`; Python's ints have no bound, and
/// its functions take them as numbers, so only the tree differs).
fn widen_big_ints(want: &str) -> String {
    const INT: &str = "[\"int\",\"";
    let mut out = String::with_capacity(want.len());
    let mut rest = want;
    while let Some(i) = rest.find(INT) {
        let (before, from) = rest.split_at(i);
        out.push_str(before);
        let digits_start = INT.len();
        let digits_len = from[digits_start..].find('"').unwrap_or(0);
        let digits = &from[digits_start..digits_start + digits_len];
        match (digits.parse::<i64>(), digits.parse::<f64>()) {
            (Err(_), Ok(x)) => {
                out.push_str("[\"float\",\"");
                out.push_str(&crate::py::float_repr(x));
            }
            _ => out.push_str(&from[..digits_start + digits_len]),
        }
        rest = &from[digits_start + digits_len..];
    }
    out.push_str(rest);
    out
}

/// The trees graphite-web 1.1.10's grammar makes of four thousand generated targets
/// (`tests/graphite-diff/reference_dump.py grammar`, run here; see `crate::reference`),
/// and each target that parses printed and read back.
#[test]
fn same_trees_as_graphite_web_on_generated_targets() {
    let text = crate::reference::dump("grammar");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text.lines() {
        let (hex, want) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("malformed reference line {line:?}"));
        let target = crate::reference::unhex(hex);
        count += 1;
        let got = parsed(&target);
        let want = widen_big_ints(want);
        if got != want && !(want.starts_with("EXC") || want == "DEEP") {
            failures.push(format!("{target:?}\n   got  {got}\n   want {want}"));
        }
        round_trip(&target);
    }
    assert!(
        failures.is_empty(),
        "{} of {count} differ:\n{}",
        failures.len(),
        failures
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
