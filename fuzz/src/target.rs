//! Fuzz target for Graphite target expressions: [`target_expr`] parses the input (as
//! UTF-8, invalid bytes replaced) with `sumi_query::grammar` and evaluates it against a
//! small in-memory source.
//!
//! Accepted outcomes, anything else panics:
//! - parsed: the canonical spelling of the tree parses strictly to the same tree and
//!   prints the same again; strict parsing succeeds exactly when nothing but white
//!   space trails the expression, and then gives the same tree; evaluation returns
//!   series or one of the request errors (`UnknownFunction`, `InvalidTemplate`,
//!   `NotSeries`, `TemplateNumber`, `InvalidParams`, `Unsupported`, a function refusing
//!   its input) — never a storage error;
//! - refused: a `ParseError` whose position lies within the text, and strict parsing
//!   refuses too.

use std::sync::OnceLock;

use sumi_query::grammar::{parse, parse_strict};
use sumi_query::memory::MemorySource;
use sumi_query::{Evaluator, QueryError, Registry, RequestContext, TimeRange};

const NOW: i64 = 1_700_000_000;

fn source() -> &'static MemorySource {
    static SOURCE: OnceLock<MemorySource> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let mut m = MemorySource::new();
        for path in [
            "a.b",
            "a.b.c",
            "a.d",
            "servers.web01.cpu",
            "servers.db01.cpu",
            "1.2",
            "x=y",
        ] {
            let values: Vec<Option<f64>> = (0..10).map(|i| (i != 3).then_some(i as f64)).collect();
            m.add(path, 60, 86_400, NOW - 600, &values);
        }
        m
    })
}

/// One target expression.
pub fn target_expr(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let expanded_len = sumi_query::py::expandtabs(&text).chars().count();
    match parse(&text) {
        Ok(parsed) => {
            assert!(parsed.consumed <= expanded_len, "consumed past the end");
            let printed = parsed.expr.to_string();
            let again = parse_strict(&printed).unwrap_or_else(|e| {
                panic!("canonical spelling {printed:?} of {text:?} fails: {e}")
            });
            assert_eq!(again, parsed.expr, "{text:?} printed as {printed:?}");
            assert_eq!(
                again.to_string(),
                printed,
                "printing is not stable for {text:?}"
            );
            match parse_strict(&text) {
                Ok(strict) => {
                    assert!(
                        !parsed.trailing,
                        "strict accepted trailing text in {text:?}"
                    );
                    assert_eq!(strict, parsed.expr);
                }
                Err(e) => assert!(
                    parsed.trailing,
                    "strict refused {text:?} without trailing text: {e}"
                ),
            }
            evaluate(&text);
        }
        Err(e) => {
            assert!(
                e.position <= expanded_len,
                "error position {} past the end",
                e.position
            );
            assert!(!e.to_string().is_empty());
            assert!(
                parse_strict(&text).is_err(),
                "strict accepted what lenient refused: {text:?}"
            );
        }
    }
}

fn evaluate(text: &str) {
    let range = TimeRange {
        from: NOW - 600,
        until: NOW,
        now: NOW,
    };
    let ctx = RequestContext::new(range, chrono_tz::Tz::UTC);
    let registry = Registry::standard();
    match Evaluator::new(source(), &registry).evaluate_targets(&ctx, &[text]) {
        Ok(series) => {
            for s in &series {
                // a window or bootstrap reaching past the retention can leave a series
                // starting after its end, as in graphite-web; it then shows no point
                assert!(
                    s.step > 0 && (s.start <= s.end || s.datapoints().next().is_none()),
                    "bad series {s:?}"
                );
            }
        }
        Err(
            QueryError::UnknownFunction { .. }
            | QueryError::InvalidTemplate { .. }
            | QueryError::NotSeries { .. }
            | QueryError::TemplateNumber { .. }
            | QueryError::InvalidParams { .. }
            | QueryError::Function { input: true, .. }
            | QueryError::Unsupported(_),
        ) => {}
        Err(other) => panic!("unexpected error for {text:?}: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass() {
        for seed in [
            &b"sumSeries(servers.*.cpu)"[..],
            b"a.b | f(1, 'x', k=None)",
            b"template(a.$1, 'b')",
            b"template($n, n=5)",
            b"f(x=1)",
            b"(",
            b"",
            b"\xff\xfe",
            b"f(1\t, \"a\\\"b\")",
        ] {
            target_expr(seed);
        }
    }
}
