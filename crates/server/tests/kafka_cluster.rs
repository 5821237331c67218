//! A sumi cluster on a real Apache Kafka, as separate processes started by the
//! repository's own scripts (`scripts/cluster-up.sh`: one Kafka 4.1.0 KRaft broker from
//! Maven Central's jars, one ingest node, three storage nodes, every partition on two of
//! them). Carbon points go to the ingest node; each storage node must then render every
//! point of the series whose partition it owns, value for value, and nothing else. One
//! storage node is killed with SIGKILL mid-load and restarted while the load goes on:
//! it catches up from its checkpointed offset and ends identical to the other replica.
//!
//! Needs Java and Maven (`.ci/run` installs them; the scripts fetch the broker's jars
//! with Maven into target/kafka-libs once). Missing, the test fails saying so; it is
//! never skipped.

#[path = "common/kafka.rs"]
mod kafka;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use kafka::{http_get, metric, require_kafka, Cluster};

/// One-second slots, so that no point of the load may overwrite another.
const SCHEMAS: &str = "[load]\npattern = ^load\\.\nretentions = 1s:2h\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
const SERIES: usize = 120;
const ROUNDS: i64 = 80;

fn up() -> Cluster {
    Cluster::up(
        "sumi-kafka-cluster",
        Some(SCHEMAS),
        &[
            ("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string()),
            ("SUMI_CLUSTER_APPEND_TIMEOUT_MS", "1500".to_string()),
        ],
    )
}

/// Every non-null point of `load.*` a node stores itself (`local=1`: a cluster node
/// otherwise answers for the whole cluster): series → ts → value.
fn rendered(addr: &str, from: i64, until: i64) -> BTreeMap<String, BTreeMap<i64, f64>> {
    kafka::rendered(addr, from, until, true)
}

fn value(series: usize, round: i64) -> f64 {
    (series * 1000) as f64 + round as f64
}

#[test]
fn storage_replicas_hold_every_point_after_a_kill_mid_load() {
    require_kafka();
    let t0 = Instant::now();
    let mut cluster = up();
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    let ingest = cluster.get("INGEST_CARBON").to_string();
    let ingest_http = cluster.get("INGEST_HTTP").to_string();

    // which nodes hold which series
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
    let mut expected: [BTreeMap<String, BTreeMap<i64, f64>>; 3] = Default::default();
    for s in 0..SERIES {
        let name = format!("load.s{s:03}");
        let p = sumi_cluster::partition_for(&name, PARTITIONS);
        let holders: Vec<usize> = (0..3).filter(|&n| owned[n].contains(&p)).collect();
        assert_eq!(holders.len(), 2, "partition {p} is on two nodes");
        for n in holders {
            expected[n].insert(
                name.clone(),
                (0..ROUNDS).map(|r| (base + r, value(s, r))).collect(),
            );
        }
    }

    // the load: one carbon connection, a round of every series each 50 ms
    let sender = std::thread::spawn(move || {
        let mut conn = TcpStream::connect(&ingest).unwrap();
        for r in 0..ROUNDS {
            let mut lines = String::new();
            for s in 0..SERIES {
                lines.push_str(&format!("load.s{s:03} {} {}\n", value(s, r), base + r));
            }
            conn.write_all(lines.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    // node 2 killed once it has checkpointed some of the load, restarted while the
    // load goes on
    let node2 = cluster.get("NODE2_HTTP").to_string();
    let deadline = Instant::now() + Duration::from_secs(3);
    while metric(&node2, "sumi_cluster_consume_checkpoints_total") < 1.0
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let applied_before = metric(&node2, "sumi_cluster_consume_points_total");
    cluster.node("kill", 2);
    std::thread::sleep(Duration::from_millis(1000));
    cluster.node("start", 2);
    sender.join().unwrap();
    assert!(
        applied_before > 0.0,
        "node 2 had applied nothing before it was killed: not mid-load"
    );

    let total = (SERIES as i64 * ROUNDS) as f64;
    kafka::wait_produced(&ingest_http, total, 30, String::new);

    // every replica catches up and then holds exactly its series, value for value
    for n in 1..=3u32 {
        let addr = cluster.get(&format!("NODE{n}_HTTP")).to_string();
        let want = &expected[n as usize - 1];
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = rendered(&addr, base - 10, base + ROUNDS + 10);
            if &got == want {
                break;
            }
            if Instant::now() > deadline {
                let missing: usize = want
                    .iter()
                    .map(|(k, v)| {
                        let g = got.get(k);
                        v.iter()
                            .filter(|(ts, val)| g.and_then(|g| g.get(ts)) != Some(val))
                            .count()
                    })
                    .sum();
                let extra: Vec<&String> = got.keys().filter(|k| !want.contains_key(*k)).collect();
                panic!(
                    "node {n}: {missing} of {} points missing or wrong, {} series it does not own ({:?}); its log:\n{}",
                    want.values().map(|v| v.len()).sum::<usize>(),
                    extra.len(),
                    extra.iter().take(3).collect::<Vec<_>>(),
                    cluster.log(n)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    eprintln!(
        "replicas complete after the kill at {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    // the replicas of each partition agree, also as a sum over everything they hold in
    // common (a point applied twice in a slot could not change it, a lost one would)
    for (a, b) in [(1u32, 2u32), (2, 3), (1, 3)] {
        let common: Vec<&String> = expected[a as usize - 1]
            .keys()
            .filter(|k| expected[b as usize - 1].contains_key(*k))
            .collect();
        assert!(!common.is_empty());
        let target = format!(
            "sumSeries({})",
            common
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        let path = format!(
            "/render?target={target}&from={}&until={}&format=json&local=1",
            base - 10,
            base + ROUNDS + 10
        );
        let ra = http_get(&cluster.get(&format!("NODE{a}_HTTP")), &path);
        let rb = http_get(&cluster.get(&format!("NODE{b}_HTTP")), &path);
        assert_eq!(ra, rb, "nodes {a} and {b} differ on their common series");
        let v: serde_json::Value = serde_json::from_str(&ra).unwrap();
        let sum: f64 = v[0]["datapoints"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p[0].as_f64())
            .sum();
        let want: f64 = common
            .iter()
            .map(|s| expected[a as usize - 1][*s].values().sum::<f64>())
            .sum();
        assert_eq!(sum, want, "sum over nodes {a} and {b}'s common series");
    }
    // the killed node resumed from its checkpoint, not from the log's start
    let log = cluster.log(2);
    let starts: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("storage consumer assigned"))
        .collect();
    assert_eq!(starts.len(), 2, "node 2 started twice:\n{log}");
    assert!(starts[0].contains("offsets={}"), "{}", starts[0]);
    assert!(
        !starts[1].contains("offsets={}"),
        "node 2 restarted without its checkpoint: {}",
        starts[1]
    );

    // Kafka down: the ingest node holds the carbon client back until the append times
    // out as unavailable (then spills it to disk, see kafka_fanout.rs), drops nothing,
    // and delivers once Kafka is back
    cluster.kafka("kill");
    let unavailable0 = metric(&ingest_http, "sumi_cluster_produce_unavailable_total");
    let mut conn = TcpStream::connect(cluster.get("INGEST_CARBON")).unwrap();
    let mut lines = String::new();
    for s in 0..SERIES {
        lines.push_str(&format!(
            "load.s{s:03} {} {}\n",
            value(s, ROUNDS),
            base + ROUNDS
        ));
    }
    conn.write_all(lines.as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(&ingest_http, "sumi_cluster_produce_unavailable_total") <= unavailable0 {
        assert!(
            Instant::now() < deadline,
            "no append was refused as unavailable while Kafka was down"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("appends refused at {:.1}s", t0.elapsed().as_secs_f64());
    cluster.kafka("start");
    eprintln!("kafka restarted at {:.1}s", t0.elapsed().as_secs_f64());
    drop(conn);
    for (n, want) in expected.iter_mut().enumerate() {
        for (name, pts) in want.iter_mut() {
            let s: usize = name["load.s".len()..].parse().unwrap();
            pts.insert(base + ROUNDS, value(s, ROUNDS));
        }
        let addr = cluster.get(&format!("NODE{}_HTTP", n + 1)).to_string();
        let deadline = Instant::now() + Duration::from_secs(40);
        while &rendered(&addr, base - 10, base + ROUNDS + 10) != want {
            assert!(
                Instant::now() < deadline,
                "node {}: the points sent while Kafka was down did not arrive; its log:\n{}",
                n + 1,
                cluster.log(n as u32 + 1)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    eprintln!("test done in {:.1}s", t0.elapsed().as_secs_f64());
}
