//! Combine functions on small hand-made series, for what the golden cases
//! (`functions/golden/combine.txt`, graphite-web's answers) do not show directly:
//! the deliberate differences, and graphite-web's quirks kept on purpose.

use crate::attime::TimeRange;
use crate::eval::{Evaluator, RequestContext};
use crate::functions::Registry;
use crate::memory::MemorySource;
use crate::series::TimeSeries;

const NOW: i64 = 1_700_000_000;

fn source() -> MemorySource {
    let mut m = MemorySource::new();
    let start = NOW - 600;
    m.add(
        "m.a.x",
        60,
        86_400,
        start,
        &[Some(1.0), Some(2.0), None, Some(4.0)],
    );
    m.add(
        "m.b.x",
        60,
        86_400,
        start,
        &[Some(10.0), None, None, Some(40.0)],
    );
    m.add("m.b.y", 120, 86_400, start, &[Some(100.0), Some(300.0)]);
    m
}

fn eval(target: &str) -> Result<Vec<TimeSeries>, crate::error::QueryError> {
    let src = source();
    let reg = Registry::standard();
    let ctx = RequestContext::new(
        TimeRange {
            from: NOW - 660,
            until: NOW - 360,
            now: NOW,
        },
        chrono_tz::UTC,
    );
    Evaluator::new(&src, &reg).evaluate_targets(&ctx, &[target])
}

fn names(series: &[TimeSeries]) -> Vec<&str> {
    series.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn map_series_regroups_and_reduce_series_reads_the_groups() {
    let mapped = eval("mapSeries(m.*.*,2)").unwrap();
    assert_eq!(names(&mapped), vec!["m.a.x", "m.b.x", "m.b.y"]);
    let reduced = eval("reduceSeries(mapSeries(m.b.*,1),'diffSeries',2,'y','x')").unwrap();
    assert_eq!(names(&reduced), vec!["m.b.reduce.diffSeries"]);
    // graphite-web 1.1.10: diffSeries(m.b.y, m.b.x) at the 120 s step
    assert_eq!(reduced[0].values, vec![Some(290.0), Some(40.0), None]);
    assert_eq!(reduced[0].step, 120);
    // a matcher without its series is refused (graphite-web fails on None)
    assert!(eval("reduceSeries(m.a.*,'diffSeries',2,'x','y')").is_err());
}

#[test]
fn group_by_node_calls_registered_functions_first() {
    let got = eval("groupByNode(m.*.*,1,'sum')").unwrap();
    assert_eq!(names(&got), vec!["a", "b"]);
    // `sum` is sumSeries here, so the tag says "sum"; `avg` is averageSeries: "average"
    assert_eq!(got[1].tags.get("aggregatedBy"), Some("sum"));
    let got = eval("groupByNode(m.*.*,1,'avg')").unwrap();
    assert_eq!(got[1].tags.get("aggregatedBy"), Some("average"));
    assert_eq!(got[1].path_expression, "averageSeries(m.*.*)");
    assert!(eval("groupByNode(m.*.*,1,'nope')").is_err());
}

#[test]
fn as_percent_by_nodes_without_any_alignment_is_refused() {
    // m.a has no total and nothing was aligned before it: graphite-web fails
    // (UnboundLocalError); sumi refuses the request
    assert!(eval("asPercent(m.*.x,m.b.y,1)").is_err());
    // once a group total was aligned, the missing ones reuse its interval (as
    // graphite-web 1.1.10 answers)
    let got = eval("asPercent(m.a.x,m.b.*,1)").unwrap();
    assert_eq!(
        names(&got),
        vec![
            "asPercent(m.a.x,MISSING)",
            "asPercent(MISSING,sumSeries(m.b.*))"
        ]
    );
    assert_eq!((got[0].step, got[0].values.len()), (120, 5));
    assert_eq!((got[1].step, got[1].values.len()), (120, 3));
    assert!(got.iter().all(|s| s.values.iter().all(Option::is_none)));
}

#[test]
fn weighted_average_without_nodes_keeps_the_last_pair() {
    // every series has the empty key: only the last pair's product is summed, over the
    // sum of all weights (graphite-web's behaviour, kept)
    let got = eval("weightedAverage(m.*.x,m.*.x)").unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "weightedAverage(m.*.x, m.*.x, )");
    // graphite-web 1.1.10: 10*10 / (1 + 10), null, null, 40*40 / (4 + 40), null
    assert_eq!(got[0].values[0], Some(9.090909090909092));
    assert_eq!(got[0].values[3], Some(36.36363636363637));
    assert_eq!(got[0].values.len(), 5);
}
