//! Fuzz target for the cluster's log record (`sumi_cluster::record`).
//!
//! [`cluster_record`]: the first byte picks the input's use. Even: the rest is a record
//! as a storage node reads it from Kafka (either version), decoded into a batch that
//! already holds a point. Accepted: the batch grew by exactly the points the record
//! claims, and re-encoding those points with the record's arrival time, in both
//! versions, decodes to the same points (the bytes may differ: varints may be spelled
//! long, names repeated in full, prefixes shared less). `peek_arrival` reads the same
//! arrival time as the decoder from any accepted record. Refused: a `RecordError` with
//! a message, the batch as it was. Odd: points built from the input (names from a small
//! alphabet sharing prefixes and first UTF-8 bytes, timestamps as deltas or raw bits,
//! values as short decimals or raw bits) are encoded in version 1 (bit 1 of the first
//! byte set), 3 with the GrowthForecast flag (bit 2 set; with bit 3 also set, the
//! delete marker's flag instead) or 2, and must decode to exactly those points (and
//! flags), bit for bit. `is_delete_marker` agrees with the decoded flags, and a delete
//! marker built from names decodes to those names.
//!
//! The seed corpus is generated: [`seeds`].

use crate::Input;
use sumi_cluster::record::{
    decode_into, delete_marker, encode, encode_flagged, encode_version, is_delete_marker,
    peek_arrival, FLAG_DELETE, FLAG_GRAPH, RECORD_VERSIONS,
};
use sumi_model::Batch;

fn points(b: &Batch) -> Vec<(String, i64, u64)> {
    b.iter()
        .map(|(n, p)| (n.to_string(), p.ts, p.value.to_bits()))
        .collect()
}

pub fn cluster_record(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        decode_check(rest);
    } else {
        let version = if mode & 4 != 0 {
            3
        } else if mode & 2 != 0 {
            1
        } else {
            2
        };
        roundtrip(rest, version, mode & 8 != 0);
    }
}

fn decode_check(bytes: &[u8]) {
    let mut batch = Batch::new();
    batch.push("before", 1, 2.0);
    let before = points(&batch);
    let peeked = peek_arrival(bytes);
    match decode_into(bytes, &mut batch) {
        Ok(d) => {
            assert_eq!(peeked, Some(d.arrival), "peek_arrival vs decode_into");
            assert_eq!(
                is_delete_marker(bytes),
                d.flags & FLAG_DELETE != 0,
                "is_delete_marker vs the decoded flags"
            );
            assert_eq!(
                batch.len(),
                1 + d.points as usize,
                "points claimed vs pushed"
            );
            let mut mine = Batch::new();
            for (n, p) in batch.iter().skip(1) {
                mine.push(n, p.ts, p.value);
            }
            for version in RECORD_VERSIONS {
                let again = if version == 3 {
                    encode_flagged(&mine, d.arrival, d.flags)
                } else {
                    encode_version(&mine, d.arrival, version)
                };
                let mut back = Batch::new();
                let d2 = decode_into(&again, &mut back).expect("a re-encoded record decodes");
                assert_eq!(d2.arrival, d.arrival);
                assert_eq!(points(&back), points(&mine), "re-encoded points differ");
            }
        }
        Err(e) => {
            assert!(!e.to_string().is_empty(), "empty error message");
            assert_eq!(points(&batch), before, "batch touched on error");
        }
    }
}

fn roundtrip(data: &[u8], version: u8, delete: bool) {
    let mut input = Input(data);
    let arrival = input.u64() as i64;
    let mut batch = Batch::new();
    let names = [
        "a",
        "a.b",
        "a.bc",
        "c;t=v",
        "\u{e9}t\u{e9}",
        "\u{e8}t",
        "x.y.z",
        "x.y.\u{e9}",
    ];
    while !input.is_empty() && batch.len() < 512 {
        let name = names[usize::from(input.byte()) % names.len()];
        let ts = match input.byte() % 3 {
            0 => arrival.wrapping_add(i64::from(input.byte() as i8)),
            _ => input.u64() as i64,
        };
        let value = match input.byte() % 3 {
            0 => {
                f64::from(input.u32() as i32)
                    / [1.0, 10.0, 100.0, 1e3][usize::from(input.byte() % 4)]
            }
            _ => f64::from_bits(input.u64()),
        };
        batch.push(name, ts, value);
    }
    let flags = match (version, delete) {
        (3, true) => FLAG_DELETE,
        (3, false) => FLAG_GRAPH,
        _ => 0,
    };
    let bytes = if version == 3 {
        encode_flagged(&batch, arrival, flags)
    } else {
        encode_version(&batch, arrival, version)
    };
    assert_eq!(bytes[0], version);
    let mut out = Batch::new();
    let d = decode_into(&bytes, &mut out).expect("an encoded record decodes");
    assert_eq!(d.arrival, arrival);
    assert_eq!(d.flags, flags);
    assert_eq!(d.points as usize, batch.len());
    assert_eq!(points(&out), points(&batch), "points changed on the way");
    if delete {
        let globs: Vec<String> = batch.iter().map(|(n, _)| n.to_string()).collect();
        let marker = delete_marker(&globs, arrival);
        assert!(is_delete_marker(&marker));
        let mut out = Batch::new();
        let d = decode_into(&marker, &mut out).expect("a delete marker decodes");
        assert_eq!(d.flags, FLAG_DELETE);
        let back: Vec<String> = out.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(back, globs, "globs changed on the way");
    }
}

/// Seeds: an empty record, a few points (repeated names, shared prefixes, tags, NaN,
/// decimals) in both versions, and both modes.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut b = Batch::new();
    b.push("load.s001", 1_700_000_000, 1.5);
    b.push("load.s001", 1_700_000_010, f64::NAN);
    b.push("load.s002", 1_700_000_010, 8e9);
    b.push("cpu;host=a", 1_699_999_000, -3.0);
    b.push("cpu;host=\u{e9}", 1_699_999_000, 12.34);
    b.push("cpu;host=\u{e8}", 1_699_999_000, -0.0);
    let mut decode = vec![0u8];
    decode.extend(encode_version(&b, 1_700_000_005, 1));
    let mut decode2 = vec![0u8];
    decode2.extend(encode(&b, 1_700_000_005));
    let mut decode3 = vec![0u8];
    decode3.extend(encode_flagged(&b, 1_700_000_005, FLAG_GRAPH));
    let mut marker = vec![0u8];
    marker.extend(delete_marker(
        &["gone.**".to_string(), "cpu;host=a".to_string()],
        1_700_000_005,
    ));
    let mut empty = vec![0u8];
    empty.extend(encode_version(&Batch::new(), 0, 1));
    let mut empty2 = vec![0u8];
    empty2.extend(encode(&Batch::new(), 0));
    let body = [
        0, 0, 5, 1, 2, 3, 4, 5, 6, 7, 8, 2, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 3,
        0, 0, 0, 1, 0, 1, 6, 3, 0, 5, 7,
    ];
    let mut build = vec![1u8];
    build.extend_from_slice(&1_700_000_000u64.to_le_bytes());
    build.extend_from_slice(&body);
    let mut build1 = vec![3u8];
    build1.extend_from_slice(&1_700_000_000u64.to_le_bytes());
    build1.extend_from_slice(&body);
    let mut build3 = vec![5u8];
    build3.extend_from_slice(&1_700_000_000u64.to_le_bytes());
    build3.extend_from_slice(&body);
    let mut build_marker = vec![13u8];
    build_marker.extend_from_slice(&1_700_000_000u64.to_le_bytes());
    build_marker.extend_from_slice(&body);
    vec![
        ("record", decode),
        ("record_v2", decode2),
        ("record_v3", decode3),
        ("delete_marker", marker),
        ("empty", empty),
        ("empty_v2", empty2),
        ("built", build),
        ("built_v1", build1),
        ("built_v3", build3),
        ("built_marker", build_marker),
    ]
}

/// [`cluster_spill`]: the first byte picks the input's use. Even: the rest is a spill
/// file as the ingest node reads it back (`sumi_cluster::spill::decode_entry`).
/// Accepted: re-encoding the entry gives back exactly the bytes read. Refused: a
/// `SpillDecodeError` with a message. Odd: an entry built from the input (records of
/// raw bytes) is encoded and must decode to exactly that entry.
pub fn cluster_spill(data: &[u8]) {
    use sumi_cluster::spill::{decode_entry, encode_entry, SpillEntry};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        match decode_entry(rest) {
            Ok(entry) => assert_eq!(encode_entry(&entry), rest, "re-encoded entry differs"),
            Err(e) => assert!(!e.to_string().is_empty(), "empty error message"),
        }
    } else {
        let mut input = Input(rest);
        let points = input.u32();
        let mut records = Vec::new();
        while !input.is_empty() && records.len() < 64 {
            let partition = input.u32();
            let n = usize::from(input.byte());
            records.push((partition, (0..n).map(|_| input.byte()).collect()));
        }
        let entry = SpillEntry { points, records };
        let back = decode_entry(&encode_entry(&entry)).expect("an encoded entry decodes");
        assert_eq!(back, entry, "entry changed on the way");
    }
}

/// Seeds for `cluster_spill`: an entry of two records, an empty one, a built one.
pub fn spill_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use sumi_cluster::spill::{encode_entry, SpillEntry};
    let mut b = Batch::new();
    b.push("load.s001", 1_700_000_000, 1.5);
    let entry = SpillEntry {
        points: 2,
        records: vec![
            (3, encode(&b, 1_700_000_001)),
            (0, encode(&b, 1_700_000_002)),
        ],
    };
    let mut spilled = vec![0u8];
    spilled.extend(encode_entry(&entry));
    let mut empty = vec![0u8];
    empty.extend(encode_entry(&SpillEntry {
        points: 0,
        records: vec![],
    }));
    let built = vec![1u8, 5, 0, 0, 0, 2, 0, 0, 0, 3, 7, 8, 9];
    vec![("spilled", spilled), ("empty", empty), ("built", built)]
}

/// [`cluster_state_files`]: the first byte picks the file. Even: the rest is a storage
/// node's offsets file (`<data_dir>/cluster/offsets`, read by
/// `sumi_cluster::consumer::read_offsets`); odd: its gaps file (`cluster/gaps`,
/// `sumi_cluster::log_gaps::read_gaps`). Both are read for the topic `t`. Refused: an
/// error with a message. Accepted: what was read, written back by the node's own
/// writer and read again, is the same.
pub fn cluster_state_files(data: &[u8]) {
    use sumi_cluster::consumer::{read_offsets, write_offsets};
    use sumi_cluster::log_gaps::{add_gap, read_gaps};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let dir = crate::scratch_base().join(format!(
        "sumi-fuzz-cluster-state-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("file");
    let again = dir.join("again");
    let _ = std::fs::remove_file(&again);
    std::fs::write(&path, rest).expect("scratch file");
    if mode % 2 == 0 {
        match read_offsets(&path, "t") {
            Ok(offsets) => {
                write_offsets(&again, "t", &offsets).expect("writing offsets");
                let back = read_offsets(&again, "t").expect("written offsets read");
                assert_eq!(back, offsets, "offsets changed on the way");
            }
            Err(e) => assert!(!e.to_string().is_empty(), "empty error message"),
        }
    } else {
        match read_gaps(&path, "t") {
            Ok(gaps) => {
                for &p in &gaps {
                    add_gap(&again, "t", p).expect("listing a gap");
                }
                let back = read_gaps(&again, "t").expect("written gaps read");
                assert_eq!(back, gaps, "gaps changed on the way");
            }
            Err(e) => assert!(!e.to_string().is_empty(), "empty error message"),
        }
    }
}
