//! `Store::direct_writes` / `load_direct` and the dump format: a store loaded from
//! another's dump answers every read as the original does (both levels, after
//! flushes, rollups and later writes on both), and a dump cut short is an error.

mod common;

use common::*;
use sumi_model::ManualClock;
use sumi_store::transfer::{decode_dump, encode_dump_end, encode_dump_header, encode_dump_series};

const NOW: i64 = 1_800_000_000;

fn same_answers(a: &sumi_store::Store, b: &sumi_store::Store, names: &[String], now: i64) {
    for n in names {
        for from in [now - 3_000, now - 80_000] {
            let x = fetch_bits(a, n, from, now, now);
            let y = fetch_bits(b, n, from, now, now);
            assert_eq!(x, y, "{n} from {from}");
        }
    }
}

#[test]
fn a_loaded_copy_answers_as_the_original() {
    let (d1, d2) = (TempDir::new("transfer-a"), TempDir::new("transfer-b"));
    let clock = ManualClock::new(NOW);
    let a = open(&options(d1.path(), rules("10s:1h,1m:1d", "")), &clock);
    // the receiver's own rules differ: the copied config wins
    let b = open(&options(d2.path(), rules("1m:7d", "")), &clock);
    let mut pts = Vec::new();
    for i in 0..300i64 {
        pts.push(("a.x", NOW - 7_200 + i * 30, i as f64));
        pts.push(("a.y;t=1", NOW - 600 + i, -(i as f64)));
    }
    let names_pts: Vec<(&str, i64, f64)> = pts.clone();
    append(&a, &names_pts);
    a.run_maintenance().unwrap();
    // a second write over a flushed slot: the newest must win in the copy
    append(
        &a,
        &[("a.y;t=1", NOW - 10, 42.0), ("a.x", NOW - 7_200, 7.5)],
    );
    let names = a.series_names_where(|_| true);
    assert_eq!(names.len(), 2);
    let mut bytes = Vec::new();
    encode_dump_header(3, 77, &mut bytes);
    for n in &names {
        encode_dump_series(&a.direct_writes(n).unwrap(), &mut bytes);
    }
    encode_dump_end(names.len() as u64, &mut bytes);
    let (p, off, series) = decode_dump(&bytes).unwrap();
    assert_eq!((p, off, series.len()), (3, 77, 2));
    for s in &series {
        assert!(b.load_direct(s).unwrap() > 0);
    }
    same_answers(&a, &b, &names, NOW);
    // the same later writes on both: still the same (rollups computed alike)
    clock.set(NOW + 600);
    let later = [("a.x", NOW + 300, 1.25), ("a.y;t=1", NOW + 590, 3.0)];
    append(&a, &later);
    append(&b, &later);
    a.run_maintenance().unwrap();
    b.run_maintenance().unwrap();
    same_answers(&a, &b, &names, NOW + 600);
    let coarse = fetch_bits(&b, "a.x", NOW - 80_000, NOW + 600, NOW + 600).unwrap();
    assert!(coarse.3.iter().any(Option::is_some));
    // loading twice writes the same values
    for s in &series {
        b.load_direct(s).unwrap();
    }
    // cut short anywhere: an error, never a panic
    for cut in 0..bytes.len() {
        assert!(decode_dump(&bytes[..cut]).is_err(), "cut at {cut}");
    }
}
