//! Ingest limits on the real binary with real sockets: `[storage] max_series` refuses
//! and counts points of further new series while existing ones keep flowing,
//! `[carbon] max_new_series_per_minute` holds a connection back instead of dropping its
//! points, and `[carbon] max_connections` refuses extra connections.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{now, scratch, Sumi};

fn start(dir: &std::path::Path, toml: &str) -> Sumi {
    let config = dir.join("sumi.toml");
    std::fs::write(&config, format!("[selfmon]\nenabled = false\n{toml}")).unwrap();
    Sumi::start(&dir.join("data"), &["--config", config.to_str().unwrap()])
}

fn post_json(sumi: &Sumi, body: &str) -> (u16, String, Option<String>) {
    let url = format!("http://{}/api/v0/tsdb", sumi.http);
    match ureq::post(&url)
        .timeout(Duration::from_secs(30))
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => (r.status(), String::new(), None),
        Err(ureq::Error::Status(code, r)) => {
            let retry = r.header("Retry-After").map(str::to_string);
            (code, r.into_string().unwrap_or_default(), retry)
        }
        Err(e) => panic!("POST /api/v0/tsdb: {e}"),
    }
}

const SERIES_LIMIT: &str = "sumi_points_rejected_total{reason=\"series_limit\"}";

#[test]
fn max_series_refuses_new_series_and_counts_them() {
    let dir = scratch();
    let sumi = start(dir.path(), "[storage]\nmax_series = 3\n");
    let ts = now() - 60;
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&format!("s.n{i} {i} {ts}\n"));
    }
    sumi.send_tcp(text.as_bytes());
    sumi.wait_metric(SERIES_LIMIT, 2.0);
    assert_eq!(sumi.metric("sumi_points_stored_total"), 3.0);
    assert_eq!(sumi.metric("sumi_series_active"), 3.0);
    // existing series keep taking points
    sumi.send_tcp(format!("s.n0 10 {}\ns.n2 12 {}\n", ts + 10, ts + 10).as_bytes());
    sumi.wait_stored(5);
    assert_eq!(sumi.metric(SERIES_LIMIT), 2.0);
    // HTTP ingest names the limit
    let body = format!(r#"[{{"name":"s.new","time":{ts},"value":1}}]"#);
    let (st, msg, _) = post_json(&sumi, &body);
    assert_eq!(st, 507, "{msg}");
    assert!(msg.contains("max_series"), "{msg}");
    assert_eq!(sumi.metric(SERIES_LIMIT), 3.0);
    assert!(
        sumi.log_text().contains("max_series"),
        "the refusal is logged:\n{}",
        sumi.log_text()
    );
    // deleting makes room again
    let (st, body) = sumi.post_form("/api/v1/series/delete", &[("target", "s.n1")]);
    assert_eq!(st, 200, "{body}");
    let (st, msg, _) = post_json(&sumi, &body_for("s.new", ts));
    assert_eq!(st, 200, "{msg}");
    assert_eq!(sumi.metric("sumi_series_active"), 3.0);
}

fn body_for(name: &str, ts: i64) -> String {
    format!(r#"[{{"name":"{name}","time":{ts},"value":1}}]"#)
}

#[test]
fn new_series_rate_holds_the_connection_back_without_dropping() {
    let dir = scratch();
    // six a minute: the bucket starts with six, then one every ten seconds
    let sumi = start(dir.path(), "[carbon]\nmax_new_series_per_minute = 6\n");
    let ts = now() - 60;
    // one existing series first
    sumi.send_tcp(format!("old.one 1 {ts}\n").as_bytes());
    sumi.wait_stored(1);

    // twenty new series on one connection, kept open
    let mut a = TcpStream::connect(sumi.carbon).unwrap();
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!("new.n{i} {i} {ts}\n"));
    }
    a.write_all(text.as_bytes()).unwrap();
    sumi.wait_metric("sumi_new_series_throttled_total", 1.0);
    let t = Instant::now();
    // old.one took one token: five new series were created, then the batch waits
    assert_eq!(sumi.metric("sumi_series_active"), 6.0);
    assert_eq!(sumi.metric("sumi_points_stored_total"), 1.0);

    // meanwhile an existing series flows on another connection
    sumi.send_tcp(format!("old.one 2 {}\n", ts + 10).as_bytes());
    sumi.wait_stored(2);
    // and HTTP ingest of a new series is told to come back
    let (st, msg, retry) = post_json(&sumi, &body_for("http.new", ts));
    assert_eq!(st, 429, "{msg}");
    assert!(msg.contains("max_new_series_per_minute"), "{msg}");
    assert!(retry.is_some());
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "the checks ran before the next token ({:?})",
        t.elapsed()
    );

    // nothing of the held batch was dropped: it is stored once the bucket refills
    // (one more series every ten seconds; wait for the next one)
    sumi.wait_metric("sumi_series_active", 7.0);
    let (_, metrics) = sumi.get("/metrics");
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("sumi_points_rejected_total"))
    {
        assert!(line.ends_with(" 0"), "nothing rejected: {line}");
    }
    drop(a);
}

#[test]
fn max_connections_refuses_extra_connections() {
    let dir = scratch();
    let sumi = start(dir.path(), "[carbon]\nmax_connections = 2\n");
    let c1 = TcpStream::connect(sumi.carbon).unwrap();
    let c2 = TcpStream::connect(sumi.carbon).unwrap();
    // both are accepted and counted before the third comes
    sumi.wait_metric("sumi_carbon_connections_open", 2.0);
    let mut c3 = TcpStream::connect(sumi.carbon).unwrap();
    c3.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 16];
    // the server closes the third connection unread
    let n = c3.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0);
    sumi.wait_metric(
        "sumi_carbon_connections_refused_total{reason=\"limit\"}",
        1.0,
    );
    // the first two still work
    let ts = now() - 60;
    for (i, mut c) in [c1, c2].into_iter().enumerate() {
        c.write_all(format!("conn.c{i} 1 {ts}\n").as_bytes())
            .unwrap();
    }
    sumi.wait_stored(2);
}

#[test]
fn oversized_http_bodies_are_refused() {
    let dir = scratch();
    let sumi = start(dir.path(), "");
    let url = format!("http://{}/api/v0/tsdb", sumi.http);
    let body = vec![b' '; 17 << 20];
    match ureq::post(&url)
        .timeout(Duration::from_secs(30))
        .set("Content-Type", "application/json")
        .send_bytes(&body)
    {
        Ok(r) => panic!("POST of 17 MiB answered {}", r.status()),
        Err(ureq::Error::Status(code, _)) => assert_eq!(code, 413),
        // The server answers 413 and closes as soon as the body passes the limit; a
        // client still writing the rest may see the close (broken pipe, reset) before
        // it reads the answer. The server's own count of the answer decides then.
        Err(ureq::Error::Transport(e)) => {
            let sample = "sumi_http_requests_total{route=\"ingest\",status=\"413\"}";
            sumi.wait_metric(sample, 1.0);
            eprintln!("POST of 17 MiB: the client saw {e}; the server answered 413");
        }
    }
    assert_eq!(
        sumi.metric("sumi_http_requests_total{route=\"ingest\",status=\"413\"}"),
        1.0
    );
    // a body under the limit is read (and refused for what it is, not its size)
    let (st, msg, _) = post_json(&sumi, "not json");
    assert_eq!(st, 400, "{msg}");
}
