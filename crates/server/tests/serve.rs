//! `sumi serve` end to end: carbon plaintext in, Graphite's HTTP API out, across restarts.

mod common;

use common::{now, points_of, scratch, Sumi};

const SCHEMAS: &str = "[short]\npattern = ^short\\.\nretentions = 10s:1h,1m:1d\n\n[default]\npattern = .*\nretentions = 10s:6h,1m:7d\n";
const AGGREGATION: &str = "[sums]\npattern = \\.count$\nxFilesFactor = 0\naggregationMethod = sum\n\n[default]\npattern = .*\nxFilesFactor = 0.5\naggregationMethod = average\n";

fn start_with_rules(dir: &std::path::Path) -> Sumi {
    let schemas = dir.join("storage-schemas.conf");
    let aggregation = dir.join("storage-aggregation.conf");
    std::fs::write(&schemas, SCHEMAS).unwrap();
    std::fs::write(&aggregation, AGGREGATION).unwrap();
    Sumi::start(
        &dir.join("data"),
        &[
            "--storage-schemas",
            schemas.to_str().unwrap(),
            "--storage-aggregation",
            aggregation.to_str().unwrap(),
        ],
    )
}

#[test]
fn plaintext_in_render_and_find_out() {
    let dir = scratch();
    let sumi = start_with_rules(dir.path());
    let t = now() - now() % 10 - 300;
    let mut text = String::new();
    for i in 0..20 {
        let ts = t + i * 10;
        text.push_str(&format!("servers.web01.cpu.user {} {ts}\n", i as f64 * 1.5));
        text.push_str(&format!("servers.web02.cpu.user {} {ts}\n", 100 - i));
        text.push_str(&format!("servers.web01.requests.count {} {ts}\n", i));
    }
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored(60);

    // render: both hosts, sorted by name, exact values at their slots
    let q = format!(
        "/render?target=servers.*.cpu.user&from={}&until={}&format=json",
        t - 1,
        t + 190
    );
    let json = sumi.get_json(&q);
    assert_eq!(json.as_array().unwrap().len(), 2, "{json}");
    assert_eq!(json[0]["target"], "servers.web01.cpu.user");
    assert_eq!(json[1]["target"], "servers.web02.cpu.user");
    assert_eq!(json[0]["tags"]["name"], "servers.web01.cpu.user");
    let p0 = points_of(&json, 0);
    assert_eq!(p0.len(), 20, "{json}");
    for (i, (v, ts)) in p0.iter().enumerate() {
        assert_eq!(*v, i as f64 * 1.5);
        assert_eq!(*ts, t + i as i64 * 10);
    }
    assert_eq!(points_of(&json, 1)[19], (81.0, t + 190));

    // the same through POST with two targets
    let (status, body) = sumi.post_form(
        "/render",
        &[
            ("target", "servers.web01.cpu.user"),
            ("target", "servers.web02.cpu.user"),
            ("from", &(t - 1).to_string()),
            ("until", &(t + 190).to_string()),
            ("format", "json"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let post: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(post, json);

    // find: branches and leaves
    let nodes = sumi.get_json("/metrics/find?query=servers.*");
    let texts: Vec<&str> = nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["web01", "web02"], "{nodes}");
    assert_eq!(nodes[0]["leaf"], 0);
    let leaves = sumi.get_json("/metrics/find?query=servers.web01.cpu.*");
    assert_eq!(leaves[0]["id"], "servers.web01.cpu.user");
    assert_eq!(leaves[0]["leaf"], 1);
    let index = sumi.get_json("/metrics/index.json");
    assert_eq!(
        index,
        serde_json::json!([
            "servers.web01.cpu.user",
            "servers.web01.requests.count",
            "servers.web02.cpu.user"
        ])
    );

    // a coarse archive: from beyond the first archive's 6 hours picks the minute archive;
    // `.count` sums its six 10-second slots
    let q = format!(
        "/render?target=servers.web01.requests.count&from=-7h&until={}&format=json",
        t + 190
    );
    let json = sumi.get_json(&q);
    let pts = points_of(&json, 0);
    let step = json[0]["datapoints"][1][1].as_i64().unwrap()
        - json[0]["datapoints"][0][1].as_i64().unwrap();
    assert_eq!(step, 60, "{json}");
    let total: f64 = pts.iter().map(|p| p.0).sum();
    assert_eq!(total, (0..20).sum::<i64>() as f64, "{json}");

    // Prometheus counters
    assert_eq!(sumi.metric("sumi_points_stored_total"), 60.0);
    assert!(sumi.metric("sumi_points_received_total") >= 60.0);
    assert_eq!(sumi.metric("sumi_series_active"), 3.0);
    assert_eq!(sumi.get("/health").0, 200);
}

#[test]
fn udp_points_arrive() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let ts = now() - 60;
    sumi.send_udp(format!("udp.a 1 {ts}\nudp.b 2 {ts}\n").as_bytes());
    sumi.wait_stored(2);
    let json = sumi.get_json("/render?target=udp.*&from=-5min&format=json");
    assert_eq!(points_of(&json, 0), vec![(1.0, ts - ts % 10)]);
    assert_eq!(points_of(&json, 1), vec![(2.0, ts - ts % 10)]);
}

#[test]
fn graceful_restart_keeps_everything() {
    let dir = scratch();
    let data = dir.path().join("data");
    let mut sumi = Sumi::start(&data, &[]);
    let t = now() - now() % 10 - 600;
    let mut text = String::new();
    for s in 0..50 {
        for i in 0..30 {
            text.push_str(&format!(
                "restart.s{s:02}.v {} {}\n",
                s * 1000 + i,
                t + i * 10
            ));
        }
    }
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored(1500);
    let before = sumi.get_json("/render?target=restart.*.v&from=-20min&format=json");
    sumi.stop();

    let sumi = Sumi::start(&data, &[]);
    let after = sumi.get_json("/render?target=restart.*.v&from=-20min&format=json");
    assert_eq!(after.as_array().unwrap().len(), 50);
    let n: usize = (0..50).map(|i| points_of(&after, i).len()).sum();
    assert_eq!(n, 1500);
    // same answer, except that "now" moved on: compare the non-null points
    for i in 0..50 {
        assert_eq!(points_of(&before, i), points_of(&after, i));
    }
}
