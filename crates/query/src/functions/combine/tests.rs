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

/// graphite-web 1.1.10's `SeriesFunctions` entries for these families (Combine,
/// Transform, and consolidateBy/setXFilesFactor): name, group, whether it is an
/// aggregator, and its parameters (`name:type`, `!` required, `*` multiple), as
/// printed from graphite-web's tables.
const GRAPHITE_WEB: &[(&str, &str, bool, &str)] = &[
    ("aggregate", "Combine", false, "seriesList:seriesList!,func:aggFunc!,xFilesFactor:float"),
    ("aggregateSeriesLists", "Combine", false, "seriesListFirstPos:seriesList!,seriesListSecondPos:seriesList!,func:aggFunc!,xFilesFactor:float"),
    ("aggregateWithWildcards", "Combine", false, "seriesList:seriesList!,func:aggFunc!,position:node*"),
    ("applyByNode", "Combine", false, "seriesList:seriesList!,nodeNum:node!,templateFunction:string!,newName:string"),
    ("asPercent", "Combine", true, "seriesList:seriesList!,total:any,nodes:nodeOrTag*"),
    ("averageSeries", "Combine", true, "seriesLists:seriesList!*"),
    ("averageSeriesWithWildcards", "Combine", true, "seriesList:seriesList!,position:node*"),
    ("avg", "Combine", true, "seriesLists:seriesList!*"),
    ("countSeries", "Combine", true, "seriesLists:seriesList*"),
    ("diffSeries", "Combine", true, "seriesLists:seriesList!*"),
    ("diffSeriesLists", "Combine", true, "seriesListFirstPos:seriesList!,seriesListSecondPos:seriesList!"),
    ("divideSeries", "Combine", false, "dividendSeriesList:seriesList!,divisorSeries:seriesList!"),
    ("divideSeriesLists", "Combine", false, "dividendSeriesList:seriesList!,divisorSeriesList:seriesList!"),
    ("group", "Combine", false, "seriesLists:seriesList*"),
    ("groupByNode", "Combine", false, "seriesList:seriesList!,nodeNum:nodeOrTag!,callback:aggOrSeriesFunc"),
    ("groupByNodes", "Combine", false, "seriesList:seriesList!,callback:aggOrSeriesFunc!,nodes:nodeOrTag*"),
    ("groupByTags", "Combine", false, "seriesList:seriesList!,callback:aggOrSeriesFunc!,tags:tag!*"),
    ("map", "Combine", false, "seriesList:seriesList!,mapNodes:nodeOrTag!*"),
    ("mapSeries", "Combine", false, "seriesList:seriesList!,mapNodes:nodeOrTag!*"),
    ("maxSeries", "Combine", true, "seriesLists:seriesList!*"),
    ("minSeries", "Combine", true, "seriesLists:seriesList!*"),
    ("multiplySeries", "Combine", true, "seriesLists:seriesList!*"),
    ("multiplySeriesLists", "Combine", true, "seriesListFirstPos:seriesList!,seriesListSecondPos:seriesList!"),
    ("multiplySeriesWithWildcards", "Combine", true, "seriesList:seriesList!,position:node*"),
    ("pct", "Combine", true, "seriesList:seriesList!,total:any,nodes:nodeOrTag*"),
    ("percentileOfSeries", "Combine", false, "seriesList:seriesList!,n:float!,interpolate:boolean"),
    ("powSeries", "Combine", true, "seriesList:seriesList!*"),
    ("rangeOfSeries", "Combine", true, "seriesLists:seriesList!*"),
    ("reduce", "Combine", false, "seriesLists:seriesLists!,reduceFunction:string!,reduceNode:node!,reduceMatchers:string!*"),
    ("reduceSeries", "Combine", false, "seriesLists:seriesLists!,reduceFunction:string!,reduceNode:node!,reduceMatchers:string!*"),
    ("stddevSeries", "Combine", true, "seriesLists:seriesList!*"),
    ("sum", "Combine", true, "seriesLists:seriesList!*"),
    ("sumSeries", "Combine", true, "seriesLists:seriesList!*"),
    ("sumSeriesLists", "Combine", true, "seriesListFirstPos:seriesList!,seriesListSecondPos:seriesList!"),
    ("sumSeriesWithWildcards", "Combine", true, "seriesList:seriesList!,position:node*"),
    ("weightedAverage", "Combine", false, "seriesListAvg:seriesList!,seriesListWeight:seriesList!,nodes:nodeOrTag*"),
    ("absolute", "Transform", false, "seriesList:seriesList!"),
    ("add", "Transform", false, "seriesList:seriesList!,constant:float!"),
    ("compressPeriodicGaps", "Transform", false, "seriesList:seriesList!"),
    ("consolidateBy", "Special", false, "seriesList:seriesList!,consolidationFunc:string!"),
    ("delay", "Transform", false, "seriesList:seriesList!,steps:integer!"),
    ("derivative", "Transform", false, "seriesList:seriesList!"),
    ("exp", "Transform", false, "seriesList:seriesList!"),
    ("hitcount", "Transform", false, "seriesList:seriesList!,intervalString:interval!,alignToInterval:boolean"),
    ("integral", "Transform", false, "seriesList:seriesList!"),
    ("integralByInterval", "Transform", false, "seriesList:seriesList!,intervalUnit:string!"),
    ("interpolate", "Transform", false, "seriesList:seriesList!,limit:intOrInf"),
    ("invert", "Transform", false, "seriesList:seriesList!"),
    ("isNonNull", "Transform", false, "seriesList:seriesList!"),
    ("keepLastValue", "Transform", false, "seriesList:seriesList!,limit:intOrInf"),
    ("log", "Transform", false, "seriesList:seriesList!,base:integer"),
    ("logit", "Transform", false, "seriesList:seriesList!"),
    ("minMax", "Transform", false, "seriesList:seriesList!"),
    ("nonNegativeDerivative", "Transform", false, "seriesList:seriesList!,maxValue:float,minValue:float"),
    ("offset", "Transform", false, "seriesList:seriesList!,factor:float!"),
    ("offsetToZero", "Transform", false, "seriesList:seriesList!"),
    ("perSecond", "Transform", false, "seriesList:seriesList!,maxValue:float,minValue:float"),
    ("pow", "Transform", false, "seriesList:seriesList!,factor:float!"),
    ("round", "Transform", false, "seriesList:seriesList!,precision:integer"),
    ("scale", "Transform", false, "seriesList:seriesList!,factor:float!"),
    ("scaleToSeconds", "Transform", false, "seriesList:seriesList!,seconds:float!"),
    ("setXFilesFactor", "Special", false, "seriesList:seriesList!,xFilesFactor:float!"),
    ("sigmoid", "Transform", false, "seriesList:seriesList!"),
    ("smartSummarize", "Transform", false, "seriesList:seriesList!,intervalString:interval!,func:aggFunc,alignTo:string"),
    ("squareRoot", "Transform", false, "seriesList:seriesList!"),
    ("summarize", "Transform", false, "seriesList:seriesList!,intervalString:interval!,func:aggFunc,alignToFrom:boolean"),
    ("timeShift", "Transform", false, "seriesList:seriesList!,timeShift:interval!,resetEnd:boolean,alignDst:boolean"),
    ("timeSlice", "Transform", false, "seriesList:seriesList!,startSliceAt:date!,endSliceAt:date"),
    ("timeStack", "Transform", false, "seriesList:seriesList!,timeShiftUnit:interval,timeShiftStart:integer,timeShiftEnd:integer"),
    ("transformNull", "Transform", false, "seriesList:seriesList!,default:float,referenceSeries:seriesList"),
    ("xFilesFactor", "Special", false, "seriesList:seriesList!,xFilesFactor:float!"),
];

#[test]
fn the_table_matches_graphite_web() {
    let reg = Registry::standard();
    for &(name, group, aggregator, params) in GRAPHITE_WEB {
        let def = reg
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not registered"));
        assert_eq!(def.group, group, "{name}");
        assert_eq!(def.aggregator, aggregator, "{name}");
        let ours: Vec<String> = def
            .params
            .iter()
            .map(|p| {
                format!(
                    "{}:{}{}{}",
                    p.name,
                    p.ty.name(),
                    if p.required { "!" } else { "" },
                    if p.multiple { "*" } else { "" }
                )
            })
            .collect();
        assert_eq!(ours.join(","), params, "{name}");
        assert!(!def.description.is_empty(), "{name}");
    }
}
