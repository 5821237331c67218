//! GrowthForecast posts through a cluster roll up as on a single node, on a real Kafka
//! with separate processes (`scripts/cluster-up.sh`).
//!
//! A single node creates a graph's series with GrowthForecast's rollup (average,
//! xFilesFactor 0) whatever the carbon rules say: a number posted every 5 minutes fills
//! one 10-second slot in 30, and carbon's default xFilesFactor 0.5 would leave every
//! coarser slot empty. The ingest node marks a post's points in the log (record
//! version 3, flag GRAPH) and the storage nodes create the series the same way. The
//! same posts go to a single node and to the cluster's ingest node; read over the last
//! two days (the 5-minute archive), both answer the same values, one a post, and a
//! carbon series sent alongside through the cluster, under the carbon rules, has no
//! rollup of the last day (only its older points, which no rollup made).
//!
//! Needs Java and Maven, like every kafka_* test; never skipped.

mod common;
#[path = "common/kafka.rs"]
mod kafka;

use std::time::{Duration, Instant};

use kafka::{http_get, metric, require_kafka, send_carbon, unix_now, Cluster};

const SCHEMAS: &str = "[default]\npattern = .*\nretentions = 10s:1d,5m:7d\n";
/// Posts every 5 minutes over the last 12.5 hours.
const POSTS: i64 = 150;

fn post(addr: &str, path: &str, number: i64, ts: i64) {
    let resp = ureq::post(&format!("http://{addr}{path}"))
        .timeout(Duration::from_secs(30))
        .send_form(&[
            ("number", &number.to_string()),
            ("mode", "gauge"),
            ("timestamp", &ts.to_string()),
        ])
        .unwrap_or_else(|e| panic!("POST {path} to {addr}: {e}"));
    assert_eq!(resp.status(), 200);
}

/// `(ts, value)` of the non-null points of `target` over the last two days (the
/// 5-minute archive).
fn two_days(addr: &str, target: &str) -> Vec<(i64, f64)> {
    let body = http_get(
        addr,
        &format!("/render?target={target}&from=-2d&format=json"),
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["datapoints"].as_array().unwrap().clone())
        .filter_map(|p| Some((p[1].as_i64()?, p[0].as_f64()?)))
        .collect()
}

#[test]
fn growthforecast_posts_through_the_cluster_roll_up_as_on_a_single_node() {
    require_kafka();
    let t0 = Instant::now();
    let cluster = Cluster::up("sumi-kafka-gf", Some(SCHEMAS), &[]);
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    let single_dir = common::scratch();
    let schemas = single_dir.path().join("schemas.conf");
    std::fs::write(&schemas, SCHEMAS).unwrap();
    let single = common::Sumi::start(
        &single_dir.path().join("data"),
        &[
            "--no-selfmon",
            "--storage-schemas",
            schemas.to_str().unwrap(),
        ],
    );
    let single_http = single.http.to_string();
    let ingest = cluster.get("INGEST_HTTP");

    let end = unix_now() - unix_now() % 300;
    let number = |i: i64| 1000 + (i * 37) % 101;
    let to_single = std::thread::spawn(move || {
        for i in (0..POSTS).rev() {
            post(
                &single_http,
                "/api/cron/jobs/runs",
                number(i),
                end - i * 300,
            );
        }
        single_http
    });
    let mut carbon = String::new();
    for i in (0..POSTS).rev() {
        post(&ingest, "/api/cron/jobs/runs", number(i), end - i * 300);
        carbon.push_str(&format!(
            "control.cron.runs {} {}\n",
            number(i),
            end - i * 300
        ));
    }
    // and a few points older than the 10-second archive's day, which only the
    // 5-minute archive takes, rolled up or not
    for h in 25..30 {
        carbon.push_str(&format!("control.cron.runs 7 {}\n", end - h * 3600));
    }
    send_carbon(&cluster.get("INGEST_CARBON"), &carbon);
    let single_http = to_single.join().unwrap();

    // every point stored on both replicas of each series' partition
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stored: f64 = (1..=3)
            .map(|n| {
                metric(
                    &cluster.get(&format!("NODE{n}_HTTP")),
                    "sumi_cluster_consume_points_total",
                )
            })
            .sum();
        if stored >= (4 * POSTS + 10) as f64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the storage nodes applied {stored} of {} points",
            4 * POSTS + 10
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let want = two_days(&single_http, "cron.jobs.runs");
    // the last day is in the 5-minute archive only through rollups of sparse slots
    assert!(
        want.len() >= POSTS as usize - 2,
        "the single node's rollup has {} points: {want:?}",
        want.len()
    );
    let got = two_days(&ingest, "cron.jobs.runs");
    assert_eq!(
        got, want,
        "the cluster's rollup differs from the single node's"
    );
    for n in 1..=3 {
        let addr = cluster.get(&format!("NODE{n}_HTTP"));
        let local = two_days(&addr, "cron.jobs.runs&local=1");
        assert!(
            local.is_empty() || local == want,
            "node {n}'s own rollup differs"
        );
    }
    // the carbon series, under the carbon rules (xFilesFactor 0.5), has no recent
    // rollup, on the single node's rules as on the cluster's
    let control = two_days(&ingest, "control.cron.runs");
    let recent = control.iter().filter(|(t, _)| *t > end - 20 * 3600).count();
    assert_eq!(recent, 0, "{control:?}");
    assert!(!control.is_empty(), "the carbon series' old points");
    eprintln!("done in {:.1}s", t0.elapsed().as_secs_f64());
}
