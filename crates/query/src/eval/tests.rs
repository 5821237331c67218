//! Evaluation tests on generated series in a [`MemorySource`].

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::functions::{DefaultValue, FunctionDef, Param, ParamType};
use crate::memory::MemorySource;
use crate::source::{FetchedSeries, FindNode, SourceError};
use sumi_model::glob::PathPattern;

const NOW: i64 = 1_700_000_000;

fn ctx() -> RequestContext {
    RequestContext::new(
        TimeRange {
            from: NOW - 600,
            until: NOW,
            now: NOW,
        },
        Tz::UTC,
    )
}

/// Ten-minute windows of minutely data: `servers.{web01,web02,db01}.cpu` and
/// `servers.web01.disk.{read,write}`; values are the slot index times a per-series
/// factor, with a gap in web02.
fn source() -> MemorySource {
    let mut m = MemorySource::new();
    let start = NOW - 600 + 60 - (NOW % 60);
    let series = [
        ("servers.web01.cpu", 1.0),
        ("servers.web02.cpu", 2.0),
        ("servers.db01.cpu", 3.0),
        ("servers.web01.disk.read", 10.0),
        ("servers.web01.disk.write", 20.0),
    ];
    for (path, factor) in series {
        let values: Vec<Option<f64>> = (0..10)
            .map(|i| (path != "servers.web02.cpu" || i != 4).then_some(i as f64 * factor))
            .collect();
        m.add(path, 60, 86_400, start, &values);
    }
    m
}

fn names(series: &[TimeSeries]) -> Vec<&str> {
    series.iter().map(|s| s.name.as_str()).collect()
}

fn eval(targets: &[&str]) -> Result<Vec<TimeSeries>, QueryError> {
    let src = source();
    let reg = Registry::empty();
    Evaluator::new(&src, &reg).evaluate_targets(&ctx(), targets)
}

#[test]
fn a_path_gives_its_leaves_sorted_by_name() {
    let got = eval(&["servers.*.cpu"]).unwrap();
    assert_eq!(
        names(&got),
        vec!["servers.db01.cpu", "servers.web01.cpu", "servers.web02.cpu"]
    );
    let s = &got[2];
    assert_eq!(s.path_expression, "servers.*.cpu");
    assert_eq!(
        s.tags.iter().collect::<Vec<_>>(),
        vec![("name", "servers.web02.cpu")]
    );
    assert_eq!(s.step, 60);
    assert_eq!(s.values.len(), 10);
    assert_eq!(s.values[4], None);
    assert_eq!(s.values[5], Some(10.0));
    assert_eq!(s.start % 60, 0);
    assert_eq!(s.end, s.start + 600);
}

#[test]
fn targets_are_concatenated_in_order() {
    let got = eval(&[
        "servers.web01.disk.*",
        "",
        "  ",
        "servers.db01.cpu",
        "nothing.here",
    ])
    .unwrap();
    assert_eq!(
        names(&got),
        vec![
            "servers.web01.disk.read",
            "servers.web01.disk.write",
            "servers.db01.cpu"
        ]
    );
}

#[test]
fn braces_and_branches() {
    // branches are not series; the same leaf reached twice appears once
    let got = eval(&["servers.{web01,web01,db01}.*"]).unwrap();
    assert_eq!(names(&got), vec!["servers.db01.cpu", "servers.web01.cpu"]);
}

#[test]
fn x_files_factor_comes_from_the_request() {
    let src = source();
    let reg = Registry::empty();
    let mut c = ctx();
    c.x_files_factor = 0.75;
    let got = Evaluator::new(&src, &reg)
        .evaluate_targets(&c, &["servers.web01.cpu"])
        .unwrap();
    assert_eq!(got[0].x_files_factor, 0.75);
}

#[test]
fn templates_substitute_in_graphite_order() {
    let got = eval(&["template(servers.$1.cpu, 'web01')"]).unwrap();
    assert_eq!(names(&got), vec!["servers.web01.cpu"]);
    let got = eval(&["template(servers.$host.$what, host='web01', what='disk.read')"]).unwrap();
    assert_eq!(names(&got), vec!["servers.web01.disk.read"]);
    // request parameters override the template's own values
    let src = source();
    let reg = Registry::empty();
    let mut c = ctx();
    c.template = vec![("host".into(), "db01".into())];
    let got = Evaluator::new(&src, &reg)
        .evaluate_targets(&c, &["template(servers.$host.cpu, host='web01')"])
        .unwrap();
    assert_eq!(names(&got), vec!["servers.db01.cpu"]);
}

#[test]
fn constants_are_dropped_when_falsy_and_refused_otherwise() {
    assert!(eval(&["template($n, n=0)"]).unwrap().is_empty());
    let err = eval(&["template($n, n=5)"]).unwrap_err();
    assert!(
        matches!(&err, QueryError::NotSeries { what, .. } if what == "an integer"),
        "{err}"
    );
    assert!(err.is_input_error());
}

#[test]
fn graphite_lenient_parsing_by_default_strict_on_request() {
    // graphite-web reads "servers.db01.cpu junk" as the path and ignores the rest
    let got = eval(&["servers.db01.cpu junk"]).unwrap();
    assert_eq!(names(&got), vec!["servers.db01.cpu"]);
    let src = source();
    let reg = Registry::empty();
    let mut c = ctx();
    c.strict = true;
    let err = Evaluator::new(&src, &reg)
        .evaluate_targets(&c, &["servers.db01.cpu junk"])
        .unwrap_err();
    assert!(matches!(err, QueryError::Parse(_)));
    assert!(err.is_input_error());
}

#[test]
fn errors_for_unknown_functions_and_bad_templates() {
    let err = eval(&["noSuchFunction(servers.*.cpu)"]).unwrap_err();
    assert_eq!(err.to_string(), "unknown function \"noSuchFunction\"");
    assert!(err.is_input_error());
    let err = eval(&["template(servers.$1.cpu, web01)"]).unwrap_err();
    assert!(matches!(err, QueryError::InvalidTemplate { .. }), "{err}");
    let err = eval(&["(bad"]).unwrap_err();
    assert!(matches!(err, QueryError::Parse(_)));
}

/// Counts calls, and can answer one path twice.
struct Counting {
    inner: MemorySource,
    fetches: AtomicUsize,
    duplicate: Option<FetchedSeries>,
}

impl SeriesSource for Counting {
    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        self.inner.find(pattern)
    }

    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let mut out = self.inner.fetch(paths, from, until, now)?;
        if let Some(d) = &self.duplicate {
            out.push(d.clone());
        }
        Ok(out)
    }
}

#[test]
fn one_fetch_for_all_targets() {
    let src = Counting {
        inner: source(),
        fetches: AtomicUsize::new(0),
        duplicate: None,
    };
    let reg = Registry::empty();
    let got = Evaluator::new(&src, &reg)
        .evaluate_targets(
            &ctx(),
            &["servers.web*.cpu", "servers.db01.cpu", "servers.web*.cpu"],
        )
        .unwrap();
    assert_eq!(got.len(), 5);
    assert_eq!(src.fetches.load(Ordering::SeqCst), 1);
}

#[test]
fn duplicate_answers_keep_the_most_complete() {
    let base = source();
    let fetched = base
        .fetch(&["servers.web02.cpu".to_string()], NOW - 600, NOW, NOW)
        .unwrap()
        .remove(0);
    let mut fuller = fetched.clone();
    fuller.values[4] = Some(99.0);
    let src = Counting {
        inner: base,
        fetches: AtomicUsize::new(0),
        duplicate: Some(fuller),
    };
    let reg = Registry::empty();
    let got = Evaluator::new(&src, &reg)
        .evaluate_targets(&ctx(), &["servers.web02.cpu"])
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].values[4], Some(99.0));
}

fn identity(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let mut out = Vec::new();
    for v in inv.args.take(0) {
        if let Value::SeriesList(s) = v {
            out.extend(s);
        }
    }
    Ok(Value::SeriesList(out))
}

/// `shifted(seriesList, seconds)`: evaluates its first argument again one window
/// earlier, as timeShift does.
fn shifted(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let by = inv.args.int(1).unwrap_or(0);
    let earlier = ctx.with_interval(ctx.from - by, ctx.until - by);
    session.eval_arg(&earlier, &inv.raw_args[0], inv.replacements)
}

/// `label(seriesList, text, by=...)`: renames every series (tests keyword arguments).
fn label(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let text = inv.args.str(1).unwrap_or_default().to_string();
    let suffix = match inv.args.get(2) {
        Some(Value::SeriesList(s)) => format!("+{}", s.len()),
        _ => String::new(),
    };
    let Some(Value::SeriesList(mut series)) = inv.args.take(0).pop() else {
        return Ok(Value::SeriesList(Vec::new()));
    };
    for s in &mut series {
        s.name = format!("{text}{suffix}");
    }
    Ok(Value::SeriesList(series))
}

static IDENTITY_PARAMS: [Param; 1] = [Param::new("seriesLists", ParamType::SeriesList)
    .required()
    .multiple()];
static SHIFTED_PARAMS: [Param; 2] = [
    Param::new("seriesList", ParamType::SeriesList).required(),
    Param::new("seconds", ParamType::Integer).default(DefaultValue::Int(60)),
];
static LABEL_PARAMS: [Param; 3] = [
    Param::new("seriesList", ParamType::SeriesList).required(),
    Param::new("text", ParamType::String).required(),
    Param::new("by", ParamType::SeriesList),
];

fn registry() -> Registry {
    let mut r = Registry::empty();
    r.register(FunctionDef {
        name: "group",
        description: "test function",
        group: "Combine",
        params: &IDENTITY_PARAMS,
        aggregator: false,
        run: identity,
    });
    r.register(FunctionDef {
        name: "shifted",
        description: "test function",
        group: "Transform",
        params: &SHIFTED_PARAMS,
        aggregator: false,
        run: shifted,
    });
    r.register(FunctionDef {
        name: "label",
        description: "test function",
        group: "Alias",
        params: &LABEL_PARAMS,
        aggregator: false,
        run: label,
    });
    r
}

#[test]
fn functions_receive_evaluated_arguments() {
    let src = source();
    let reg = registry();
    let e = Evaluator::new(&src, &reg);
    let got = e
        .evaluate_targets(&ctx(), &["group(servers.db01.cpu, servers.web01.disk.*)"])
        .unwrap();
    assert_eq!(
        names(&got),
        vec![
            "servers.db01.cpu",
            "servers.web01.disk.read",
            "servers.web01.disk.write"
        ]
    );
    // pipes are calls with the piped value first
    let got = e
        .evaluate_targets(&ctx(), &["servers.db01.cpu | label('x')"])
        .unwrap();
    assert_eq!(names(&got), vec!["x"]);
    // keyword arguments are evaluated too, paths included (graphite-web would give [])
    let got = e
        .evaluate_targets(&ctx(), &["label(servers.db01.cpu, 'y', by=servers.*.cpu)"])
        .unwrap();
    assert_eq!(names(&got), vec!["y+3"]);
}

#[test]
fn functions_can_evaluate_arguments_again_over_another_interval() {
    let src = source();
    let reg = registry();
    let got = Evaluator::new(&src, &reg)
        .evaluate_targets(&ctx(), &["shifted(servers.db01.cpu, 120)"])
        .unwrap();
    let plain = eval(&["servers.db01.cpu"]).unwrap();
    assert_eq!(got[0].start, plain[0].start - 120);
    assert_eq!(got[0].values[2], plain[0].values[0]);
    // and inside a template the substitutions still apply
    let got = Evaluator::new(&src, &reg)
        .evaluate_targets(&ctx(), &["template(shifted(servers.$1.cpu), 'db01')"])
        .unwrap();
    assert_eq!(got[0].start, plain[0].start - 60);
}

#[test]
fn arguments_are_checked_against_the_parameters() {
    let src = source();
    let reg = registry();
    let e = Evaluator::new(&src, &reg);
    let err = e
        .evaluate_targets(&ctx(), &["shifted(servers.db01.cpu, 1.5)"])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid parameters for shifted(): invalid \"integer\" value for parameter \"seconds\": 1.5"
    );
    let err = e
        .evaluate_targets(&ctx(), &["shifted(servers.db01.cpu, 1, 2)"])
        .unwrap_err();
    assert!(err.to_string().contains("too many parameters"), "{err}");
    let err = e
        .evaluate_targets(&ctx(), &["label(servers.db01.cpu, 'a', nope=1)"])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("unexpected keyword arguments: nope"),
        "{err}"
    );
    let err = e
        .evaluate_targets(&ctx(), &["shifted('text')"])
        .unwrap_err();
    assert!(err.to_string().contains("\"seriesList\""), "{err}");
    let err = e
        .evaluate_targets(&ctx(), &["label(servers.db01.cpu)"])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("missing required parameter \"text\""),
        "{err}"
    );
    // a string that reads as an integer is one, as Python's int() would have it
    assert!(e
        .evaluate_targets(&ctx(), &["shifted(servers.db01.cpu, '60')"])
        .is_ok());
}
