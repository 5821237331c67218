//! Fuzz target for the answer of a cluster peer's fetch
//! (`sumi_http::fanout::{encode_fetched, decode_fetched}`).
//!
//! [`fanout_fetch`]: the first byte picks the input's use. Even: the rest is an answer
//! as the asking node reads it from a peer. Accepted: the series re-encode to bytes that
//! decode to the same series, bit for bit. Refused: a `FetchDecodeError` with a message.
//! Odd: series built from the input (paths from a small alphabet, values as raw bits,
//! some slots empty) are encoded and must decode to exactly those series.
//!
//! The seed corpus is generated: [`seeds`].

use crate::Input;
use sumi_http::fanout::{decode_fetched, encode_fetched};
use sumi_query::source::FetchedSeries;

type Bits = Vec<(String, i64, i64, i64, Vec<Option<u64>>)>;

fn bits(series: &[FetchedSeries]) -> Bits {
    series
        .iter()
        .map(|s| {
            (
                s.path.clone(),
                s.start,
                s.end,
                s.step,
                s.values.iter().map(|v| v.map(f64::to_bits)).collect(),
            )
        })
        .collect()
}

pub fn fanout_fetch(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        match decode_fetched(rest) {
            Ok(series) => {
                let again = decode_fetched(&encode_fetched(&series))
                    .expect("a re-encoded fetch answer decodes");
                assert_eq!(bits(&again), bits(&series), "re-encoded series differ");
            }
            Err(e) => assert!(!e.to_string().is_empty(), "empty error message"),
        }
    } else {
        let mut input = Input(rest);
        let paths = ["a", "a.b", "c;t=v", "\u{e9}t\u{e9}", ""];
        let mut series = Vec::new();
        while !input.is_empty() && series.len() < 64 {
            let path = paths[usize::from(input.byte()) % paths.len()].to_string();
            let start = input.u64() as i64;
            let step = i64::from(input.byte());
            let n = usize::from(input.byte() % 40);
            let values = (0..n)
                .map(|_| (input.byte() % 3 != 0).then(|| f64::from_bits(input.u64())))
                .collect();
            series.push(FetchedSeries {
                path,
                start,
                end: start.wrapping_add(step.wrapping_mul(n as i64)),
                step,
                values,
            });
        }
        let back = decode_fetched(&encode_fetched(&series)).expect("an encoded answer decodes");
        assert_eq!(bits(&back), bits(&series), "series changed on the way");
    }
}

/// Seeds: an empty answer, two series (an empty slot, NaN, a tagged path), both modes.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let series = vec![
        FetchedSeries {
            path: "fan.h0.m0".into(),
            start: 1_700_000_000,
            end: 1_700_000_040,
            step: 10,
            values: vec![Some(1.5), None, Some(f64::NAN), Some(-2.0)],
        },
        FetchedSeries {
            path: "fant;dc=d0;host=h1".into(),
            start: 1_700_000_000,
            end: 1_700_000_060,
            step: 60,
            values: vec![Some(3.0)],
        },
    ];
    let mut answer = vec![0u8];
    answer.extend(encode_fetched(&series));
    let mut empty = vec![0u8];
    empty.extend(encode_fetched(&[]));
    let mut built = vec![1u8];
    built.extend_from_slice(&[
        1, 0, 0, 0, 0, 100, 0, 0, 0, 10, 5, 1, 0, 0, 0, 0, 0, 0, 240, 63, 0, 7,
    ]);
    vec![("answer", answer), ("empty", empty), ("built", built)]
}
