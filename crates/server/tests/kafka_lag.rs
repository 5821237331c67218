//! Reads choose replicas by lag, on a real Kafka with separate processes
//! (`scripts/cluster-up.sh`: three storage nodes, every partition on two of them).
//!
//! Storage node 2 is killed with SIGKILL under load, the load goes on, and node 2 is
//! restarted with its apply rate capped (`consume_max_points_per_sec`), so that it
//! replays its backlog for several seconds. Meanwhile:
//! - a cluster read asked of node 2 itself (which would read its own partitions from
//!   its own store, a stale and short answer) is complete, equal to what the other
//!   replicas hold, and not marked partial, while node 2's own store is still short;
//! - `sumi cluster status` shows node 2's partitions `replaying`;
//! - with the other replica of some of node 2's partitions killed too, node 2 is the
//!   last one left for them: it answers, and the answer says those partitions are
//!   stale (`X-Sumi-Partial: stale=...`, `sumi_cluster_read_stale_total`).
//!
//! Then node 2 catches up and is counted as a replica again. Last, a load faster than
//! its cap makes it lag while running, beyond its `read_max_lag_records`: it is
//! `lagging` on a partition it is the last replica of, and its answer says that
//! partition is stale.
//!
//! Needs Java and Maven, like every kafka_* test; never skipped.

#[path = "common/kafka.rs"]
mod kafka;

use std::process::Command;
use std::time::{Duration, Instant};

use kafka::{diff, get, metric, points_of, rendered, require_kafka, send_carbon, Cluster, Points};

/// One-second slots, so that no point overwrites another.
const SCHEMAS: &str = "[load]\npattern = ^load\\.\nretentions = 1s:2h\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
const SERIES: usize = 60;
/// Rounds sent before the kill, and while node 2 is down.
const BEFORE: i64 = 20;
const WHILE_DOWN: i64 = 150;
/// Node 2's apply rate after the restart: its backlog (two thirds of
/// `SERIES * WHILE_DOWN` points) takes it about 15 s.
const CAP: u64 = 400;

fn lines(base: i64, rounds: std::ops::Range<i64>) -> String {
    let mut out = String::new();
    for r in rounds {
        for s in 0..SERIES {
            out.push_str(&format!("load.s{s:03} {} {}\n", value(s, r), base + r));
        }
    }
    out
}

fn value(series: usize, round: i64) -> f64 {
    (series * 1000) as f64 + round as f64
}

/// What the nodes in `on` (1-based) should hold of rounds `0..rounds`.
fn expected(base: i64, rounds: i64, parts: &[u32]) -> Points {
    (0..SERIES)
        .map(|s| format!("load.s{s:03}"))
        .filter(|n| parts.contains(&sumi_cluster::partition_for(n, PARTITIONS)))
        .map(|n| {
            let s: usize = n["load.s".len()..].parse().unwrap();
            let pts = (0..rounds).map(|r| (base + r, value(s, r))).collect();
            (n, pts)
        })
        .collect()
}

fn wait_local(cluster: &Cluster, n: u32, want: &Points, from: i64, until: i64) {
    kafka::wait_local(cluster, n, want, from, until, 30);
}

fn status(cluster: &Cluster) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["cluster", "status", "--config"])
        .arg(cluster.config(1))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_replica_replaying_after_a_kill_is_asked_only_as_the_last_resort() {
    require_kafka();
    let t0 = Instant::now();
    let mut cluster = Cluster::up(
        "sumi-kafka-lag",
        Some(SCHEMAS),
        &[("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string())],
    );
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    let carbon = cluster.get("INGEST_CARBON");
    let parts: Vec<Vec<u32>> = (1..=3).map(|n| cluster.partitions_of(n)).collect();
    let all: Vec<u32> = (0..PARTITIONS).collect();
    let base = kafka::unix_now() - 1800;
    let (from, until) = (base - 10, base + BEFORE + WHILE_DOWN + 100);

    send_carbon(&carbon, &lines(base, 0..BEFORE));
    for n in 1..=3u32 {
        wait_local(
            &cluster,
            n,
            &expected(base, BEFORE, &parts[n as usize - 1]),
            from,
            until,
        );
    }
    let node2 = cluster.get("NODE2_HTTP");
    let deadline = Instant::now() + Duration::from_secs(5);
    while metric(&node2, "sumi_cluster_consume_checkpoints_total") < 1.0 {
        assert!(Instant::now() < deadline, "node 2 never checkpointed");
        std::thread::sleep(Duration::from_millis(50));
    }

    // node 2 killed under load; the load goes on without it
    cluster.node("kill", 2);
    let rounds = BEFORE + WHILE_DOWN;
    send_carbon(&carbon, &lines(base, BEFORE..rounds));
    let want = expected(base, rounds, &all);
    for n in [1u32, 3] {
        wait_local(
            &cluster,
            n,
            &expected(base, rounds, &parts[n as usize - 1]),
            from,
            until,
        );
    }
    eprintln!(
        "load on nodes 1 and 3 at {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    // restarted with a slow replay: behind the log for a while
    let config = cluster.config(2);
    let toml = std::fs::read_to_string(&config).unwrap();
    let capped = toml.replacen(
        "[cluster]\n",
        &format!("[cluster]\nconsume_max_points_per_sec = {CAP}\nread_max_lag_records = 1\n"),
        1,
    );
    assert_ne!(capped, toml, "no [cluster] line in {}", config.display());
    std::fs::write(&config, capped).unwrap();
    cluster.node("start", 2);
    let node2 = cluster.get("NODE2_HTTP");
    eprintln!("node 2 restarted at {:.1}s", t0.elapsed().as_secs_f64());

    // a cluster read asked of node 2: complete, from the caught-up replicas
    let q = format!("/render?target=load.*&from={from}&until={until}&format=json");
    let (code, partial, body) = get(&node2, &q);
    assert_eq!(code, 200, "{body}");
    let got = points_of(&body);
    assert_eq!(
        diff(&want, &got),
        (0, 0),
        "node 2's cluster read is not complete"
    );
    assert_eq!(partial, None);
    // ... while its own store was (and still is) behind
    let own = rendered(&node2, from, until, true);
    let (short, _) = diff(&expected(base, rounds, &parts[1]), &own);
    assert!(
        short > 0,
        "node 2 caught up before the read: the test proves nothing"
    );
    let shown = status(&cluster);
    assert!(shown.contains("replaying"), "cluster status:\n{shown}");
    eprintln!("node 2 {short} points behind; status:\n{shown}");

    // the other replica of some of node 2's partitions killed: node 2 is their last
    // resort, and the answer says they are stale
    cluster.node("kill", 3);
    let only2: Vec<u32> = parts[1]
        .iter()
        .copied()
        .filter(|p| !parts[0].contains(p))
        .collect();
    assert!(!only2.is_empty());
    let node1 = cluster.get("NODE1_HTTP");
    let (code, partial, body) = get(&node1, &q);
    assert_eq!(code, 200, "{body}");
    let list: Vec<String> = only2.iter().map(u32::to_string).collect();
    assert_eq!(partial, Some(format!("stale={}", list.join(","))), "{body}");
    // its series are there (stale: what node 2 has replayed so far)
    let got = points_of(&body);
    for name in expected(base, rounds, &only2).keys() {
        assert!(got.contains_key(name), "{name} missing from a stale answer");
    }
    assert_eq!(metric(&node1, "sumi_cluster_read_stale_total"), 1.0);
    assert_eq!(metric(&node1, "sumi_cluster_read_partial_total"), 0.0);

    // node 2 catches up and is counted again, for every partition
    wait_local(&cluster, 2, &expected(base, rounds, &parts[1]), from, until);
    let deadline = Instant::now() + Duration::from_secs(10);
    // (its log says so once per start and partition)
    while cluster
        .log(2)
        .matches("counted as its replica again")
        .count()
        < 2 * parts[1].len()
    {
        assert!(
            Instant::now() < deadline,
            "node 2 never counted again:\n{}",
            cluster.log(2)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, partial, body) = get(&node1, &q);
    assert_eq!(partial, None);
    assert_eq!(diff(&want, &points_of(&body)), (0, 0));

    // more load than node 2's cap, in several records per partition: it lags
    let more = rounds + 90;
    for k in 0..15 {
        send_carbon(&carbon, &lines(base, rounds + k * 6..rounds + (k + 1) * 6));
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_local(&cluster, 1, &expected(base, more, &parts[0]), from, until);
    let deadline = Instant::now() + Duration::from_secs(10);
    // lagging on a partition it is the last replica of
    let lagging = |m: String| {
        only2
            .iter()
            .any(|p| m.contains(&format!("{{partition=\"{p}\",phase=\"lagging\"")))
    };
    while !lagging(kafka::http_get(&node2, "/metrics")) {
        assert!(
            Instant::now() < deadline,
            "node 2 never lagging:\n{}",
            cluster.log(2)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, partial, body) = get(&node2, &q);
    assert_eq!(code, 200, "{body}");
    // stale: some of the partitions only node 2 has left (those it lags on at the
    // moment; without the bound it would answer for them as if complete)
    let stale: Vec<u32> = partial
        .as_deref()
        .and_then(|h| h.strip_prefix("stale="))
        .unwrap_or_else(|| panic!("not a stale answer: {partial:?}"))
        .split(',')
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        !stale.is_empty() && stale.iter().all(|p| only2.contains(p)),
        "{partial:?}"
    );
    let (behind, _) = diff(
        &expected(base, more, &parts[1]),
        &rendered(&node2, from, until, true),
    );
    assert!(
        behind > 0,
        "node 2 caught up before the read: the test proves nothing"
    );
    assert!(metric(&node2, "sumi_cluster_read_stale_total") >= 1.0);
    eprintln!("node 2 lagging by {behind} points; stale partitions {stale:?}");
    eprintln!("test done in {:.1}s", t0.elapsed().as_secs_f64());
}
