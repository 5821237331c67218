//! A sumi cluster on a three-broker Apache Kafka (KRaft, every broker also a
//! controller: a quorum of three that survives one loss; replication factor 3,
//! `min.insync.replicas=2`), all started by the repository's own scripts
//! (`SUMI_KAFKA_BROKERS=3 scripts/cluster-up.sh`). A known load goes to the ingest node
//! over carbon plaintext and JSON bulk; one broker is killed with SIGKILL mid-load and
//! stays down. Nothing acknowledged may be lost: every JSON post answered 2xx and every
//! carbon line the ingest node took in must be readable, value for value, on both
//! storage replicas of its partition, and the appends must have gone through Kafka
//! (two in-sync replicas left), not to the ingest node's spill.
//!
//! The nodes write log records of version 1 (`[cluster] record_version = 1`, what
//! releases before version 2 wrote): the storage nodes' reading of an old log is tested
//! here, version 2 (the default) by the other Kafka tests.
//!
//! Needs Java and Maven, as kafka_cluster.rs; missing, the test fails saying so.

#[path = "common/kafka.rs"]
mod kafka;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use kafka::{diff, metric, rendered, require_kafka, Cluster, Points};

/// One-second slots, so that no point of the load may overwrite another.
const SCHEMAS: &str = "[load]\npattern = ^load\\.\nretentions = 1s:2h\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
/// Series per protocol: `load.c<i>` over carbon, `load.j<i>` over JSON bulk.
const SERIES: usize = 60;
const ROUNDS: i64 = 100;
const KILLED: u32 = 2;

fn up() -> Cluster {
    Cluster::up(
        "sumi-kafka-brokers",
        Some(SCHEMAS),
        &[
            ("SUMI_KAFKA_BROKERS", "3".to_string()),
            ("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string()),
            // the new leaders take a few seconds (measured: up to 4.9 s); an append
            // waits this long for them before it would go to the spill
            ("SUMI_CLUSTER_APPEND_TIMEOUT_MS", "30000".to_string()),
            ("SUMI_CLUSTER_SETTINGS", "record_version = 1".to_string()),
        ],
    )
}

fn value(series: usize, round: i64, json: bool) -> f64 {
    (series * 1000) as f64 + round as f64 + if json { 0.5 } else { 0.0 }
}

#[test]
fn nothing_acknowledged_is_lost_when_a_broker_is_killed_mid_load() {
    require_kafka();
    let t0 = Instant::now();
    let mut cluster = up();
    eprintln!(
        "cluster (3 brokers) up in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(cluster.get("KAFKA_BROKERS"), "3");
    let ingest = cluster.get("INGEST_CARBON").to_string();
    let ingest_http = cluster.get("INGEST_HTTP").to_string();

    let owned: Vec<Vec<u32>> = (1..=3)
        .map(|n| {
            cluster
                .get(&format!("NODE{n}_PARTITIONS"))
                .split(',')
                .map(|p| p.parse().unwrap())
                .collect()
        })
        .collect();
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 1800;

    // the load: a round of every series every 40 ms, over carbon (one connection)
    // and JSON bulk (one post a round; the rounds answered 2xx are the acknowledged
    // ones)
    let carbon = std::thread::spawn(move || {
        let mut conn = TcpStream::connect(&ingest).unwrap();
        for r in 0..ROUNDS {
            let mut lines = String::new();
            for s in 0..SERIES {
                lines.push_str(&format!(
                    "load.c{s:03} {} {}\n",
                    value(s, r, false),
                    base + r
                ));
            }
            conn.write_all(lines.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(40));
        }
    });
    let json_http = ingest_http.clone();
    let json = std::thread::spawn(move || {
        let url = format!("http://{json_http}/api/v0/tsdb");
        let mut acked = Vec::new();
        let mut refused = Vec::new();
        for r in 0..ROUNDS {
            let body: Vec<serde_json::Value> = (0..SERIES)
                .map(|s| {
                    serde_json::json!({
                        "name": format!("load.j{s:03}"),
                        "time": base + r,
                        "value": value(s, r, true),
                    })
                })
                .collect();
            let started = Instant::now();
            match ureq::post(&url)
                .timeout(Duration::from_secs(30))
                .set("Content-Type", "application/json")
                .send_string(&serde_json::Value::Array(body).to_string())
            {
                Ok(resp) if resp.status() / 100 == 2 => acked.push((r, started.elapsed())),
                other => refused.push((r, format!("{other:?}"))),
            }
            std::thread::sleep(Duration::from_millis(40));
        }
        (acked, refused)
    });

    // a broker killed with SIGKILL once a third of the load is in Kafka; it stays down
    let third = (2 * SERIES as i64 * ROUNDS / 3) as f64;
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&ingest_http, "sumi_cluster_produce_points_total") < third {
        assert!(Instant::now() < deadline, "the load does not reach Kafka");
        std::thread::sleep(Duration::from_millis(20));
    }
    let produced_at_kill = metric(&ingest_http, "sumi_cluster_produce_points_total");
    // which broker leads the KRaft quorum (the active controller), for the record
    let leaders: Vec<u32> = (1..=3)
        .filter(|n| {
            cluster
                .file(&format!("kafka{n}/kafka.log"))
                .contains("Completed transition to Leader")
        })
        .collect();
    cluster.broker("kill", KILLED);
    eprintln!(
        "broker {KILLED} killed (brokers that led the controller quorum: {leaders:?}) at {:.1}s, {produced_at_kill} points in Kafka",
        t0.elapsed().as_secs_f64()
    );

    carbon.join().unwrap();
    let (acked, refused) = json.join().unwrap();
    let slowest = acked.iter().map(|(_, d)| *d).max().unwrap_or_default();
    eprintln!(
        "load sent at {:.1}s: {} JSON posts acknowledged (slowest {:.2}s), {} refused",
        t0.elapsed().as_secs_f64(),
        acked.len(),
        slowest.as_secs_f64(),
        refused.len()
    );
    // two in-sync replicas are left of three: Kafka keeps taking appends
    assert!(
        refused.is_empty(),
        "JSON posts refused with one broker of three down: {refused:?}"
    );

    // the carbon lines the ingest node took in are acknowledged by Kafka
    let total = (2 * SERIES as i64 * ROUNDS) as f64;
    kafka::wait_produced(&ingest_http, total, 40, || {
        format!("; its log:\n{}", cluster.file("node0/sumi.log"))
    });
    // ... by Kafka itself, with acks=all over the two brokers left, not by the spill
    assert_eq!(
        metric(&ingest_http, "sumi_cluster_spill_batches_total"),
        0.0,
        "appends went to the spill with two brokers of three up"
    );
    assert_eq!(
        metric(&ingest_http, "sumi_cluster_produce_unavailable_total"),
        0.0
    );

    let mut expected: [Points; 3] = Default::default();
    for s in 0..SERIES {
        for json in [false, true] {
            let name = format!("load.{}{s:03}", if json { 'j' } else { 'c' });
            let p = sumi_cluster::partition_for(&name, PARTITIONS);
            let holders: Vec<usize> = (0..3).filter(|&n| owned[n].contains(&p)).collect();
            assert_eq!(holders.len(), 2, "partition {p} is on two nodes");
            let rounds: Vec<i64> = if json {
                acked.iter().map(|(r, _)| *r).collect()
            } else {
                (0..ROUNDS).collect()
            };
            for n in holders {
                expected[n].insert(
                    name.clone(),
                    rounds
                        .iter()
                        .map(|&r| (base + r, value(s, r, json)))
                        .collect(),
                );
            }
        }
    }

    // both replicas of every partition hold every acknowledged point, value for value
    for n in 1..=3u32 {
        let addr = cluster.get(&format!("NODE{n}_HTTP")).to_string();
        let want = &expected[n as usize - 1];
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let got = rendered(&addr, base - 10, base + ROUNDS + 10, true);
            if &got == want {
                break;
            }
            if Instant::now() > deadline {
                let (missing, extra) = diff(want, &got);
                panic!(
                    "node {n}: {missing} of {} points missing or wrong, {extra} series it does not own; its log:\n{}",
                    want.values().map(|v| v.len()).sum::<usize>(),
                    cluster.file(&format!("node{n}/sumi.log"))
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    eprintln!(
        "both replicas of every partition complete at {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    // and the cluster answers the whole load from any node
    let mut all = Points::new();
    for e in &expected {
        all.extend(e.clone());
    }
    assert_eq!(all.len(), 2 * SERIES);
    let got = rendered(&ingest_http, base - 10, base + ROUNDS + 10, false);
    assert_eq!(diff(&all, &got), (0, 0), "the cluster's answer");

    eprintln!("test done in {:.1}s", t0.elapsed().as_secs_f64());
}
