//! The other ways points arrive, end to end against the real server: carbon pickle
//! (payloads made by the real Python `pickle`), the JSON bulk API and Prometheus remote
//! write.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::{now, points_of, scratch, Sumi};

/// A length-prefixed pickle of `[(path, (ts, value)), ...]` made by CPython itself.
fn python_pickle(points: &[(&str, i64, f64)], protocol: u8) -> Vec<u8> {
    let literal: Vec<String> = points
        .iter()
        .map(|(p, t, v)| format!("({p:?}, ({t}, {v:?}))"))
        .collect();
    let script = format!(
        "import pickle, struct, sys\n\
         data = pickle.dumps([{}], protocol={protocol})\n\
         sys.stdout.buffer.write(struct.pack('!L', len(data)) + data)\n",
        literal.join(", ")
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn carbon_pickle_from_python() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let ts = now() - 120;
    let mut stream = TcpStream::connect(sumi.pickle).unwrap();
    for protocol in [0u8, 2, 4] {
        let name = format!("pickled.p{protocol}");
        let msg = python_pickle(&[(&name, ts, 1.5), (&name, ts + 10, 2.5)], protocol);
        stream.write_all(&msg).unwrap();
    }
    // a hostile message: GLOBAL os.system is refused, the connection goes on
    let evil = b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.";
    stream
        .write_all(&(evil.len() as u32).to_be_bytes())
        .unwrap();
    stream.write_all(evil).unwrap();
    let msg = python_pickle(&[("pickled.after", ts, 9.0)], 2);
    stream.write_all(&msg).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut sink = [0u8; 16];
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = stream.read(&mut sink);

    sumi.wait_stored(7);
    assert_eq!(
        sumi.metric("sumi_points_rejected_total{reason=\"invalid_pickle\"}"),
        1.0
    );
    let json = sumi.get_json("/render?target=pickled.*&from=-10min&format=json");
    let names: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["pickled.after", "pickled.p0", "pickled.p2", "pickled.p4"]
    );
    let slot = ts - ts % 10;
    assert_eq!(points_of(&json, 1), vec![(1.5, slot), (2.5, slot + 10)]);
    assert_eq!(points_of(&json, 0), vec![(9.0, slot)]);
}

#[test]
fn json_bulk_api() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let ts = now() - 120;
    let body = format!(
        r#"[{{"name":"custom.requests","time":{ts},"value":12.5,"hostId":"web01"}},
            {{"name":"custom.requests","time":{},"value":13,"hostId":"web01"}},
            {{"name":"loadavg","time":{ts},"value":0.5}}]"#,
        ts + 10
    );
    let url = format!("http://{}/api/v0/tsdb", sumi.http);
    let resp = ureq::post(&url)
        .set("Content-Type", "application/json")
        .send_string(&body)
        .unwrap();
    assert_eq!(resp.status(), 200);
    // answered only after the WAL has the batch: visible without waiting
    let slot = ts - ts % 10;
    let json = sumi.get_json("/render?target=web01.custom.requests&from=-10min&format=json");
    assert_eq!(points_of(&json, 0), vec![(12.5, slot), (13.0, slot + 10)]);

    // gzip bodies
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(format!(r#"[{{"name":"zipped","time":{ts},"value":1}}]"#).as_bytes())
        .unwrap();
    let resp = ureq::post(&url)
        .set("Content-Type", "application/json")
        .set("Content-Encoding", "gzip")
        .send_bytes(&gz.finish().unwrap())
        .unwrap();
    assert_eq!(resp.status(), 200);
    let json = sumi.get_json("/render?target=zipped&from=-10min&format=json");
    assert_eq!(points_of(&json, 0), vec![(1.0, slot)]);

    // one bad element refuses the whole batch, saying which
    let bad = format!(
        r#"[{{"name":"ok.one","time":{ts},"value":1}},{{"name":"bad","time":{ts},"value":"x"}}]"#
    );
    match ureq::post(&url).send_string(&bad) {
        Err(ureq::Error::Status(400, r)) => {
            let msg = r.into_string().unwrap();
            assert!(msg.contains("element 1"), "{msg}");
        }
        other => panic!("expected a 400, got {other:?}"),
    }
    let json = sumi.get_json("/render?target=ok.one&from=-10min&format=json");
    assert_eq!(json, serde_json::json!([]));
}

/// A protobuf `WriteRequest` by hand: one series, its labels and samples.
fn write_request(labels: &[(&str, &str)], samples: &[(f64, i64)]) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn field(out: &mut Vec<u8>, num: u64, bytes: &[u8]) {
        varint(out, (num << 3) | 2);
        varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }
    let mut ts = Vec::new();
    for (name, value) in labels {
        let mut l = Vec::new();
        field(&mut l, 1, name.as_bytes());
        field(&mut l, 2, value.as_bytes());
        field(&mut ts, 1, &l);
    }
    for (value, ms) in samples {
        let mut s = Vec::new();
        s.push(0x09);
        s.extend_from_slice(&value.to_le_bytes());
        s.push(0x10);
        varint(&mut s, *ms as u64);
        field(&mut ts, 2, &s);
    }
    let mut req = Vec::new();
    field(&mut req, 1, &ts);
    req
}

#[test]
fn prometheus_remote_write() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let ts = now() - 120;
    let req = write_request(
        &[
            ("__name__", "node_load1"),
            ("instance", "web01:9100"),
            ("job", "node"),
        ],
        &[(0.25, ts * 1000), (0.5, (ts + 10) * 1000 + 999)],
    );
    let body = snap::raw::Encoder::new().compress_vec(&req).unwrap();
    let url = format!("http://{}/api/v1/write", sumi.http);
    let resp = ureq::post(&url)
        .set("Content-Encoding", "snappy")
        .set("Content-Type", "application/x-protobuf")
        .set("X-Prometheus-Remote-Write-Version", "0.1.0")
        .send_bytes(&body)
        .unwrap();
    assert_eq!(resp.status(), 204);
    assert_eq!(sumi.metric("sumi_points_stored_total"), 2.0);
    assert_eq!(sumi.metric("sumi_series_active"), 1.0);
    // without snappy: refused, and Prometheus will not retry a 4xx
    match ureq::post(&url).send_bytes(&req) {
        Err(ureq::Error::Status(415, _)) => {}
        other => panic!("expected a 415, got {other:?}"),
    }
}
