//! Self-monitoring end to end: with `interval_secs = 1` sumi's own series appear under
//! the prefix and count the points sent, readable with `/render` like carbon's.

mod common;

use std::time::{Duration, Instant};

use common::{now, scratch, Sumi};

/// One-second slots for the own series, so that no report overwrites another.
const SCHEMAS: &str = "[sumi]\npattern = ^sumi\\.\nretentions = 1s:1h\n\n[default]\npattern = .*\nretentions = 10s:1d\n";

/// The sum of the non-null values of every series `target` matches over the last
/// 10 minutes, and the targets' names.
fn sum_of(sumi: &Sumi, target: &str) -> (f64, Vec<String>) {
    let json = sumi.get_json(&format!("/render?target={target}&from=-10min&format=json"));
    let mut sum = 0.0;
    let mut names = Vec::new();
    for series in json.as_array().unwrap() {
        names.push(series["target"].as_str().unwrap().to_string());
        for p in series["datapoints"].as_array().unwrap() {
            sum += p[0].as_f64().unwrap_or(0.0);
        }
    }
    (sum, names)
}

/// Waits (bounded) until `target` sums to `want`.
fn wait_sum(sumi: &Sumi, target: &str, want: f64) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (sum, names) = sum_of(sumi, target);
        if sum == want {
            return names;
        }
        assert!(
            sum < want && Instant::now() < deadline,
            "{target} sums to {sum}, want {want}:\n{}",
            sumi.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn own_series_count_the_points_sent() {
    let dir = scratch();
    let schemas = dir.path().join("storage-schemas.conf");
    std::fs::write(&schemas, SCHEMAS).unwrap();
    let config = dir.path().join("sumi.toml");
    std::fs::write(
        &config,
        "[selfmon]\ninterval_secs = 1\nprefix = \"sumi.agents.testhost\"\n",
    )
    .unwrap();
    let sumi = Sumi::start(
        &dir.path().join("data"),
        &[
            "--config",
            config.to_str().unwrap(),
            "--storage-schemas",
            schemas.to_str().unwrap(),
        ],
    );
    let t = now() - 30;
    let mut text = String::new();
    for i in 0..25 {
        text.push_str(&format!("app.host{}.requests {i} {t}\n", i % 5));
    }
    text.push_str(&format!(
        "app.bad notanumber {t}\napp.bad nan {t}\napp.bad x {t}\n"
    ));
    sumi.send_tcp(text.as_bytes());
    sumi.send_udp(format!("app.udp.requests 1 {t}\n").as_bytes());

    // carbon's layout, a wildcard over hosts, and the exact counts of what was sent
    let names = wait_sum(&sumi, "sumi.agents.*.pointsReceived", 29.0);
    assert_eq!(names, ["sumi.agents.testhost.pointsReceived"]);
    wait_sum(&sumi, "sumi.agents.testhost.metricsReceived", 29.0);
    wait_sum(&sumi, "sumi.agents.testhost.pointsRejected", 3.0);
    wait_sum(&sumi, "sumi.agents.testhost.rejected.invalid_value", 2.0);
    wait_sum(&sumi, "sumi.agents.testhost.rejected.nan_value", 1.0);
    // committed points include the own series of earlier reports
    let deadline = Instant::now() + Duration::from_secs(60);
    while sum_of(&sumi, "sumi.agents.testhost.committedPoints").0 < 26.0 {
        assert!(Instant::now() < deadline, "{}", sumi.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }

    // queries are counted and timed: ask a few, then wait for them to be reported
    let (before, _) = sum_of(&sumi, "sumi.agents.testhost.queries.render.count");
    for _ in 0..3 {
        sumi.get_json("/metrics/find?query=app.*");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (finds, _) = sum_of(&sumi, "sumi.agents.testhost.queries.find.count");
        let (renders, _) = sum_of(&sumi, "sumi.agents.testhost.queries.render.count");
        // every sum_of is itself a render, counted in a later report
        if finds >= 3.0 && renders > before {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "finds {finds}, renders {renders}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // gauges and process numbers are there with plausible values
    let leaves = sumi.get_json("/metrics/find?query=sumi.agents.testhost.*");
    let texts: Vec<&str> = leaves
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    for want in [
        "pointsReceived",
        "committedPoints",
        "creates",
        "errors",
        "cpuUsage",
        "memUsage",
        "activeConnections",
        "series",
        "wal",
        "head",
        "queries",
        "rejected",
    ] {
        assert!(texts.contains(&want), "{want} missing in {texts:?}");
    }
    let json =
        sumi.get_json("/render?target=sumi.agents.testhost.memUsage&from=-10min&format=json");
    let rss = json[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find_map(|p| p[0].as_f64())
        .unwrap();
    assert!(rss > 1e6 && rss < 1e11, "memUsage {rss}");
    let (series, _) = sum_of(&sumi, "sumi.agents.testhost.series");
    assert!(series > 0.0);
    let (errors, _) = sum_of(&sumi, "sumi.agents.testhost.errors");
    assert_eq!(errors, 0.0);
}
