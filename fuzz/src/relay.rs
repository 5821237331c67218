//! Fuzz targets for `sumi relay`'s readers: its queue segments
//! (`sumi_relay::queue`) and its rule files (`sumi_relay::rules`,
//! `sumi_relay::aggregate`).
//!
//! `relay_queue`: the first byte of the input picks what the rest becomes:
//! - `0`: a whole segment file, opened as a queue (torn tails cut, damage counted)
//!   and drained;
//! - otherwise: payloads from the input framed as records here (from the format in
//!   `sumi_relay::queue`'s doc, not with its writer), the segment cut at an
//!   input-chosen byte, then scanned, opened and drained.
//!
//! Accepted outcomes, anything else panics: scanning finds records inside the bytes,
//! one after another, and stops at the first damage; the queue delivers exactly the
//! payloads of the records scanning found, in order; for the built segments, exactly
//! the records wholly before the cut, and damage if and only if the cut falls inside
//! a record.
//!
//! `relay_rules`: the first byte picks `relay-rules.conf` (even) or
//! `aggregation-rules.conf` (odd); the rest is the file's text. Parsing gives rules
//! or an error message that is not empty; rules then place or rewrite every line of
//! the input taken as a metric name without panicking, and the aggregator computes.

use std::time::Duration;

use sumi_relay::aggregate::{parse_aggregation_rules, Aggregator};
use sumi_relay::hashing::Destination;
use sumi_relay::queue::{
    scan_segment, Batch, DiskQueue, QueueOptions, Scanned, RECORD_HEADER, SEGMENT_MAGIC,
};
use sumi_relay::rules::{parse_relay_rules, route};

pub fn relay_queue(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode == 0 {
        let mut seg = SEGMENT_MAGIC.to_vec();
        seg.extend_from_slice(rest);
        let want: Vec<u8> = scanned_payloads(&seg);
        assert_eq!(drain_as_queue(&seg), want);
        return;
    }
    // Records built here, cut somewhere.
    let (cut_byte, mut input) = match rest.split_first() {
        Some((&c, r)) => (c, r),
        None => (0, rest),
    };
    let mut seg = SEGMENT_MAGIC.to_vec();
    let mut ends = Vec::new();
    let mut payloads = Vec::new();
    while let Some((&n, tail)) = input.split_first() {
        let n = usize::from(n).min(tail.len());
        let payload = &tail[..n];
        seg.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        seg.extend_from_slice(&1u32.to_le_bytes());
        seg.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        seg.extend_from_slice(payload);
        ends.push(seg.len());
        payloads.push(payload.to_vec());
        input = &tail[n..];
    }
    let cut =
        SEGMENT_MAGIC.len() + (usize::from(cut_byte) * (seg.len() - SEGMENT_MAGIC.len()) / 255);
    let seg = &seg[..cut];
    let whole = ends.iter().filter(|&&e| e <= cut).count();
    let scanned = scan_segment(seg, 0);
    let records = scanned
        .iter()
        .filter(|s| matches!(s, Scanned::Record { .. }))
        .count();
    assert_eq!(records, whole, "records wholly before the cut");
    let damaged = scanned.iter().any(|s| matches!(s, Scanned::Damage { .. }));
    let inside = cut != SEGMENT_MAGIC.len() && !ends.contains(&cut);
    assert_eq!(damaged, inside, "damage iff the cut is inside a record");
    let want: Vec<u8> = payloads[..whole].concat();
    assert_eq!(drain_as_queue(seg), want);
}

fn scanned_payloads(seg: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = SEGMENT_MAGIC.len() as u64;
    for s in scan_segment(seg, 0) {
        match s {
            Scanned::Record { offset, len, .. } => {
                assert_eq!(offset, next, "records follow one another");
                let start = offset as usize + RECORD_HEADER;
                assert!(start + len <= seg.len(), "record inside the bytes");
                out.extend_from_slice(&seg[start..start + len]);
                next = (start + len) as u64;
            }
            Scanned::Damage { offset, reason } => {
                assert!(offset as usize <= seg.len() && !reason.is_empty());
            }
        }
    }
    out
}

/// Writes `seg` as the only segment of a fresh queue, opens it and reads it all.
fn drain_as_queue(seg: &[u8]) -> Vec<u8> {
    // A memory file system when there is one: the target creates and removes a
    // directory per input.
    let dir = crate::scratch_base().join(format!(
        "sumi-fuzz-relay-queue-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join(format!("{:020}.seg", 1)), seg).expect("write segment");
    let q = DiskQueue::open(&dir, QueueOptions::default()).expect("open queue");
    let mut out = Vec::new();
    let mut b = Batch::default();
    for _ in 0..10_000 {
        q.read(1 << 16, Duration::ZERO, &mut b).expect("read queue");
        if b.data.is_empty() && b.points == 0 {
            break;
        }
        out.extend_from_slice(&b.data);
        q.ack(&b);
    }
    drop(q);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

pub fn relay_rules(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let names: Vec<&str> = text.lines().map(str::trim).collect();
    if mode % 2 == 0 {
        match parse_relay_rules(&text) {
            Ok(rules) => {
                let known: Vec<Destination> = rules
                    .iter()
                    .flat_map(|r| r.destinations.iter().cloned())
                    .collect();
                let mut out = Vec::new();
                for n in &names {
                    route(&rules, &known, n.as_bytes(), &mut out);
                    assert!(out.iter().all(|&i| i < known.len()));
                }
            }
            Err(e) => assert!(!e.is_empty()),
        }
    } else {
        match parse_aggregation_rules(&text) {
            Ok(rules) => {
                let mut agg = Aggregator::new(rules);
                for (i, n) in names.iter().enumerate() {
                    agg.input(n, i as i64 * 7 - 50, i as f64, 1000);
                }
                agg.compute(2000, true, |m, _, v| {
                    assert!(!m.is_empty() || v.is_finite() || v.is_nan())
                });
            }
            Err(e) => assert!(!e.is_empty()),
        }
    }
}

/// Seeds of `relay_queue`: a few valid segments.
pub fn queue_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut whole = vec![0u8];
    for p in [
        &b"a.b 1.0 1700000000\n"[..],
        b"c 2.5 1700000010\nd -1.0 1700000020\n",
    ] {
        whole.extend_from_slice(&(p.len() as u32).to_le_bytes());
        whole.extend_from_slice(&1u32.to_le_bytes());
        whole.extend_from_slice(&crc32c::crc32c(p).to_le_bytes());
        whole.extend_from_slice(p);
    }
    let built = [&[1u8, 200, 5][..], b"hello", &[3], b"abc", &[0]].concat();
    vec![("whole-segment", whole), ("built-and-cut", built)]
}
