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

#[test]
fn time_slice_reads_relative_bounds_against_the_request_now() {
    // graphite-web reads '-9min' against the wall clock; sumi against the request's now
    let got = eval("timeSlice(t.counter,'-9min','-8min')").unwrap();
    let (start, end) = (NOW - 540, NOW - 480);
    assert_eq!(got[0].name, format!("timeSlice(t.counter, {start}, {end})"));
    assert_eq!(
        got[0].tags.get("timeSliceStart"),
        Some(start.to_string().as_str())
    );
    // the window counts from the request's from (NOW - 660), one step per value
    let kept: Vec<bool> = got[0].values.iter().map(Option::is_some).collect();
    let want: Vec<bool> = (0..got[0].values.len() as i64)
        .map(|i| {
            let t = NOW - 660 + i * 60;
            t >= start
                && t <= end
                && [Some(90.0), None, Some(98.0), Some(3.0)][i as usize].is_some()
        })
        .collect();
    assert_eq!(kept, want);
}

#[test]
fn align_dst_changes_nothing_in_utc() {
    let plain = eval("timeShift(t.counter,'2min')").unwrap();
    let aligned = eval("timeShift(t.counter,'2min',true,true)").unwrap();
    assert_eq!(plain, aligned);
    assert_eq!(plain[0].name, "timeShift(t.counter, \"-2min\")");
}
