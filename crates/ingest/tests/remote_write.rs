//! Prometheus remote write on a request serialized by Google's protobuf library
//! (`tests/data/gen_remote_write.py`), snappy-compressed here as Prometheus sends it.

use serde_json::Value as Json;
use sumi_ingest::{decode_remote_write, Reason, WriteLimits};
use sumi_model::Batch;

#[test]
fn a_request_from_the_reference_protobuf_library() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/remote_write");
    let msg = std::fs::read(dir.join("request.pb")).unwrap();
    let want: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let body = snap::raw::Encoder::new().compress_vec(&msg).unwrap();
    let mut batch = Batch::new();
    let out = decode_remote_write(&body, &mut batch, &WriteLimits::default()).unwrap();

    let got: Vec<(String, i64, u64)> = batch
        .iter()
        .map(|(n, p)| (n.to_string(), p.ts, p.value.to_bits()))
        .collect();
    let points: Vec<(String, i64, u64)> = want["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_string(),
                p[1].as_i64().unwrap(),
                p[2].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, points);
    assert_eq!(out.points, points.len());
    for (label, n) in want["refused"].as_object().unwrap() {
        let reason = Reason::ALL.iter().find(|r| r.label() == label).unwrap();
        assert_eq!(out.counts.rejected(*reason), n.as_u64().unwrap(), "{label}");
    }
    let refused: u64 = out.counts.rejected.iter().sum();
    assert_eq!(out.counts.received, points.len() as u64 + refused);
}
