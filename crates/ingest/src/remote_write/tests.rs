//! Remote-write decoding on requests built with a small protobuf writer (below);
//! `tests/remote_write.rs` checks a request written by Google's own protobuf library.

use super::*;

/// A protobuf writer for tests: fields appended in the order given.
#[derive(Default, Clone)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(mut self, mut v: u64) -> Pb {
        loop {
            let b = (v & 0x7F) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(b);
                return self;
            }
            self.0.push(b | 0x80);
        }
    }
    fn key(self, field: u64, wire: u8) -> Pb {
        self.varint(field << 3 | u64::from(wire))
    }
    fn bytes(self, field: u64, b: &[u8]) -> Pb {
        let mut p = self.key(field, 2).varint(b.len() as u64);
        p.0.extend_from_slice(b);
        p
    }
    fn double(self, field: u64, v: f64) -> Pb {
        let mut p = self.key(field, 1);
        p.0.extend_from_slice(&v.to_bits().to_le_bytes());
        p
    }
    fn int64(self, field: u64, v: i64) -> Pb {
        self.key(field, 0).varint(v as u64)
    }
}

fn label(name: &str, value: &str) -> Vec<u8> {
    Pb::default()
        .bytes(1, name.as_bytes())
        .bytes(2, value.as_bytes())
        .0
}

fn sample(value: f64, ts_ms: i64) -> Vec<u8> {
    Pb::default().double(1, value).int64(2, ts_ms).0
}

fn series(labels: &[(&str, &str)], samples: &[(f64, i64)]) -> Vec<u8> {
    let mut p = Pb::default();
    for (k, v) in labels {
        p = p.bytes(1, &label(k, v));
    }
    for (v, t) in samples {
        p = p.bytes(2, &sample(*v, *t));
    }
    p.0
}

fn request(all: &[Vec<u8>]) -> Vec<u8> {
    let mut p = Pb::default();
    for s in all {
        p = p.bytes(1, s);
    }
    p.0
}

fn snappy(msg: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new().compress_vec(msg).unwrap()
}

/// Points as `(name, ts, value)`.
type Points = Vec<(String, i64, f64)>;

fn decode(msg: &[u8]) -> Result<(Points, WriteOutcome), WriteError> {
    let mut batch = Batch::new();
    let out = decode_remote_write(&snappy(msg), &mut batch, &WriteLimits::default())?;
    assert_eq!(out.points, batch.len());
    let pts = batch
        .iter()
        .map(|(n, p)| (n.to_string(), p.ts, p.value))
        .collect();
    Ok((pts, out))
}

fn p(name: &str, ts: i64, value: f64) -> (String, i64, f64) {
    (name.to_string(), ts, value)
}

#[test]
fn samples_become_tagged_points() {
    let msg = request(&[
        series(
            &[
                ("__name__", "node_cpu_seconds_total"),
                ("cpu", "0"),
                ("instance", "web01:9100"),
                ("job", "node"),
                ("mode", "idle"),
            ],
            &[(1234.5, 1_700_000_000_123), (1240.0, 1_700_000_015_999)],
        ),
        series(
            &[("__name__", "up"), ("job", "node")],
            &[(1.0, 1_700_000_000_000)],
        ),
        series(&[("__name__", "before_1970")], &[(2.0, -1500)]),
    ]);
    let (pts, out) = decode(&msg).unwrap();
    let name = "node_cpu_seconds_total;cpu=0;instance=web01:9100;job=node;mode=idle";
    assert_eq!(
        pts,
        vec![
            p(name, 1_700_000_000, 1234.5),
            p(name, 1_700_000_015, 1240.0),
            p("up;job=node", 1_700_000_000, 1.0),
            // milliseconds are cut toward zero, as carbon's int() cuts seconds
            p("before_1970", -1, 2.0),
        ]
    );
    assert_eq!((out.series, out.counts.received), (3, 4));
    assert_eq!(out.counts.rejected.iter().sum::<u64>(), 0);
}

#[test]
fn stale_markers_and_nans_are_dropped_and_counted() {
    let stale = f64::from_bits(STALE_NAN_BITS);
    assert!(stale.is_nan());
    let msg = request(&[series(
        &[("__name__", "m")],
        &[
            (1.0, 1000),
            (stale, 2000),
            (f64::NAN, 3000),
            (f64::INFINITY, 4000),
            (-0.0, 5000),
        ],
    )]);
    let (pts, out) = decode(&msg).unwrap();
    assert_eq!(pts.len(), 3);
    assert_eq!(pts[1], p("m", 4, f64::INFINITY));
    assert_eq!(pts[2].2.to_bits(), (-0.0f64).to_bits());
    assert_eq!(out.counts.received, 5);
    assert_eq!(out.counts.rejected(Reason::StaleMarker), 1);
    assert_eq!(out.counts.rejected(Reason::NanValue), 1);
}

#[test]
fn unknown_fields_exemplars_metadata_and_histograms() {
    // A series with its samples before its labels, an exemplar, a native histogram,
    // unknown fields of every wire type; then metadata at the top level.
    let exemplar = Pb::default()
        .bytes(1, &label("trace_id", "abc"))
        .double(2, 1.0)
        .int64(3, 5)
        .0;
    let mut s = Pb::default()
        .bytes(2, &sample(7.0, 9000))
        .bytes(3, &exemplar)
        .bytes(4, b"\x08\x01")
        .bytes(4, b"\x08\x02")
        .key(15, 0)
        .varint(300)
        .key(16, 5)
        .0;
    s.extend_from_slice(&[1, 2, 3, 4]); // field 16's fixed32
    let mut s = Pb(s).key(17, 1).0;
    s.extend_from_slice(&[0; 8]); // field 17's fixed64
    let s = Pb(s)
        .bytes(1, &label("__name__", "late_labels"))
        .bytes(1, &label("k", "v"))
        .0;
    let metadata = Pb::default()
        .int64(1, 1)
        .bytes(2, b"late_labels")
        .bytes(4, b"help")
        .0;
    let msg = Pb::default().bytes(1, &s).bytes(3, &metadata).0;
    let (pts, out) = decode(&msg).unwrap();
    assert_eq!(pts, vec![p("late_labels;k=v", 9, 7.0)]);
    assert_eq!(out.counts.rejected(Reason::HistogramSample), 2);
    assert_eq!(out.counts.received, 3);
}

#[test]
fn proto3_defaults() {
    // a sample with no timestamp and no value: (0, 0); a label with no value
    let s = Pb::default()
        .bytes(1, &label("__name__", "zero"))
        .bytes(1, &Pb::default().bytes(1, b"empty").0)
        .bytes(2, b"")
        .0;
    let (pts, _) = decode(&request(&[s])).unwrap();
    assert_eq!(pts, vec![p("zero", 0, 0.0)]);
}

#[test]
fn series_without_a_usable_name_lose_only_their_samples() {
    let bad_utf8 = Pb::default()
        .bytes(1, &Pb::default().bytes(1, b"__name__").bytes(2, b"\xff").0)
        .bytes(2, &sample(1.0, 1000))
        .0;
    let msg = request(&[
        series(&[("job", "x")], &[(1.0, 1000), (2.0, 2000)]),
        bad_utf8,
        series(&[("__name__", "m"), ("", "v")], &[(1.0, 1000)]),
        series(&[("__name__", "...")], &[(1.0, 1000)]),
        series(&[("__name__", "a..b")], &[(1.0, 1000)]),
        series(&[("__name__", "no_samples")], &[]),
        series(&[("__name__", "ok")], &[(3.0, 3000)]),
    ]);
    let (pts, out) = decode(&msg).unwrap();
    assert_eq!(pts, vec![p("a.b", 1, 1.0), p("ok", 3, 3.0)]);
    assert_eq!(out.series, 7);
    assert_eq!(out.counts.received, 7);
    assert_eq!(out.counts.renamed, 1);
    assert_eq!(out.counts.rejected(Reason::InvalidElement), 3);
    assert_eq!(out.counts.rejected(Reason::InvalidUtf8), 1);
    assert_eq!(out.counts.rejected(Reason::EmptyName), 1);
}

#[test]
fn malformed_requests_are_refused_whole() {
    let good = series(&[("__name__", "m")], &[(1.0, 1000)]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            [request(std::slice::from_ref(&good)), vec![0x0A, 0x05, 1]].concat(),
            "length-delimited field runs past the end",
        ),
        (
            Pb::default().key(1, 0).varint(1).0,
            "field has the wrong wire type for its schema",
        ),
        (
            Pb::default().key(9, 3).0,
            "groups (wire types 3 and 4) are not supported",
        ),
        (Pb::default().key(2, 7).0, "invalid wire type"),
        (
            request(&[Pb::default()
                .bytes(2, &Pb::default().key(1, 0).varint(5).0)
                .0]),
            "field has the wrong wire type for its schema",
        ),
        (
            request(&[Pb::default().bytes(2, &[0x09, 1, 2]).0]),
            "truncated fixed64",
        ),
        (vec![0x0A, 0x80], "truncated varint"),
        (vec![0x00], "field number 0"),
    ];
    for (msg, what) in cases {
        let mut batch = Batch::new();
        batch.push("kept", 1, 1.0);
        let err =
            decode_remote_write(&snappy(&msg), &mut batch, &WriteLimits::default()).unwrap_err();
        match &err {
            WriteError::Protobuf { what: w, .. } => assert_eq!(*w, what, "{msg:?}"),
            other => panic!("{msg:?}: {other}"),
        }
        assert_eq!(err.status(), 400);
        // the series decoded before the error were taken back
        assert_eq!(batch.len(), 1);
    }
    let v2 = Pb::default().bytes(4, b"__name__").bytes(5, b"").0;
    assert_eq!(decode(&v2).unwrap_err(), WriteError::Version2);
    assert_eq!(WriteError::Version2.status(), 415);
}

#[test]
fn snappy_and_size_limits() {
    let mut batch = Batch::new();
    let limits = WriteLimits {
        max_body_bytes: 1000,
        max_decoded_bytes: 5000,
    };
    let err =
        decode_remote_write(b"not snappy at all \xff\xff\xff", &mut batch, &limits).unwrap_err();
    assert!(matches!(err, WriteError::Snappy(_)), "{err}");
    assert!(decode_remote_write(&[], &mut batch, &limits).is_err());
    let big = snappy(&vec![0u8; 6000]);
    assert!(big.len() < 1000);
    let err = decode_remote_write(&big, &mut batch, &limits).unwrap_err();
    assert_eq!(
        err,
        WriteError::DecodedTooLarge {
            len: 6000,
            limit: 5000
        }
    );
    assert_eq!(err.status(), 413);
    // a header that lies: claims 268 MB, holds nothing
    let err = decode_remote_write(&[0xFF, 0xFF, 0xFF, 0x7F], &mut batch, &limits).unwrap_err();
    assert!(matches!(err, WriteError::DecodedTooLarge { .. }));
    let err = decode_remote_write(&vec![0; 1001], &mut batch, &limits).unwrap_err();
    assert_eq!(
        err,
        WriteError::BodyTooLarge {
            len: 1001,
            limit: 1000
        }
    );
    // a snappy stream whose content is shorter than its header says
    let mut cut = snappy(&request(&[series(&[("__name__", "m")], &[(1.0, 1)])]));
    cut.truncate(cut.len() - 3);
    assert!(matches!(
        decode_remote_write(&cut, &mut batch, &limits),
        Err(WriteError::Snappy(_))
    ));
    assert!(batch.is_empty());
}
