//! Issue 10, "replicas cannot diverge", for retention: a storage node that replays its
//! log late expires what the live replica did, and their coarse archives agree value
//! for value. Real Kafka, separate processes (`scripts/cluster-up.sh`: three storage
//! nodes, every partition on two of them).
//!
//! A short finest archive (`1s:20s,10s:1h`, rollups without grace): storage node 2 is
//! stopped, a burst of 20 seconds of points is sent (every point fine-grained at its
//! arrival), and node 2 restarts 30 s later — past the finest archive's retention by
//! its clock — with a capped apply rate, so that its maintenance runs between its
//! batches. Judged by its clock, its retention dropped a fine partition after its first
//! batch, and the rest of the replay re-rolled the coarse slots from part of their
//! points (session 9's `rollup_replicas` divergence); judged by the log's time
//! (`sumi_cluster::log_time`) nothing of the replay expires before it is applied.
//! Then node 2's coarse values equal node 1's and the averages of what was sent.
//!
//! Needs Java and Maven, like every kafka_* test; never skipped.

#[path = "common/kafka.rs"]
mod kafka;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka::{metric, points_of, require_kafka, send_carbon, Cluster, Points};

const SCHEMAS: &str = "[load]\npattern = ^load\\.\nretentions = 1s:20s,10s:1h\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
const SERIES: usize = 30;
const BURST: i64 = 20;

fn value(series: usize, k: i64) -> f64 {
    (series * 100) as f64 + (k * k % 37) as f64
}

/// The coarse (10 s) view a node holds itself of the series in `parts`.
fn coarse(addr: &str, parts: &[u32]) -> Points {
    let body = kafka::http_get(
        addr,
        "/render?target=load.*&from=-50min&until=now&format=json&local=1",
    );
    points_of(&body)
        .into_iter()
        .filter(|(n, _)| parts.contains(&sumi_cluster::partition_for(n, PARTITIONS)))
        .collect()
}

/// `series ts: a b` wherever the two differ (by more than `tolerance`, relative).
fn differences(a: &Points, b: &Points, tolerance: f64) -> Vec<String> {
    let mut out = Vec::new();
    for name in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
        let (x, y) = (a.get(name), b.get(name));
        let empty = BTreeMap::new();
        let (x, y) = (x.unwrap_or(&empty), y.unwrap_or(&empty));
        for ts in x.keys().chain(y.keys().filter(|t| !x.contains_key(*t))) {
            let same = match (x.get(ts), y.get(ts)) {
                (Some(p), Some(q)) => (p - q).abs() <= tolerance * p.abs().max(q.abs()),
                (p, q) => p == q,
            };
            if !same {
                out.push(format!("{name} {ts}: {:?} {:?}", x.get(ts), y.get(ts)));
            }
        }
    }
    out
}

#[test]
fn a_replica_replaying_late_expires_what_the_live_one_did() {
    require_kafka();
    let t0 = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("sumi-kafka-logtime")
        .tempdir()
        .unwrap();
    let schemas = dir.path().join("schemas.conf");
    std::fs::write(&schemas, SCHEMAS).unwrap();
    let mut cluster = Cluster::up_in(
        dir,
        &format!("--no-selfmon --storage-schemas {}", schemas.display()),
        &[
            ("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string()),
            (
                "SUMI_NODE_TOML",
                "[storage]\nrollup_grace_secs = 0\n".to_string(),
            ),
        ],
    );
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    let carbon = cluster.get("INGEST_CARBON");
    let ingest = cluster.get("INGEST_HTTP");
    let parts1 = cluster.partitions_of(1);
    let parts2 = cluster.partitions_of(2);
    let shared: Vec<u32> = parts1
        .iter()
        .copied()
        .filter(|p| parts2.contains(p))
        .collect();
    assert!(!shared.is_empty());

    cluster.node("stop", 2);
    // the last BURST seconds, one connection a second's points (several records)
    let now = kafka::unix_now();
    let start = now - BURST + 1;
    let mut sent: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    for k in 0..BURST {
        let mut text = String::new();
        for s in 0..SERIES {
            let name = format!("load.s{s:03}");
            text.push_str(&format!("{name} {} {}\n", value(s, k), start + k));
            sent.entry(name).or_default().insert(start + k, value(s, k));
        }
        send_carbon(&carbon, &text);
    }
    kafka::wait_produced(&ingest, (SERIES as i64 * BURST) as f64, 30, String::new);

    // node 2 comes back past the finest archive's retention, and replays slowly
    std::thread::sleep(Duration::from_secs(30));
    let config = cluster.config(2);
    let toml = std::fs::read_to_string(&config).unwrap();
    let slow = toml.replacen(
        "[cluster]\n",
        "[cluster]\nconsume_max_points_per_sec = 40\n",
        1,
    );
    assert_ne!(slow, toml);
    std::fs::write(&config, slow).unwrap();
    cluster.node("start", 2);
    let node1 = cluster.get("NODE1_HTTP");
    let node2 = cluster.get("NODE2_HTTP");
    let owned2 = sent
        .keys()
        .filter(|n| parts2.contains(&sumi_cluster::partition_for(n, PARTITIONS)))
        .count() as f64
        * BURST as f64;
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(&node2, "sumi_cluster_consume_points_total") < owned2 {
        assert!(
            Instant::now() < deadline,
            "node 2 did not replay its {owned2} points; its log:\n{}",
            cluster.log(2)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // its maintenance ran between the batches
    std::thread::sleep(Duration::from_secs(3));

    // the coarse slots' averages of what was sent (xFilesFactor 0.5: half the slot)
    let want: Points = sent
        .iter()
        .filter(|(n, _)| shared.contains(&sumi_cluster::partition_for(n, PARTITIONS)))
        .map(|(n, pts)| {
            let mut slots: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
            for (&ts, &v) in pts {
                slots.entry(ts - ts.rem_euclid(10)).or_default().push(v);
            }
            let avg = slots
                .into_iter()
                .filter(|(_, vs)| vs.len() * 2 >= 10)
                .map(|(slot, vs)| (slot, vs.iter().sum::<f64>() / vs.len() as f64))
                .collect();
            (n.clone(), avg)
        })
        .collect();
    let (v1, v2) = (coarse(&node1, &shared), coarse(&node2, &shared));
    assert_eq!(
        // the average summed in another order: the last bit may differ
        differences(&want, &v1, 1e-12),
        Vec::<String>::new(),
        "node 1 (live) against what was sent"
    );
    assert_eq!(
        // replicas: bit for bit
        differences(&v1, &v2, 0.0),
        Vec::<String>::new(),
        "node 2 (replayed late) against node 1; node 2's log:\n{}",
        cluster.log(2)
    );
    eprintln!("done at {:.1}s", t0.elapsed().as_secs_f64());
}
