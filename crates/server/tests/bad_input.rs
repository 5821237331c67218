//! Bad input never takes the server down or stalls other clients: each kind of bad
//! line is refused and counted by reason while the good lines around it arrive.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{now, points_of, scratch, Sumi};

#[test]
fn bad_lines_are_counted_and_good_lines_around_them_arrive() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let ts = now() - 120;
    let mut payload: Vec<u8> = Vec::new();
    let mut good = 0;
    let mut push_good = |p: &mut Vec<u8>, i: usize| {
        p.extend_from_slice(format!("good.s{i} {i} {ts}\n").as_bytes());
        good += 1;
    };
    push_good(&mut payload, 0);
    payload.extend_from_slice(b"\x00\x01\x02\xfe\xff garbage \x07\x08\n");
    push_good(&mut payload, 1);
    payload.extend_from_slice(b"bad.utf8.\xc3\x28 1 1700000000\n");
    push_good(&mut payload, 2);
    payload.extend_from_slice(format!("nan.value nan {ts}\n").as_bytes());
    payload.extend_from_slice(format!("only.two.fields {ts}\n").as_bytes());
    payload.extend_from_slice(b"bad.value abc 1700000000\n");
    payload.extend_from_slice(b"bad.ts 1 yesterday\n");
    push_good(&mut payload, 3);
    let long = format!("long.{} 1 {ts}\n", "x".repeat(20_000));
    payload.extend_from_slice(long.as_bytes());
    push_good(&mut payload, 4);
    payload.extend_from_slice(b"before.epoch 1 -86400\n");
    payload.extend_from_slice(format!("far.future 1 {}\n", ts + 10 * 365 * 86400).as_bytes());
    // carbon stores infinities (graphite-web writes them as 1e9999)
    payload.extend_from_slice(format!("inf.pos inf {ts}\ninf.neg -Infinity {ts}\n").as_bytes());
    // empty nodes vanish as they do in carbon's file tree
    payload.extend_from_slice(format!("empty..node. 7 {ts}\n").as_bytes());
    push_good(&mut payload, 5);
    sumi.send_tcp(&payload);

    let stored = good + 3; // two infinities, the renamed path
    sumi.wait_stored(stored);
    let reason = |r: &str| sumi.metric(&format!("sumi_points_rejected_total{{reason=\"{r}\"}}"));
    // the binary garbage line is not UTF-8 either
    assert_eq!(reason("invalid_utf8"), 2.0);
    assert_eq!(reason("nan_value"), 1.0);
    assert_eq!(reason("invalid_value"), 1.0);
    assert_eq!(reason("invalid_timestamp"), 1.0);
    assert_eq!(reason("line_too_long"), 1.0);
    assert_eq!(reason("too_old"), 1.0);
    assert_eq!(reason("too_new"), 1.0);
    assert_eq!(reason("invalid_line"), 1.0);
    assert_eq!(sumi.metric("sumi_points_stored_total"), stored as f64);

    let json = sumi.get_json("/render?target=good.*&from=-10min&format=json");
    assert_eq!(json.as_array().unwrap().len(), 6);
    for i in 0..6 {
        assert_eq!(points_of(&json, i), vec![(i as f64, ts - ts % 10)]);
    }
    let json = sumi.get_json("/render?target=empty.node&from=-10min&format=json");
    assert_eq!(points_of(&json, 0), vec![(7.0, ts - ts % 10)]);
    let (status, body) = sumi.get("/render?target=inf.*&from=-10min&format=json");
    assert_eq!(status, 200);
    assert!(body.contains("[-1e9999, "), "{body}");
    assert!(body.contains("[1e9999, "), "{body}");
    assert!(sumi.get("/health").0 == 200);
}

#[test]
fn idle_connections_and_half_lines_block_nobody() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let idle: Vec<TcpStream> = (0..2000)
        .map(|_| TcpStream::connect(sumi.carbon).expect("idle connection"))
        .collect();
    // a client that sends half a line and then nothing
    let mut half = TcpStream::connect(sumi.carbon).unwrap();
    half.write_all(b"half.line 1 ").unwrap();
    half.flush().unwrap();
    // the server has read the half line (and holds it) before the busy client starts
    sumi.wait_metric("sumi_ingest_bytes_total", 12.0);

    let ts = now() - 60;
    let mut text = String::new();
    for i in 0..1000 {
        text.push_str(&format!("busy.s{} {i} {ts}\n", i % 10));
    }
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored(1000);
    let open = sumi.metric("sumi_carbon_connections_open");
    assert!(open >= 2001.0, "{open} connections open");
    let json = sumi.get_json("/render?target=half.line&from=-10min&format=json");
    assert_eq!(json, serde_json::json!([]));
    drop(idle);
    drop(half);
}

#[test]
fn a_brace_bomb_is_refused_at_once_and_the_server_keeps_serving() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    sumi.send_tcp(format!("a.b.c 1 {}\n", now() - 60).as_bytes());
    sumi.wait_stored(1);
    // 22 groups of two alternatives in one node: 4 M variants if expanded
    let bomb = "%7Ba,b%7D".repeat(22);
    let started = std::time::Instant::now();
    for path in [
        format!("/metrics/find?query=a.{bomb}"),
        format!("/metrics/expand?query=a.{bomb}"),
        format!("/render?target=sumSeries(a.{bomb})&format=json"),
    ] {
        let (status, body) = sumi.get(&path);
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains("alternatives"), "{path}: {body}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused without expanding: {:?}",
        started.elapsed()
    );
    let (status, body) = sumi.get("/metrics/find?query=a.{b,x}");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"b\""), "{body}");
}
