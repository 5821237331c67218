//! Transform functions on small hand-made series, for what the golden cases
//! (`functions/golden/transform.txt`, graphite-web's answers) cannot show: the
//! deliberate differences where graphite-web fails, and quirks kept on purpose.

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
        "t.big",
        60,
        86_400,
        start,
        &[Some(1.0), Some(800.0), Some(-800.0), None],
    );
    m.add(
        "t.counter",
        60,
        86_400,
        start,
        &[Some(90.0), None, Some(98.0), Some(3.0)],
    );
    m
}

fn eval(target: &str) -> Result<Vec<TimeSeries>, crate::error::QueryError> {
    let src = source();
    let reg = Registry::standard();
    let ctx = RequestContext::new(
        TimeRange {
            from: NOW - 660,
            until: NOW - 420,
            now: NOW,
        },
        chrono_tz::UTC,
    );
    Evaluator::new(&src, &reg).evaluate_targets(&ctx, &[target])
}

#[test]
fn exp_and_sigmoid_saturate_where_python_overflows() {
    let got = eval("exp(t.big)").unwrap();
    assert_eq!(got[0].values[1], Some(f64::INFINITY));
    assert_eq!(got[0].values[2], Some(0.0));
    let got = eval("sigmoid(t.big)").unwrap();
    assert_eq!(got[0].values[2], Some(0.0));
    assert_eq!(got[0].values[1], Some(1.0));
}

#[test]
fn counters_with_max_value_skip_gaps() {
    // graphite-web fails comparing None with maxValue; a gap is a gap here
    let got = eval("nonNegativeDerivative(t.counter,100)").unwrap();
    // 90, gap, 98 (no previous), 3 (wrapped at 100: 100 + 1 + 3 - 98)
    assert_eq!(got[0].values, vec![None, None, None, Some(6.0)]);
    let got = eval("perSecond(t.counter,100)").unwrap();
    assert_eq!(got[0].values[3], Some(0.1));
}

#[test]
fn delay_by_zero_keeps_the_values() {
    let got = eval("delay(t.counter,0)").unwrap();
    assert_eq!(got[0].name, "delay(t.counter,0)");
    assert_eq!(got[0].values, vec![Some(90.0), None, Some(98.0), Some(3.0)]);
    let got = eval("delay(t.counter,-1)").unwrap();
    assert_eq!(got[0].values, vec![None, Some(98.0), Some(3.0), None]);
}

#[test]
fn intervals_must_be_positive() {
    assert!(eval("summarize(t.counter,'-1min')").is_err());
    assert!(eval("hitcount(t.counter,'0s')").is_err());
    assert!(eval("integralByInterval(t.counter,'0s')").is_err());
    assert!(eval("log(t.counter,1)").is_err());
}
