//! Fuzz target for a partition dump, as a storage node taking over a partition reads
//! it from a replica (`sumi_store::transfer`).
//!
//! [`partition_dump`]: the input is a dump. Accepted: the series re-encode to a dump
//! that reads back to the same series, bit for bit. Refused: a `DumpError` with a
//! message (a dump cut short is refused: it has no end marker).
//!
//! The seed corpus is generated: [`seeds`].

use std::sync::Arc;

use sumi_model::{AggMethod, Retention, SeriesConfig};
use sumi_store::transfer::{
    decode_dump, encode_dump_end, encode_dump_header, encode_dump_series, DirectSeries,
};

type Bits = Vec<(String, String, u8, u32, Vec<Vec<(i64, u64)>>)>;

fn bits(series: &[DirectSeries]) -> Bits {
    series
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.config.retention.to_string(),
                s.config.method.code(),
                s.config.xff.to_bits(),
                s.levels
                    .iter()
                    .map(|l| l.iter().map(|&(t, v)| (t, v.to_bits())).collect())
                    .collect(),
            )
        })
        .collect()
}

fn encode(partition: u32, offset: i64, series: &[DirectSeries]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_dump_header(partition, offset, &mut out);
    for s in series {
        encode_dump_series(s, &mut out);
    }
    encode_dump_end(series.len() as u64, &mut out);
    out
}

pub fn partition_dump(data: &[u8]) {
    match decode_dump(data) {
        Ok((p, offset, series)) => {
            let (p2, offset2, again) =
                decode_dump(&encode(p, offset, &series)).expect("a re-encoded dump reads back");
            assert_eq!((p2, offset2), (p, offset), "header changed");
            assert_eq!(bits(&again), bits(&series), "re-encoded series differ");
        }
        Err(e) => assert!(!e.to_string().is_empty(), "empty error message"),
    }
}

/// Seeds: an empty dump, a dump of two series (two levels, NaN, a tagged name).
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let cfg = |spec: &str, method| SeriesConfig {
        retention: Arc::new(Retention::parse(spec).expect("a retention")),
        method,
        xff: 0.5,
    };
    let series = vec![
        DirectSeries {
            name: "load.s001".into(),
            config: cfg("1s:2h,1m:1d", AggMethod::Average),
            levels: vec![
                vec![(1_700_000_000, 1.5), (1_700_000_001, f64::NAN)],
                vec![(1_699_990_000, -2.0)],
            ],
        },
        DirectSeries {
            name: "cpu;host=a;dc=x".into(),
            config: cfg("60s:1d", AggMethod::Max),
            levels: vec![vec![(1_700_000_040, 3.0)]],
        },
    ];
    vec![
        ("dump", encode(3, 1234, &series)),
        ("empty", encode(0, 0, &[])),
    ]
}
