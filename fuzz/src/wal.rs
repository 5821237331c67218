//! Fuzz target for the WAL reader (`sumi_store::wal::read_segment`: record framing,
//! CRC, payload decoding, as replay reads a segment on open).
//!
//! The first byte of [`wal_segment`]'s input picks what the rest becomes:
//! - `0`: the whole segment file, header included;
//! - `1`: the records after a valid header;
//! - `2`: payloads after a valid header, each framed with its right length and CRC
//!   (lengths taken from the input), so that decoding is reached past the CRC;
//! - otherwise: points built from the input, encoded here from `docs/format/wal.md`
//!   (not with the store's encoder), in records, the segment cut at an input-chosen
//!   byte.
//!
//! Accepted outcomes, anything else panics:
//! - every read: a bad header reads no record; a problem in the records lies inside
//!   the file, after the header, and cutting the file there (as replay does) reads the
//!   same points again with no problem; error messages are not empty;
//! - the encoded segments: exactly the points of the records wholly before the cut,
//!   bit for bit, and a problem if and only if the cut falls inside a record.

use crate::Input;
use sumi_store::wal::{read_segment, SegmentError, WalPoint};

const MAGIC: &[u8; 8] = b"SUMIWAL\0";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 16;
/// Slots are within ±2^56 (`docs/format/wal.md`).
const SLOT_LIMIT: i64 = 1 << 56;

/// One input.
pub fn wal_segment(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        check_read(data);
        return;
    };
    match mode {
        0 => check_read(rest),
        1 => {
            let mut seg = header();
            seg.extend_from_slice(rest);
            check_read(&seg);
        }
        2 => {
            let mut seg = header();
            let mut input = rest;
            while let Some((&n, tail)) = input.split_first() {
                let n = usize::from(n).min(tail.len());
                frame(&tail[..n], &mut seg);
                input = &tail[n..];
            }
            check_read(&seg);
        }
        _ => round_trip(rest),
    }
}

/// The checks every read must pass; returns nothing, panics on a violation.
fn check_read(seg: &[u8]) {
    let read = read_segment(seg);
    assert!(
        read.records > 0 || read.points.is_empty(),
        "points without records"
    );
    let Some(problem) = read.problem else {
        return;
    };
    assert!(
        !problem.to_string().is_empty(),
        "empty message: {problem:?}"
    );
    match problem {
        SegmentError::Short | SegmentError::Magic | SegmentError::Version => {
            assert_eq!(read.records, 0, "records read behind a bad header");
            assert!(read.points.is_empty());
        }
        _ => {
            let at = usize::try_from(problem.offset()).expect("offset fits");
            assert!(
                (HEADER_LEN..seg.len()).contains(&at),
                "{problem} at {at}, file of {} bytes",
                seg.len()
            );
            let cut = read_segment(&seg[..at]);
            assert_eq!(cut.problem, None, "the cut segment still has a problem");
            assert_eq!(cut.records, read.records);
            assert_eq!(bits(&cut.points), bits(&read.points));
        }
    }
}

/// Points from the input in records, encoded, cut, read back.
fn round_trip(data: &[u8]) {
    let mut input = Input(data);
    let mut seg = header();
    let mut ends = Vec::new(); // (end of record, points so far)
    let mut points: Vec<WalPoint> = Vec::new();
    while !input.is_empty() && ends.len() < 64 {
        let n = usize::from(input.byte() % 32);
        let mut record = Vec::with_capacity(n);
        for _ in 0..n {
            let slot = (input.u64() as i64) % (SLOT_LIMIT + 1);
            record.push(WalPoint {
                series: input.u32(),
                level: input.byte() & 0x0f,
                slot,
                value: f64::from_bits(input.u64()),
            });
        }
        frame(&encode(&record), &mut seg);
        points.extend_from_slice(&record);
        ends.push((seg.len(), points.len()));
    }
    let whole = read_segment(&seg);
    assert_eq!(
        whole.problem, None,
        "an encoded segment reads with a problem"
    );
    assert_eq!(whole.records, ends.len() as u64);
    assert_eq!(bits(&whole.points), bits(&points), "points changed");

    let cut = HEADER_LEN + usize::from(input.byte()) * 97 % (seg.len() - HEADER_LEN + 1);
    let read = read_segment(&seg[..cut]);
    // record ends grow: the whole records are a prefix
    let records = ends.iter().take_while(|(end, _)| *end <= cut).count();
    let n = records.checked_sub(1).map_or(0, |i| ends[i].1);
    let at_boundary = cut == HEADER_LEN || ends.iter().any(|(end, _)| *end == cut);
    assert_eq!(
        read.problem.is_none(),
        at_boundary,
        "cut at {cut}: {read:?}"
    );
    assert_eq!(read.records, records as u64);
    assert_eq!(bits(&read.points), bits(&points[..n]), "cut at {cut}");
    check_read(&seg[..cut]);
}

fn header() -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&[0; 4]);
    h
}

/// `[len: u32][crc32c: u32][payload]`.
fn frame(payload: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(payload.len()).expect("small payload");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// A kind-1 payload: count, then per point series, packed slot delta and level, value.
fn encode(points: &[WalPoint]) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut out = vec![1];
    varint(&mut out, points.len() as u64);
    let mut prev = 0i64;
    for p in points {
        varint(&mut out, u64::from(p.series));
        let delta = p.slot.wrapping_sub(prev);
        let zigzag = ((delta << 1) ^ (delta >> 63)) as u64;
        varint(&mut out, zigzag << 4 | u64::from(p.level));
        out.extend_from_slice(&p.value.to_bits().to_le_bytes());
        prev = p.slot;
    }
    out
}

/// Points compared bit for bit (NaN payloads, -0.0).
fn bits(points: &[WalPoint]) -> Vec<(u32, u8, i64, u64)> {
    points
        .iter()
        .map(|p| (p.series, p.level, p.slot, p.value.to_bits()))
        .collect()
}

/// Seed inputs for `corpus/wal_segment/`, by file name: an input of each mode, so that
/// the smoke run starts from records that decode (see `tests/corpus.rs`).
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let record: Vec<WalPoint> = (0..5u32)
        .map(|i| WalPoint {
            series: i * 300,
            level: (i % 2) as u8,
            slot: 1_700_000_000 + i64::from(i / 2) * 10,
            value: f64::from(i) * 0.25 - 0.5,
        })
        .collect();
    let (p1, p2) = (encode(&record), encode(&record[..1]));
    let mut seg = header();
    frame(&p1, &mut seg);
    frame(&p2, &mut seg);
    let torn = &seg[..seg.len() - 3];
    let mut payloads = vec![2, p1.len() as u8];
    payloads.extend_from_slice(&p1);
    payloads.push(p2.len() as u8);
    payloads.extend_from_slice(&p2);
    // mode 3: two records (2 points, 1 point), the rest of the input zeros
    let mut round = vec![3, 2];
    round.extend((0u8..40).map(|b| b.wrapping_mul(37)));
    round.push(1);
    round.extend_from_slice(&(-1.5f64).to_bits().to_le_bytes());
    vec![
        ("segment", [&[0u8][..], &seg[..]].concat()),
        ("torn_tail", [&[0u8][..], torn].concat()),
        ("records", [&[1u8][..], &seg[HEADER_LEN..]].concat()),
        ("payloads", payloads),
        ("round_trip", round),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_pass_and_the_segment_reads_whole() {
        for (_, seed) in seeds() {
            wal_segment(&seed);
        }
        let seeds = seeds();
        let read = read_segment(&seeds[0].1[1..]);
        assert_eq!(read.problem, None);
        assert_eq!((read.records, read.points.len()), (2, 6));
        let torn = read_segment(&seeds[1].1[1..]);
        assert!(matches!(torn.problem, Some(SegmentError::PastEnd { .. })));
        assert_eq!((torn.records, torn.points.len()), (1, 5));
    }

    #[test]
    fn every_flipped_bit_and_cut_of_a_segment_passes() {
        let (_, seg) = seeds().swap_remove(0);
        for i in 0..seg.len() {
            for bit in 0..8 {
                let mut m = seg.clone();
                m[i] ^= 1 << bit;
                wal_segment(&m);
            }
            wal_segment(&seg[..i]);
        }
    }
}
