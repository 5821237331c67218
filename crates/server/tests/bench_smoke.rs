//! A smoke run of `sumi bench` against the real server it starts itself: small enough
//! for CI, so the load generator, its report and its latency probes cannot rot.

mod common;

use std::process::Command;

use common::{scratch, Sumi};

/// The JSON report on the last `{` line of a `sumi bench --json` run that succeeded.
fn json_report(out: &std::process::Output) -> serde_json::Value {
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
    serde_json::from_str(line).expect("report is JSON")
}

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
    let r = json_report(&out);
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
    let r = json_report(&run);
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

/// `sumi bench --tagged N` against a running server: the first N series go out in
/// Graphite's tagged form with every point, the rest plain; the bench's `seriesByTag`
/// probes find exactly what the workload says; and `seriesByTag` answers (render and
/// `/tags/findSeries`) equal a plain filter over every tagged name the server holds.
#[test]
fn bench_tagged_sends_tagged_series_and_finds_them() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &["--no-selfmon"]);
    let (series, tagged, points) = (3_000u64, 2_500u64, 4u64);
    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["bench", "--carbon", &sumi.carbon.to_string(), "--http"])
        .arg(sumi.http.to_string())
        .args(["--pid", &sumi.pid.to_string()])
        .args([
            "--series",
            &series.to_string(),
            "--points",
            &points.to_string(),
        ])
        .args(["--tagged", &tagged.to_string()])
        .args(["--probes", "2", "--no-progress", "--json"])
        .output()
        .expect("run sumi bench --tagged");
    let r = json_report(&out);
    assert_eq!(r["error"], serde_json::Value::Null, "{r}");
    assert_eq!(r["sent_points"], series * points, "{r}");
    assert_eq!(r["queryable_reached"], true, "{r}");
    let probes = r["probes"].as_array().expect("probes");
    let probe = |what: &str| {
        probes
            .iter()
            .find(|p| p["what"].as_str().is_some_and(|w| w.starts_with(what)))
            .unwrap_or_else(|| panic!("no {what} probe in {r}"))
    };
    // hosts 0..25 are tagged; dc3 and host000xx..host004xx: hosts 3, 13 and 23
    for what in ["seriesByTag(", "/tags/findSeries?"] {
        let p = probe(what);
        assert_eq!(p["answer_size"], 3, "{p}");
        assert_eq!(p["runs"], 2, "{p}");
        assert!(p["median_ms"].as_f64().is_some_and(|m| m > 0.0), "{p}");
    }
    // the plain series still get the find probes: hosts 25..30
    assert_eq!(
        probe("/metrics/find?query=bench.*.cpu.user")["answer_size"],
        5
    );

    // every tagged name the server holds, then graphite's tag queries against a plain
    // filter over them
    let all: Vec<String> =
        serde_json::from_value(sumi.get_json("/tags/findSeries?expr=dc%3D~dc.*")).unwrap();
    assert_eq!(all.len() as u64, tagged);
    let tag = |name: &str, t: &str| -> Option<String> {
        let mut parts = name.split(';');
        let metric = parts.next().unwrap_or_default().to_string();
        if t == "name" {
            return Some(metric);
        }
        parts.find_map(|kv| kv.strip_prefix(&format!("{t}=")).map(str::to_string))
    };
    type Filter = Box<dyn Fn(&str) -> bool>;
    let cases: Vec<(&[&str], Filter)> = vec![
        (
            &["name=bench.cpu.user", "dc=dc3", "host=~host00[0-4].*"],
            Box::new(move |n: &str| {
                tag(n, "name").as_deref() == Some("bench.cpu.user")
                    && tag(n, "dc").as_deref() == Some("dc3")
                    && tag(n, "host").is_some_and(|h| {
                        h.strip_prefix("host00")
                            .is_some_and(|r| r.starts_with(['0', '1', '2', '3', '4']))
                    })
            }),
        ),
        (
            &["role=db", "dc!=dc4", "name=~bench.memory.(used|free)$"],
            Box::new(move |n: &str| {
                tag(n, "role").as_deref() == Some("db")
                    && tag(n, "dc").as_deref() != Some("dc4")
                    && matches!(
                        tag(n, "name").as_deref(),
                        Some("bench.memory.used" | "bench.memory.free")
                    )
            }),
        ),
        (
            &["host=host00013", "name!=~bench.cpu.*"],
            Box::new(move |n: &str| {
                tag(n, "host").as_deref() == Some("host00013")
                    && !tag(n, "name").is_some_and(|m| m.starts_with("bench.cpu"))
            }),
        ),
    ];
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    // graphite's `from` is exclusive
    let from = r["first_ts"].as_i64().unwrap() - 1;
    let until = r["last_ts"].as_i64().unwrap();
    for (exprs, keep) in cases {
        let mut want: Vec<String> = all.iter().filter(|n| keep(n)).cloned().collect();
        want.sort();
        assert!(!want.is_empty(), "{exprs:?} selects nothing");
        let query: Vec<String> = exprs.iter().map(|e| format!("expr={}", enc(e))).collect();
        let mut found: Vec<String> =
            serde_json::from_value(sumi.get_json(&format!("/tags/findSeries?{}", query.join("&"))))
                .unwrap();
        found.sort();
        assert_eq!(found, want, "/tags/findSeries {exprs:?}");
        let target = format!(
            "seriesByTag({})",
            exprs
                .iter()
                .map(|e| format!("'{e}'"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let render = sumi.get_json(&format!(
            "/render?target={}&from={from}&until={until}&format=json",
            enc(&target)
        ));
        let mut rendered: Vec<String> = render
            .as_array()
            .expect("render answer")
            .iter()
            .map(|s| s["target"].as_str().unwrap().to_string())
            .collect();
        rendered.sort();
        assert_eq!(rendered, want, "{target}");
        // every tagged series holds every point the bench sent
        for s in render.as_array().unwrap() {
            let n = s["datapoints"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| !p[0].is_null())
                .count();
            assert_eq!(n as u64, points, "{s}");
        }
    }
}
