//! A smoke run of `sumi bench` against the real server it starts itself: small enough
//! for CI, so the load generator, its report and its latency probes cannot rot.

use std::process::Command;

#[test]
fn bench_starts_sumi_loads_it_and_reports_every_figure() {
    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args([
            "bench",
            "--series",
            "300",
            "--points",
            "6",
            "--connections",
            "2",
            "--probes",
            "3",
            "--no-progress",
            "--json",
        ])
        .output()
        .expect("run sumi bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sumi bench failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON report in {stdout}"));
    let r: serde_json::Value = serde_json::from_str(line).expect("report is JSON");
    assert_eq!(r["error"], serde_json::Value::Null, "{r}");
    assert_eq!(r["total_points"], 1800);
    assert_eq!(r["sent_points"], 1800);
    // the server's own counter: every point applied to the store
    assert!(
        r["stored_points"].as_u64().is_some_and(|n| n >= 1800),
        "{r}"
    );
    assert_eq!(r["queryable_reached"], true, "{r}");
    assert!(r["points_per_sec"].as_f64().is_some_and(|p| p > 0.0));
    // read from /proc in clock ticks: a run this small can be under one tick
    assert!(
        r["server_cpu_secs"].as_f64().is_some_and(|s| s >= 0.0),
        "{r}"
    );
    assert!(r["peak_rss_bytes"].as_u64().is_some_and(|b| b > 1 << 20));
    assert!(r["disk_bytes"].as_u64().is_some_and(|b| b > 0));
    assert_eq!(
        r["stop_killed"], false,
        "SIGTERM ends a started server: {r}"
    );

    let probes = r["probes"].as_array().expect("probes");
    assert!(probes.len() >= 3, "{r}");
    for p in probes {
        assert_eq!(p["runs"], 3, "{p}");
        let median = p["median_ms"].as_f64().expect("median");
        assert!(
            median > 0.0 && median <= p["max_ms"].as_f64().unwrap(),
            "{p}"
        );
        assert!(p["answer_size"].as_u64().is_some_and(|n| n > 0), "{p}");
    }
}

/// The soak mode for a few seconds: rows every 2 s in the CSV, no error, and the
/// server's own charts fetched as PNG next to it.
#[test]
fn soak_records_rows_and_charts_its_own_metrics() {
    let out = tempfile::Builder::new()
        .prefix("sumi-soak-")
        .tempdir()
        .expect("temp dir");
    let dir = out.path().join("soak");
    let run = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args([
            "bench",
            "--series",
            "200",
            "--rate",
            "2000",
            "--soak-seconds",
            "6",
            "--soak-sample-secs",
            "2",
            "--no-progress",
            "--json",
            "--soak-out",
        ])
        .arg(&dir)
        .output()
        .expect("run sumi bench --soak-seconds");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "soak failed: {stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON summary in {stdout}"));
    let r: serde_json::Value = serde_json::from_str(line).expect("summary is JSON");
    assert_eq!(r["error"], serde_json::Value::Null, "{r}");
    assert_eq!(r["errors"], 0, "{r}");
    assert_eq!(r["rows"], 3, "{r}");
    let sent = r["sent_points"].as_u64().expect("sent");
    // 6 s at 2,000/s, give or take the pacer's first burst and the stop
    assert!((9_000..=14_000).contains(&sent), "{r}");
    assert!(
        r["stored_points"]
            .as_f64()
            .is_some_and(|s| s >= sent as f64),
        "{r}"
    );
    assert!(r["queries"].as_u64().is_some_and(|q| q >= 10), "{r}");

    let csv = std::fs::read_to_string(dir.join("soak.csv")).expect("soak.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name} column in {csv}"))
    };
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{csv}");
        let rss: u64 = row[col("rss_bytes")].parse().expect("rss");
        assert!(rss > 1 << 20, "{csv}");
        let sent: f64 = row[col("sent_points_per_s")].parse().expect("rate");
        assert!((1_000.0..=3_000.0).contains(&sent), "{csv}");
        assert!(row[col("query_p99_ms")].parse::<f64>().is_ok(), "{csv}");
        assert_eq!(row[col("errors")], "0", "{csv}");
    }
    for png in ["soak-rss.png", "soak-points.png", "soak-latency.png"] {
        let bytes = std::fs::read(dir.join(png)).unwrap_or_else(|e| panic!("{png}: {e}"));
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{png} is not a PNG"
        );
        assert!(bytes.len() > 2_000, "{png} is only {} bytes", bytes.len());
    }
}
