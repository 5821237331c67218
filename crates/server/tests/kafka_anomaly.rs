//! Anomaly detection on storage nodes, on a real Kafka with separate processes
//! (`scripts/cluster-up.sh`: one ingest node, three storage nodes, every partition on
//! two of them, every node with the same `[[anomaly]]` rule).
//!
//! A series with a spike is sent through the ingest node. Each of the two storage
//! nodes of its partition scores the points it applies from the log, so:
//! - both report the spike as an anomaly event (`/api/anomalies` on each node alone,
//!   `local=1`), with the same id, interval, peak and reason;
//! - both hold the same scores, point for point (`anomalyScore()` read from each
//!   node's own store), and the spike scores high;
//! - the third storage node, which does not store the series, reports nothing;
//! - any node (the ingest node here) answers for the cluster: the event once, and
//!   `anomalyScore()` equal to the replicas' scores, zeros included.
//!
//! Needs Java and Maven, like every kafka_* test; never skipped.

#[path = "common/kafka.rs"]
mod kafka;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka::{http_get, metric, require_kafka, send_carbon, unix_now, Cluster};

const PARTITIONS: u32 = 6;
const STEP: i64 = 10;
const SERIES: &str = "app.web.latency";
/// The scores (`_anomaly.app.…`) take the same 10 s archive as their series.
const SCHEMAS: &str = "[app]\npattern = ^(_anomaly\\.)?app\\.\nretentions = 10s:1d,60s:7d\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const RULE: &str = "[[anomaly]]\nmatch = \"app.*.latency\"\n";

/// A deterministic, noisy, slowly varying series.
fn value(i: usize) -> f64 {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d;
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    let noise = (x % 1000) as f64 / 1000.0 - 0.5;
    100.0 + 5.0 * (i as f64 / 40.0).sin() + 2.0 * noise
}

/// `(ts, score)` of every slot of `target`'s first series (null = None).
fn scores(addr: &str, target: &str, from: i64, local: bool) -> Vec<(i64, Option<f64>)> {
    let body = http_get(
        addr,
        &format!(
            "/render?target={target}&from={from}&format=json{}",
            if local { "&local=1" } else { "" }
        ),
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v[0]["datapoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no series in {body:.300}"))
        .iter()
        .map(|p| (p[1].as_i64().unwrap(), p[0].as_f64()))
        .collect()
}

/// The events of `/api/anomalies` (series, start, end, peak, peak_ts, reason, id).
fn events(addr: &str, from: i64, local: bool) -> Vec<serde_json::Value> {
    let body = http_get(
        addr,
        &format!(
            "/api/anomalies?from={from}&until={}&match=app.*.latency{}",
            unix_now() + 60,
            if local { "&local=1" } else { "" }
        ),
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["anomalies"].as_array().unwrap().clone()
}

#[test]
fn a_spike_sent_through_the_ingest_node_is_an_anomaly_on_both_replicas_with_equal_scores() {
    require_kafka();
    let t0 = Instant::now();
    let cluster = Cluster::up(
        "sumi-kafka-anomaly",
        Some(SCHEMAS),
        &[
            ("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string()),
            ("SUMI_NODE_TOML", RULE.to_string()),
        ],
    );
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    let ingest = cluster.get("INGEST_HTTP");
    assert!(
        cluster
            .file("node0/sumi.log")
            .contains("rules are ignored on a cluster's ingest node"),
        "the ingest node does not say it ignores its rules:\n{}",
        cluster.file("node0/sumi.log")
    );
    let p = sumi_cluster::partition_for(SERIES, PARTITIONS);
    let (replicas, other): (Vec<u32>, Vec<u32>) =
        (1..=3).partition(|&n| cluster.partitions_of(n).contains(&p));
    assert_eq!(replicas.len(), 2, "partition {p} on {replicas:?}");

    let n = 300;
    let spike = 250;
    let start = (unix_now() - 60 - n as i64 * STEP) / STEP * STEP;
    let pts: Vec<(i64, f64)> = (0..n)
        .map(|i| {
            let v = if i == spike { 400.0 } else { value(i) };
            (start + i as i64 * STEP, v)
        })
        .collect();
    let text: String = pts
        .iter()
        .map(|(t, v)| format!("{SERIES} {v} {t}\n"))
        .collect();
    send_carbon(&cluster.get("INGEST_CARBON"), &text);

    // each replica scores every point after the detector's warm-up (32 points)
    for &r in &replicas {
        let addr = cluster.get(&format!("NODE{r}_HTTP"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while metric(&addr, "sumi_anomaly_points_scored_total") < (n - 32) as f64 {
            assert!(
                Instant::now() < deadline,
                "node {r} scored {} points; its log:\n{}",
                metric(&addr, "sumi_anomaly_points_scored_total"),
                cluster.log(r)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(metric(&addr, "sumi_anomaly_points_unscored_total"), 32.0);
        assert_eq!(metric(&addr, "sumi_anomaly_series_watched"), 1.0);
    }
    for &o in &other {
        let addr = cluster.get(&format!("NODE{o}_HTTP"));
        assert_eq!(metric(&addr, "sumi_anomaly_points_scored_total"), 0.0);
        assert!(events(&addr, start - STEP, true).is_empty());
    }

    // the same scores on both replicas, read from each one's own store
    let spike_ts = pts[spike].0;
    let per_replica: Vec<Vec<(i64, Option<f64>)>> = replicas
        .iter()
        .map(|r| {
            let addr = cluster.get(&format!("NODE{r}_HTTP"));
            scores(
                &addr,
                &format!("anomalyScore({SERIES})"),
                start - STEP,
                true,
            )
        })
        .collect();
    assert_eq!(
        per_replica[0], per_replica[1],
        "the replicas' scores differ"
    );
    let scored: BTreeMap<i64, f64> = per_replica[0]
        .iter()
        .filter_map(|(t, v)| v.map(|v| (*t, v)))
        .collect();
    assert_eq!(scored.len(), n - 32, "scored points");
    let spike_score = scored[&spike_ts];
    assert!(spike_score >= 0.6, "spike scored {spike_score}");
    let calm_max = scored
        .range(..spike_ts)
        .map(|(_, v)| *v)
        .fold(0.0, f64::max);
    assert!(
        calm_max < spike_score,
        "calm max {calm_max} vs spike {spike_score}"
    );

    // the same event on both replicas
    let per_replica: Vec<Vec<serde_json::Value>> = replicas
        .iter()
        .map(|r| events(&cluster.get(&format!("NODE{r}_HTTP")), start - STEP, true))
        .collect();
    assert_eq!(
        per_replica[0], per_replica[1],
        "the replicas' events differ"
    );
    let list = &per_replica[0];
    let e = list
        .iter()
        .find(|e| e["peak_ts"].as_i64() == Some(spike_ts))
        .unwrap_or_else(|| panic!("no event peaking at the spike {spike_ts}: {list:?}"));
    assert_eq!(e["series"], SERIES);
    assert_eq!(e["peak"].as_f64(), Some(spike_score));
    assert!(e["start"].as_i64().unwrap() <= spike_ts);

    // any node answers for the cluster: the events once, the scores as stored
    let all = events(&ingest, start - STEP, false);
    assert_eq!(&all, list, "the ingest node's events");
    let through = scores(
        &ingest,
        &format!("anomalyScore({SERIES})"),
        start - STEP,
        false,
    );
    let through: BTreeMap<i64, f64> = through
        .iter()
        .filter_map(|(t, v)| v.map(|v| (*t, v)))
        .collect();
    assert_eq!(through, scored, "anomalyScore through the ingest node");
    eprintln!("done in {:.1}s", t0.elapsed().as_secs_f64());
}
