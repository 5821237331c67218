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
    assert!(r["stored_points"].as_u64().is_some_and(|n| n >= 1800), "{r}");
    assert_eq!(r["queryable_reached"], true, "{r}");
    assert!(r["points_per_sec"].as_f64().is_some_and(|p| p > 0.0));
    assert!(r["server_cpu_secs"].as_f64().is_some_and(|s| s > 0.0));
    assert!(r["peak_rss_bytes"].as_u64().is_some_and(|b| b > 1 << 20));
    assert!(r["disk_bytes"].as_u64().is_some_and(|b| b > 0));
    assert_eq!(r["stop_killed"], false, "SIGTERM ends a started server: {r}");

    let probes = r["probes"].as_array().expect("probes");
    assert!(probes.len() >= 3, "{r}");
    for p in probes {
        assert_eq!(p["runs"], 3, "{p}");
        let median = p["median_ms"].as_f64().expect("median");
        assert!(median > 0.0 && median <= p["max_ms"].as_f64().unwrap(), "{p}");
        assert!(p["answer_size"].as_u64().is_some_and(|n| n > 0), "{p}");
    }
}
