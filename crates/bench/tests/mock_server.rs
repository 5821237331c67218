//! The whole bench against a tiny in-process server that speaks the four protocols it
//! needs: carbon plaintext, `GET /health`, `GET /metrics` with `sumi_points_stored_total`,
//! and graphite `/render` JSON. Everything is on loopback and bounded in time.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use sumi_bench::{execute, BenchArgs, BenchError};

type Store = HashMap<String, BTreeMap<i64, f64>>;

/// The mock's state, shared by its threads.
#[derive(Default)]
struct Mock {
    store: Mutex<Store>,
    stored: AtomicU64,
    /// When false, points are kept but the counter never moves (a stuck server).
    count: AtomicBool,
    /// When false, /metrics does not list the counter at all.
    expose: AtomicBool,
    /// When true, /render answers every point as null (stored but never queryable).
    hide: AtomicBool,
}

struct Running {
    mock: Arc<Mock>,
    carbon: String,
    http: String,
}

fn start_mock(count: bool, expose: bool) -> Running {
    let mock = Arc::new(Mock::default());
    mock.count.store(count, Ordering::Relaxed);
    mock.expose.store(expose, Ordering::Relaxed);
    let carbon = TcpListener::bind("127.0.0.1:0").expect("bind carbon");
    let http = TcpListener::bind("127.0.0.1:0").expect("bind http");
    let addrs = (
        carbon.local_addr().expect("addr").to_string(),
        http.local_addr().expect("addr").to_string(),
    );
    let m = Arc::clone(&mock);
    std::thread::spawn(move || {
        for conn in carbon.incoming().flatten() {
            let m = Arc::clone(&m);
            std::thread::spawn(move || carbon_conn(&m, conn));
        }
    });
    let m = Arc::clone(&mock);
    std::thread::spawn(move || {
        for conn in http.incoming().flatten() {
            let m = Arc::clone(&m);
            std::thread::spawn(move || http_conn(&m, conn));
        }
    });
    Running {
        mock,
        carbon: addrs.0,
        http: addrs.1,
    }
}

fn carbon_conn(m: &Mock, conn: TcpStream) {
    for line in BufReader::new(conn).lines() {
        let Ok(line) = line else { return };
        let f: Vec<&str> = line.split(' ').collect();
        let (Some(name), Some(v), Some(ts)) = (f.first(), f.get(1), f.get(2)) else {
            continue;
        };
        let (Ok(v), Ok(ts)) = (v.parse::<f64>(), ts.parse::<i64>()) else {
            continue;
        };
        m.store
            .lock()
            .expect("lock")
            .entry((*name).to_string())
            .or_default()
            .insert(ts, v);
        if m.count.load(Ordering::Relaxed) {
            m.stored.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn http_conn(m: &Mock, mut conn: TcpStream) {
    let mut head = Vec::new();
    let mut b = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut b) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&b[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.split(' ').nth(1).unwrap_or("/").to_string();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let (status, body) = match path {
        "/health" => (200, "ok".to_string()),
        "/metrics" => {
            let mut body = "# TYPE sumi_points_stored_total counter\n".to_string();
            if m.expose.load(Ordering::Relaxed) {
                // Split over two label sets, as a sharded server would.
                let n = m.stored.load(Ordering::Relaxed);
                body.push_str(&format!(
                    "sumi_points_stored_total{{shard=\"0\"}} {}\nsumi_points_stored_total{{shard=\"1\"}} {}\n",
                    n / 2,
                    n - n / 2
                ));
            }
            (200, body)
        }
        "/render" => (200, render(m, query)),
        _ => (404, "not found".to_string()),
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// graphite-web's JSON for plain-name targets over `(from, until]`, step 10.
fn render(m: &Mock, query: &str) -> String {
    let mut targets = Vec::new();
    let (mut from, mut until) = (0i64, 0i64);
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "target" => targets.push(v.to_string()),
            "from" => from = v.parse().unwrap_or(0),
            "until" => until = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    let store = m.store.lock().expect("lock");
    let series: Vec<serde_json::Value> = targets
        .iter()
        .filter_map(|t| {
            let points = store.get(t)?;
            let start = from - from % 10 + 10;
            let datapoints: Vec<serde_json::Value> = (start..=until)
                .step_by(10)
                .map(|ts| {
                    let v = points.get(&ts).filter(|_| !m.hide.load(Ordering::Relaxed));
                    serde_json::json!([v, ts])
                })
                .collect();
            Some(serde_json::json!({"target": t, "tags": {"name": t}, "datapoints": datapoints}))
        })
        .collect();
    serde_json::Value::Array(series).to_string()
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

/// `BenchArgs` from a command line split on spaces.
fn bench_args(line: &str) -> BenchArgs {
    Cli::try_parse_from(std::iter::once("bench").chain(line.split_whitespace()))
        .expect("valid arguments")
        .args
}

#[test]
fn a_full_run_measures_everything_against_a_working_server() {
    let server = start_mock(true, true);
    let data_dir = std::env::temp_dir().join(format!("sumi-bench-it-{}", std::process::id()));
    std::fs::create_dir_all(&data_dir).expect("mkdir");
    std::fs::write(data_dir.join("part"), vec![7u8; 50_000]).expect("write");
    let args = bench_args(&format!(
        "--carbon {} --http {} --pid {} --data-dir {} --series 250 --points 5 --step 10 \
         --connections 3 --end 1700000000 --no-progress --stall-timeout 20 --probes 0",
        server.carbon,
        server.http,
        std::process::id(),
        data_dir.display()
    ));
    let report = execute(&args).expect("run completes");
    assert_eq!(report.error, None, "{}", report.to_table());
    assert_eq!(report.total_points, 1250);
    assert_eq!(report.sent_points, 1250);
    assert_eq!(report.stored_points, 1250);
    assert!(report.stored_reached);
    assert!(report.points_per_sec.is_some_and(|p| p > 0.0));
    assert_eq!(report.queryable_reached, Some(true));
    assert_eq!(report.sampled_series, 10);
    let (after_stored, since_first) = (
        report.queryable_after_stored_secs.expect("timed"),
        report.queryable_secs.expect("timed"),
    );
    assert!(
        since_first >= after_stored,
        "{since_first} < {after_stored}"
    );
    assert!(report.server_cpu_secs.is_some() && report.client_cpu_secs.is_some());
    assert!(report.peak_rss_bytes.is_some_and(|b| b > 1 << 20));
    assert!(
        report.disk_bytes.is_some_and(|b| b >= 50_000),
        "{:?}",
        report.disk_bytes
    );
    assert!(report.bytes_per_point.is_some());
    assert_eq!(report.stop_secs, None, "an external server is not stopped");
    assert_eq!(
        (report.first_ts, report.last_ts),
        (1_699_999_960, 1_700_000_000)
    );

    // The server got exactly the workload: every series, every timestamp, once.
    let store = server.mock.store.lock().expect("lock");
    assert_eq!(store.len(), 250);
    let expected: Vec<i64> = (0..5).map(|i| 1_699_999_960 + 10 * i).collect();
    for (name, points) in store.iter() {
        assert!(name.starts_with("bench.host0000"), "{name}");
        assert_eq!(
            points.keys().copied().collect::<Vec<_>>(),
            expected,
            "{name}"
        );
    }
    let cpu = &store["bench.host00001.cpu.user"];
    assert!(cpu.values().all(|v| (0.0..=100.0).contains(v)));
    drop(store);
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    assert_eq!(json["stored_points"], 1250);
    std::fs::remove_dir_all(&data_dir).expect("cleanup");
}

#[test]
fn a_server_that_stops_counting_ends_in_a_stall_report() {
    let server = start_mock(false, true);
    let args = bench_args(&format!(
        "--carbon {} --http {} --series 100 --points 3 --no-progress --stall-timeout 1",
        server.carbon, server.http
    ));
    let started = std::time::Instant::now();
    let report = execute(&args).expect("a report, with the error in it");
    assert!(started.elapsed() < Duration::from_secs(15));
    let error = report.error.clone().expect("stalled");
    assert!(
        error.contains("ingest stalled") && error.contains("0 of 300"),
        "{error}"
    );
    assert!(!report.stored_reached);
    assert_eq!(report.sent_points, 300, "everything was sent");
    assert_eq!(report.queryable_reached, None, "the query phase never ran");
    assert!(report.to_table().contains("NOT REACHED"));
}

#[test]
fn a_missing_counter_is_named_in_the_stall_error() {
    let server = start_mock(true, false);
    let args = bench_args(&format!(
        "--carbon {} --http {} --series 10 --points 1 --no-progress --stall-timeout 1",
        server.carbon, server.http
    ));
    let error = execute(&args).expect("report").error.expect("stalled");
    assert!(
        error.contains("never showed sumi_points_stored_total"),
        "{error}"
    );
}

#[test]
fn points_that_never_become_queryable_end_in_a_render_stall() {
    let server = start_mock(true, true);
    server.mock.hide.store(true, Ordering::Relaxed);
    let args = bench_args(&format!(
        "--carbon {} --http {} --series 20 --points 2 --no-progress --stall-timeout 1",
        server.carbon, server.http
    ));
    let report = execute(&args).expect("report");
    assert!(report.stored_reached);
    assert_eq!(report.queryable_reached, Some(false));
    let error = report.error.expect("stalled");
    assert!(
        error.contains("render stalled") && error.contains("0 of 20"),
        "{error}"
    );
}

#[test]
fn a_closed_carbon_port_is_a_clear_error_before_sending() {
    let server = start_mock(true, true);
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = closed.local_addr().expect("addr").to_string();
    drop(closed);
    let args = bench_args(&format!(
        "--carbon {addr} --http {} --series 10 --points 1 --no-progress",
        server.http
    ));
    let err = execute(&args).expect_err("refused");
    assert!(matches!(err, BenchError::Connect { .. }), "{err}");
    assert!(err.to_string().contains(&addr), "{err}");
}

#[test]
fn a_server_without_health_is_not_ready_in_time() {
    let dead = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = dead.local_addr().expect("addr").to_string();
    drop(dead);
    let args = bench_args(&format!(
        "--carbon {addr} --http {addr} --series 10 --points 1 --no-progress --ready-timeout 1"
    ));
    let err = execute(&args).expect_err("not ready");
    assert!(matches!(err, BenchError::NotReady { .. }), "{err}");
}

#[test]
fn a_payload_larger_than_memory_is_refused_up_front() {
    let args = bench_args(
        "--carbon 127.0.0.1:1 --http 127.0.0.1:1 --series 1000000000 --points 1000 --no-progress",
    );
    let err = execute(&args).expect_err("too big");
    assert!(matches!(err, BenchError::Args(_)), "{err}");
    assert!(err.to_string().contains("memory available"), "{err}");
}

#[test]
fn a_wrong_pid_fails_before_anything_is_sent() {
    let server = start_mock(true, true);
    let args = bench_args(&format!(
        "--carbon {} --http {} --pid 4294967295 --series 10 --points 1 --no-progress",
        server.carbon, server.http
    ));
    let err = execute(&args).expect_err("no such process");
    assert!(err.to_string().contains("/proc/4294967295/stat"), "{err}");
    assert!(server.mock.store.lock().expect("lock").is_empty());
}
