//! Adding a storage node and moving a partition to it under load, with the
//! repository's own scripts (`scripts/cluster-up.sh`, then `scripts/cluster-move.sh
//! DIR 0 1 4`): a fourth storage node copies partition 0 from a replica over HTTP with
//! the offset the copy covers, catches up from Kafka, and only then counts as a
//! replica; node 1 lets go of the partition. Meanwhile carbon points keep coming and
//! reads are polled on two nodes: every answer is complete (no error, no partial
//! header, nothing that was visible before the move missing). At the end the new
//! owner holds every acknowledged point of the partition, value for value, like the
//! other replica; node 1 refuses to answer for it; `sumi cluster status` shows the new
//! placement.
//!
//! Needs Java and Maven, like the other Kafka tests; never skipped.

#[path = "common/kafka.rs"]
mod kafka;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka::*;

/// One-second slots, so that no point of the load may overwrite another.
const SCHEMAS: &str = "[load]\npattern = ^load\\.\nretentions = 1s:2h\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
const SERIES: usize = 120;
const MOVED: u32 = 0;

fn value(series: usize, round: i64) -> f64 {
    (series * 1000) as f64 + round as f64
}

/// What the rounds `0..rounds` put in the series of `keep`.
fn expected(base: i64, rounds: i64, keep: impl Fn(u32) -> bool) -> Points {
    let mut out = Points::new();
    for s in 0..SERIES {
        let name = format!("load.s{s:03}");
        if keep(sumi_cluster::partition_for(&name, PARTITIONS)) {
            out.insert(name, (0..rounds).map(|r| (base + r, value(s, r))).collect());
        }
    }
    out
}

#[test]
fn a_partition_moves_to_a_new_node_under_load_with_reads_answered_throughout() {
    require_kafka();
    let t0 = Instant::now();
    let mut cluster = Cluster::up(
        "sumi-kafka-move",
        Some(SCHEMAS),
        &[
            ("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string()),
            ("SUMI_CLUSTER_READ_TIMEOUT_MS", "2000".to_string()),
        ],
    );
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    assert!(cluster.partitions_of(1).contains(&MOVED));
    let ingest = cluster.get("INGEST_CARBON");
    let ingest_http = cluster.get("INGEST_HTTP");
    let base = unix_now() - 1800;

    // the load: one carbon connection, a round of every series each 50 ms, until told
    // to stop; `sent` counts the rounds written
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicI64::new(0));
    let sender = {
        let (stop, sent) = (stop.clone(), sent.clone());
        std::thread::spawn(move || {
            let mut conn = TcpStream::connect(&ingest).unwrap();
            let mut r = 0;
            while !stop.load(Ordering::Relaxed) && r < 1500 {
                let mut lines = String::new();
                for s in 0..SERIES {
                    lines.push_str(&format!("load.s{s:03} {} {}\n", value(s, r), base + r));
                }
                conn.write_all(lines.as_bytes()).unwrap();
                r += 1;
                sent.store(r, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    // before the move: the first rounds are on every replica, and a cluster read
    // shows them all; from then on no read may show less
    while sent.load(Ordering::Relaxed) < 20 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = expected(base, 20, |_| true);
    let deadline = Instant::now() + Duration::from_secs(30);
    for n in 1..=3u32 {
        let addr = cluster.get(&format!("NODE{n}_HTTP"));
        let mine = cluster.partitions_of(n);
        let want = expected(base, 20, |p| mine.contains(&p));
        loop {
            let got = rendered(&addr, base - 10, base + 1600, true);
            if diff(&want, &got).0 == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {n} did not store the first rounds; its log:\n{}",
                cluster.log(n)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // reads polled during the move, on the ingest node (old placement: it never
    // learns of node 4) and on node 3
    let polling = Arc::new(AtomicBool::new(true));
    let pollers: Vec<_> = [ingest_http.clone(), cluster.get("NODE3_HTTP")]
        .into_iter()
        .map(|addr| {
            let (polling, before) = (polling.clone(), before.clone());
            std::thread::spawn(move || {
                let mut polls = 0;
                let path = format!(
                    "/render?target=load.*&from={}&until={}&format=json",
                    base - 10,
                    base + 1600
                );
                while polling.load(Ordering::Relaxed) {
                    let (status, partial, body) = get(&addr, &path);
                    assert_eq!(
                        status, 200,
                        "a read on {addr} during the move failed: {body}"
                    );
                    assert_eq!(
                        partial, None,
                        "a read on {addr} during the move was partial"
                    );
                    let got = points_of(&body);
                    let (missing, _) = diff(&before, &got);
                    assert_eq!(
                        missing, 0,
                        "a read on {addr} during the move lacked {missing} points it showed before"
                    );
                    polls += 1;
                    std::thread::sleep(Duration::from_millis(25));
                }
                polls
            })
        })
        .collect();

    let t_move = Instant::now();
    let out = cluster.script("cluster-move.sh", &["0", "1", "4"]);
    eprintln!(
        "moved in {:.1}s at {:.1}s: {}",
        t_move.elapsed().as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        out.trim()
    );
    assert!(
        out.contains("node 4 counts as a replica of partition 0"),
        "{out}"
    );
    assert_eq!(cluster.partitions_of(4), vec![MOVED]);
    assert!(!cluster.partitions_of(1).contains(&MOVED));
    // a little more load once node 4 counts, then the load stops
    let after = sent.load(Ordering::Relaxed) + 20;
    while sent.load(Ordering::Relaxed) < after {
        std::thread::sleep(Duration::from_millis(20));
    }
    polling.store(false, Ordering::Relaxed);
    let polls: Vec<u32> = pollers
        .into_iter()
        .map(|p| p.join().expect("a read during the move failed"))
        .collect();
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    let rounds = sent.load(Ordering::Relaxed);
    eprintln!("{rounds} rounds sent; reads during the move: {polls:?}");
    assert!(
        polls.iter().all(|&n| n >= 10),
        "too few reads during the move: {polls:?}"
    );

    let total = (SERIES as i64 * rounds) as f64;
    kafka::wait_produced(&ingest_http, total, 30, String::new);

    // the new owner and the other replica hold every point of the moved partition,
    // value for value, and node 4 nothing else
    let moved = expected(base, rounds, |p| p == MOVED);
    assert!(!moved.is_empty());
    let other = (2..=3u32)
        .find(|n| cluster.partitions_of(*n).contains(&MOVED))
        .unwrap();
    for n in [4, other] {
        let addr = cluster.get(&format!("NODE{n}_HTTP"));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got: Points = rendered(&addr, base - 10, base + 1600, true)
                .into_iter()
                .filter(|(k, _)| sumi_cluster::partition_for(k, PARTITIONS) == MOVED || n == 4)
                .collect();
            let (missing, extra) = diff(&moved, &got);
            if missing == 0 && extra == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {n}: {missing} points of partition {MOVED} missing or wrong, {extra} series of other partitions; its log:\n{}",
                cluster.log(n)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    // it got there by a copy, then the log: the copy covered an offset past the start
    let log4 = cluster.log(4);
    assert!(log4.contains("partition copied from a replica"), "{log4}");
    assert!(log4.contains("now counted as its replica"), "{log4}");

    // every node answers for the whole cluster, completely: node 4 with the new
    // placement, the ingest node with the old one (node 1 refuses partition 0 now and
    // the other replica answers)
    let all = expected(base, rounds, |_| true);
    for addr in [cluster.get("NODE4_HTTP"), ingest_http.clone()] {
        let (status, partial, body) = get(
            &addr,
            &format!(
                "/render?target=load.*&from={}&until={}&format=json",
                base - 10,
                base + 1600
            ),
        );
        assert_eq!((status, partial), (200, None), "{addr}: {body:.300}");
        assert_eq!(diff(&all, &points_of(&body)), (0, 0), "{addr}");
    }
    let name = (0..SERIES)
        .map(|s| format!("load.s{s:03}"))
        .find(|n| sumi_cluster::partition_for(n, PARTITIONS) == MOVED)
        .unwrap();
    let refused = ureq::post(&format!(
        "http://{}/internal/v0/fetch",
        cluster.get("NODE1_HTTP")
    ))
    .send_string(&format!(
        r#"{{"paths":["{name}"],"from":{},"until":{},"now":{}}}"#,
        base,
        base + 100,
        unix_now()
    ));
    match refused {
        Err(ureq::Error::Status(421, _)) => {}
        other => panic!("node 1 still answers for partition {MOVED}: {other:?}"),
    }

    // the status, with the new placement
    let status = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["cluster", "status", "--config"])
        .arg(cluster.config(4))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("partition {MOVED} ")))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(" node 4 offset ") && line.contains(&format!(" node {other} offset ")),
        "{text}"
    );
    assert!(
        !line.contains(" node 1 ") && !line.contains("catching-up"),
        "{text}"
    );
    let offsets: BTreeMap<&str, &str> = line
        .split(" node ")
        .skip(1)
        .filter_map(|f| {
            let mut w = f.split_whitespace();
            Some((w.next()?, w.nth(1)?))
        })
        .collect();
    assert_eq!(
        offsets.get("4"),
        offsets.get(other.to_string().as_str()),
        "{text}"
    );
    eprintln!("test done in {:.1}s", t0.elapsed().as_secs_f64());
}
