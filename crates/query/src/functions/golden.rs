//! Golden tests of the function families against graphite-web 1.1.10's answers.
//!
//! `golden/dataset.txt` holds the series; each `golden/<family>.txt` holds cases
//! (`> target | from=... | until=... | target=...`) and, under each, graphite-web's
//! answer as `golden/capture.py` recorded it (one `=` line per series: name, tags,
//! first timestamp, step, values). This test loads the dataset into a [`MemorySource`]
//! (whisper's fetch rules, one archive per series, as capture.py creates the files),
//! evaluates every case with [`Registry::standard`] at the dataset's `now`, and
//! compares names, tags, timestamps and every value bit for bit (null with null).

use crate::attime::resolve_range;
use crate::eval::{Evaluator, RequestContext};
use crate::functions::Registry;
use crate::memory::MemorySource;
use crate::series::TimeSeries;

const FAMILIES: &[(&str, &str)] = &[
    ("calculate", include_str!("golden/calculate.txt")),
    ("filter", include_str!("golden/filter.txt")),
    ("sort", include_str!("golden/sort.txt")),
    ("alias", include_str!("golden/alias.txt")),
    ("graph", include_str!("golden/graph.txt")),
    ("special", include_str!("golden/special.txt")),
    ("combine", include_str!("golden/combine.txt")),
    ("transform", include_str!("golden/transform.txt")),
];

/// The dataset's `now` and its series in a memory source.
fn dataset() -> (i64, MemorySource) {
    let mut source = MemorySource::new();
    let mut now = 0;
    for line in include_str!("golden/dataset.txt").lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [] => {}
            [first, ..] if first.starts_with('#') => {}
            ["now", t] => now = t.parse().expect("now"),
            [name, step, retention, offset, values @ ..] => {
                let step: i64 = step.parse().expect("step");
                let offset: i64 = offset.parse().expect("offset");
                let values: Vec<Option<f64>> = values
                    .iter()
                    .map(|v| (*v != "_").then(|| v.parse().expect("value")))
                    .collect();
                source.add(
                    name,
                    step,
                    retention.parse().expect("retention"),
                    now + offset,
                    &values,
                );
            }
            other => panic!("bad dataset line {other:?}"),
        }
    }
    (now, source)
}

/// One expected series.
struct Expected {
    line: String,
}

struct Case {
    family: &'static str,
    text: String,
    expected: Vec<Expected>,
    error: bool,
}

fn cases() -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for (family, text) in FAMILIES {
        for line in text.lines() {
            if let Some(case) = line.strip_prefix("> ") {
                out.push(Case {
                    family,
                    text: case.to_string(),
                    expected: Vec::new(),
                    error: false,
                });
            } else if let Some(series) = line.strip_prefix("= ") {
                let case = out.last_mut().expect("an answer before any case");
                case.expected.push(Expected {
                    line: series.to_string(),
                });
            } else if line.starts_with("! ") {
                out.last_mut().expect("an answer before any case").error = true;
            }
        }
    }
    out
}

/// Python's `json.dumps` of a string (ASCII output, as graphite-web writes tags).
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A series in capture.py's line format.
fn render(s: &TimeSeries) -> String {
    let tags: Vec<String> = s
        .tags
        .iter()
        .map(|(k, v)| format!("{}: {}", json_string(k), json_string(v)))
        .collect();
    let points: Vec<(Option<f64>, i64)> = s.datapoints().collect();
    let first = points.first().map_or(0, |p| p.1);
    let step = if points.len() > 1 {
        points[1].1 - points[0].1
    } else {
        0
    };
    let values: Vec<String> = points
        .iter()
        .map(|(v, _)| match v {
            Some(x) if !x.is_nan() => crate::py::float_repr(*x),
            _ => "_".to_string(),
        })
        .collect();
    format!(
        "{}\t{{{}}}\t{first}\t{step}\t{}",
        s.name,
        tags.join(", "),
        values.join(" ")
    )
}

/// Evaluates a case (`target | key=value | ...`); `Err` when sumi refuses it.
fn evaluate(
    case: &str,
    now: i64,
    source: &MemorySource,
    registry: &Registry,
) -> Result<Vec<String>, String> {
    let mut parts = case.split(" | ");
    let mut targets = vec![parts.next().unwrap_or("").to_string()];
    let (mut from, mut until) = (None, None);
    for part in parts {
        match part.split_once('=') {
            Some(("from", v)) => from = Some(v.to_string()),
            Some(("until", v)) => until = Some(v.to_string()),
            Some(("target", v)) => targets.push(v.to_string()),
            _ => panic!("unknown option {part:?} in {case:?}"),
        }
    }
    let now_text = now.to_string();
    let range = resolve_range(
        from.as_deref(),
        until.as_deref(),
        Some(&now_text),
        chrono_tz::UTC,
        now,
    )
    .map_err(|e| e.to_string())?;
    let ctx = RequestContext::new(range, chrono_tz::UTC);
    let series = Evaluator::new(source, registry)
        .evaluate_targets(&ctx, &targets)
        .map_err(|e| e.to_string())?;
    Ok(series.iter().map(render).collect())
}

#[test]
fn functions_answer_like_graphite_web() {
    let (now, source) = dataset();
    let registry = Registry::standard();
    let all = cases();
    assert!(all.len() > 150, "only {} golden cases", all.len());
    let mut failures = Vec::new();
    for case in &all {
        let got = evaluate(&case.text, now, &source, &registry);
        let want: Vec<&str> = case.expected.iter().map(|e| e.line.as_str()).collect();
        match got {
            Err(e) if !case.error => failures.push(format!(
                "[{}] {}\n  sumi refused it: {e}",
                case.family, case.text
            )),
            Ok(lines) if case.error => failures.push(format!(
                "[{}] {}\n  graphite-web refused it, sumi answered {} series",
                case.family,
                case.text,
                lines.len()
            )),
            Ok(lines) if lines != want => {
                let mut msg = format!("[{}] {}", case.family, case.text);
                for i in 0..lines.len().max(want.len()) {
                    let (g, w) = (lines.get(i).map(String::as_str), want.get(i).copied());
                    if g != w {
                        msg.push_str(&format!(
                            "\n  series {i}:\n    graphite-web {}\n    sumi         {}",
                            w.unwrap_or("(none)"),
                            g.unwrap_or("(none)")
                        ));
                    }
                }
                failures.push(msg);
            }
            _ => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} golden cases differ:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}
