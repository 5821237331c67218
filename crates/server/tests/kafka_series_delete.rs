//! `/api/v1/series/delete` in a cluster: sent to one node, it removes the series on
//! every replica of their partitions, through the metadata log (an op carrying the
//! data topic's end offsets, `docs/cluster.md`, GrowthForecast). Real processes, a real
//! Kafka (`scripts/cluster-up.sh`).
//!
//! A storage node is down (`SIGKILL`) while points of the doomed series are sent and
//! the delete is taken, and another is killed as soon as the delete is answered, while
//! it is still consuming those points; both restart and replay the data topic from
//! their checkpoints. Points of the doomed series are sent all along, before, during
//! and after the delete: each storage node deletes at the delete marker in each data
//! partition (`docs/cluster.md`, "The log record"), so the points before it are gone
//! everywhere and the two replicas of every partition hold exactly the same points of
//! every series, value for value, whatever each held when the delete came. Every
//! replica of a partition also holds every point of the kept series.
//!
//! Needs Java and Maven, like every kafka_* test; never skipped.

mod common;
#[path = "common/kafka.rs"]
mod kafka;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka::{
    eventually, http_get, post_form, require_kafka, send_carbon, unix_now, wait_produced, Cluster,
    Points,
};
use serde_json::Value;

const SERIES: usize = 24;

/// One series' points: ts → value.
type Series = BTreeMap<i64, f64>;

/// What a node stores itself of `pattern` over the last two hours.
fn local(addr: &str, pattern: &str) -> Points {
    kafka::points_of(&http_get(
        addr,
        &format!("/render?target={pattern}&from=-2h&format=json&local=1"),
    ))
}

/// The records a storage node has not applied yet, over its partitions.
fn lag(addr: &str) -> f64 {
    http_get(addr, "/metrics")
        .lines()
        .filter(|l| l.starts_with("sumi_cluster_consume_lag_records{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Carbon lines for minutes `from..to` (before `t0`'s hour ends) of every series.
fn lines(t0: i64, from: i64, to: i64, want: &mut Points) -> String {
    let mut text = String::new();
    for m in from..to {
        let ts = t0 + 60 * m;
        for s in 0..SERIES {
            for (name, value) in [
                (format!("del.s{s:02}.x"), (s as i64 * 1000 + m) as f64),
                (format!("keep.s{s:02}"), (s as i64 * 100 + m) as f64 + 0.5),
            ] {
                text.push_str(&format!("{name} {value} {ts}\n"));
                want.entry(name).or_default().insert(ts, value);
            }
        }
    }
    text
}

#[test]
fn a_series_delete_reaches_every_replica_down_or_killed_ones_included() {
    require_kafka();
    let t_start = Instant::now();
    let mut cluster = Cluster::up("sumi-kafka-sdel", None, &[]);
    eprintln!("cluster up in {:.1}s", t_start.elapsed().as_secs_f64());
    let ingest = cluster.get("INGEST_HTTP");
    let carbon = cluster.get("INGEST_CARBON");
    let node = |c: &Cluster, n: u32| c.get(&format!("NODE{n}_HTTP"));
    let t0 = unix_now() - unix_now() % 60 - 3000;

    // the first points of every series, stored on every replica
    let mut want = Points::new();
    send_carbon(&carbon, &lines(t0, 0, 10, &mut want));
    wait_produced(&ingest, (SERIES * 2 * 10) as f64, 60, String::new);
    eventually("the first points through the cluster", 60, || {
        let got = kafka::points_of(&http_get(
            &ingest,
            "/render?target=del.*.x&target=keep.*&from=-2h&format=json",
        ));
        (got == want)
            .then_some(())
            .ok_or_else(|| format!("{} of {} series", got.len(), want.len()))
    });

    // node 3 is down while more points come and the delete is taken: it is behind on
    // both topics when it comes back
    cluster.node("kill", 3);
    send_carbon(&carbon, &lines(t0, 10, 40, &mut want));
    wait_produced(&ingest, (SERIES * 2 * 40) as f64, 60, String::new);

    // points of the doomed series (minutes 40..50, the value the send's number) sent
    // continuously from here until after the delete is answered
    let stop = Arc::new(AtomicBool::new(false));
    let sends = Arc::new(AtomicU64::new(0));
    let sender = {
        let (stop, sends, carbon) = (stop.clone(), sends.clone(), carbon.clone());
        std::thread::spawn(move || {
            let mut i = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let ts = t0 + 60 * (40 + i % 10);
                let text: String = (0..SERIES)
                    .map(|s| format!("del.s{s:02}.x {} {ts}\n", 1e6 + i as f64))
                    .collect();
                send_carbon(&carbon, &text);
                sends.fetch_add(1, Ordering::Relaxed);
                i += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    eventually("the first continuous sends", 30, || {
        (sends.load(Ordering::Relaxed) >= 10)
            .then_some(())
            .ok_or_else(|| "fewer than 10".into())
    });

    // a dry run on the ingest node lists the whole cluster's series, changes nothing
    let (status, partial, dry) = post_form(
        &ingest,
        "/api/v1/series/delete",
        &[("target", "del.**"), ("dryRun", "1")],
    );
    assert_eq!((status, partial), (200, None), "{dry}");
    assert_eq!(
        (&dry["matched"], &dry["deleted"]),
        (&SERIES.into(), &0.into())
    );

    // the delete, sent to a storage node; node 2 is killed as soon as it is answered,
    // while it may still be consuming the points sent before it (its delete waits for
    // them, and for their checkpoint)
    let t_delete = Instant::now();
    let (status, partial, deleted) = post_form(
        &node(&cluster, 1),
        "/api/v1/series/delete",
        &[("target", "del.**")],
    );
    cluster.node("kill", 2);
    eprintln!(
        "delete answered in {:.2}s",
        t_delete.elapsed().as_secs_f64()
    );
    assert_eq!((status, partial), (200, None), "{deleted}");
    assert_eq!(deleted["deleted"], Value::from(SERIES), "{deleted}");
    assert_eq!(deleted["series"][0], Value::from("del.s00.x"), "{deleted}");
    // read-your-writes on node 1: the series' points before the delete are gone
    let early = |p: &Points| {
        p.values()
            .flat_map(|s| s.keys())
            .filter(|&&ts| ts < t0 + 60 * 40)
            .count()
    };
    assert_eq!(early(&local(&node(&cluster, 1), "del.*.x")), 0);
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    let sent = sends.load(Ordering::Relaxed);
    eprintln!("{sent} sends of the doomed series around the delete");
    for (name, _) in want.clone().iter().filter(|(n, _)| n.starts_with("del.")) {
        want.remove(name);
    }

    cluster.node("start", 2);
    cluster.node("start", 3);
    let nodes: Vec<String> = (1..=3).map(|n| node(&cluster, n)).collect();
    // every node applies the whole metadata log and the whole data topic
    let end = kafka::metric(&ingest, "sumi_gf_log_next_offset");
    assert!(end > 0.0);
    for (n, addr) in nodes.iter().enumerate() {
        eventually(&format!("node {}'s logs", n + 1), 90, || {
            let at = kafka::metric(addr, "sumi_gf_log_next_offset");
            let lag = lag(addr);
            let keep = local(addr, "keep.*");
            let complete = keep.values().all(|p| p.len() == 40);
            (at == end && lag == 0.0 && complete && !keep.is_empty())
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "log at {at} of {end}, lag {lag}, {} kept series",
                        keep.len()
                    )
                })
        });
    }
    // no node holds a point of a deleted series from before the delete (the
    // restarted ones replayed the points sent before it, then applied it); every
    // series of the doomed ones is on no node or on both replicas of its partition
    // (every partition is on two of the three nodes), value for value
    let mut doomed: BTreeMap<String, Vec<(usize, Series)>> = BTreeMap::new();
    for (n, addr) in nodes.iter().enumerate() {
        let gone = local(addr, "del.*.x");
        assert_eq!(
            early(&gone),
            0,
            "node {} holds points before the delete",
            n + 1
        );
        for (name, points) in gone {
            doomed.entry(name).or_default().push((n + 1, points));
        }
    }
    for (name, copies) in &doomed {
        assert_eq!(copies.len(), 2, "{name} on nodes {copies:?}");
        assert_eq!(copies[0].1, copies[1].1, "{name}: the replicas differ");
    }
    eprintln!(
        "{} doomed series written again after the delete, {} points, identical on both replicas",
        doomed.len(),
        doomed.values().map(|c| c[0].1.len()).sum::<usize>()
    );
    let mut holders: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (n, addr) in nodes.iter().enumerate() {
        for (name, points) in local(addr, "keep.*") {
            assert_eq!(Some(&points), want.get(&name), "node {}: {name}", n + 1);
            holders.entry(name).or_default().push(n + 1);
        }
    }
    assert_eq!(holders.len(), SERIES);
    for (name, on) in &holders {
        assert_eq!(on.len(), 2, "{name} on nodes {on:?}");
    }
    // the whole cluster, read from the ingest node
    let got = kafka::points_of(&http_get(
        &ingest,
        "/render?target=keep.*&from=-2h&format=json",
    ));
    assert_eq!(got, want);
    for n in [2, 3] {
        assert_eq!(
            kafka::metric(&nodes[n - 1], "sumi_gf_log_apply_retries_total"),
            0.0
        );
    }
    eprintln!("done in {:.1}s", t_start.elapsed().as_secs_f64());
}
