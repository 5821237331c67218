//! A storage node that misses records Kafka's retention removed before it applied them,
//! on a real Kafka with separate processes (`scripts/cluster-up.sh`: three storage
//! nodes, every partition on two of them). Retention is played by Kafka's own
//! DeleteRecords request up to each partition's end, which moves the log's start
//! exactly as a segment expiring does.
//!
//! 1. Node 3 is stopped, a load goes on without it, the records are removed, more load
//!    follows; at its restart node 3 finds its offsets below the log's start, drops
//!    its series of those partitions, copies them from a replica and consumes on:
//!    it then holds every point, the removed records' included, as its replicas do.
//! 2. Node 2 runs with a slow apply rate and a small fetch queue, so it is behind when
//!    the records are removed again: its consumer counts the records it lost
//!    (`sumi_cluster_consume_lost_records_total`) and lists the partitions in its
//!    gaps file; restarted, it copies them and holds every point again.
//!
//! 3. A partition copied onto a node that still holds series of it (a partition moved
//!    back, or a copy interrupted): the node's own series of it are dropped first, so
//!    a series deleted meanwhile does not come back.
//!
//! 4. A node whose `growthforecast.db` is lost while the metadata log has lost its
//!    first ops copies a peer's database (with the log offset it covers) and holds the
//!    same graphs, ids included.
//!
//! Also: the metadata log's topic keeps its records (`retention.ms` and
//! `retention.bytes` -1). Needs Java and Maven, like every kafka_* test; never skipped.

#[path = "common/kafka.rs"]
mod kafka;

use std::time::{Duration, Instant};

use kafka::{diff, metric, rendered, require_kafka, send_carbon, wait_local, Cluster, Points};
use rdkafka::admin::{AdminClient, AdminOptions, AlterConfig, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

/// One-second slots, so that no point overwrites another.
const SCHEMAS: &str = "[load]\npattern = ^load\\.\nretentions = 1s:2h\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
const SERIES: usize = 60;

fn lines(base: i64, rounds: std::ops::Range<i64>) -> String {
    let mut out = String::new();
    for r in rounds {
        for s in 0..SERIES {
            out.push_str(&format!("load.s{s:03} {} {}\n", value(s, r), base + r));
        }
    }
    out
}

/// Sends rounds one connection each, so that each round is its own records.
fn send_rounds(carbon: &str, base: i64, rounds: std::ops::Range<i64>) {
    for r in rounds {
        send_carbon(carbon, &lines(base, r..r + 1));
    }
}

fn value(series: usize, round: i64) -> f64 {
    (series * 1000) as f64 + round as f64 * 0.5
}

/// What a node storing `parts` should hold of rounds `0..rounds`.
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

/// An admin client of the cluster's Kafka, and a runtime to wait on its answers.
fn admin(bootstrap: &str) -> (AdminClient<DefaultClientContext>, tokio::runtime::Runtime) {
    let admin = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (admin, rt)
}

/// Removes every record of the data topic below each partition's end, as retention
/// would; the log's new starts.
fn remove_records(bootstrap: &str, topic: &str) -> Vec<i64> {
    remove_records_of(bootstrap, topic, PARTITIONS)
}

/// [`remove_records`] for a topic of `partitions` partitions.
fn remove_records_of(bootstrap: &str, topic: &str, partitions: u32) -> Vec<i64> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions as i32 {
        let (_, high) = consumer
            .fetch_watermarks(topic, p, Duration::from_secs(10))
            .unwrap();
        tpl.add_partition_offset(topic, p, Offset::Offset(high))
            .unwrap();
    }
    let (admin, rt) = admin(bootstrap);
    let done = rt
        .block_on(admin.delete_records(&tpl, &AdminOptions::new()))
        .unwrap();
    for e in done.elements() {
        assert!(e.error().is_ok(), "deleting records: {e:?}");
    }
    (0..partitions as i32)
        .map(|p| {
            consumer
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .unwrap()
                .0
        })
        .collect()
}

/// Sets `topic`'s `name` to `value`, as an older release's topic or an operator may
/// have it.
fn set_topic_setting(bootstrap: &str, topic: &str, name: &str, value: &str) {
    let (admin, rt) = admin(bootstrap);
    let alter = AlterConfig::new(ResourceSpecifier::Topic(topic)).set(name, value);
    for r in rt
        .block_on(admin.alter_configs([&alter], &AdminOptions::new()))
        .unwrap()
    {
        r.unwrap();
    }
}

/// A GrowthForecast post of `number` to `path` (`/api/service/section/graph`).
fn gf_post(addr: &str, path: &str, number: &str) {
    let status = ureq::post(&format!("http://{addr}{path}"))
        .timeout(Duration::from_secs(60))
        .send_form(&[("number", number)])
        .unwrap_or_else(|e| panic!("POST {path}: {e}"))
        .status();
    assert_eq!(status, 200, "POST {path}");
}

/// A node's graph list (`/json/list/graph`) with each graph's id, sorted.
fn graph_list(addr: &str) -> Vec<(i64, String)> {
    let v: serde_json::Value =
        serde_json::from_str(&kafka::http_get(addr, "/json/list/graph")).unwrap();
    let mut out: Vec<(i64, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_i64().unwrap_or(-1),
                format!(
                    "{}/{}/{}",
                    g["service_name"], g["section_name"], g["graph_name"]
                ),
            )
        })
        .collect();
    out.sort();
    out
}

/// Waits until node `n` lists `count` graphs.
fn wait_graphs(cluster: &Cluster, n: u32, count: usize) {
    let addr = cluster.get(&format!("NODE{n}_HTTP"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = graph_list(&addr);
        if got.len() == count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node {n} lists {got:?}, not {count} graphs; its log:\n{}",
            cluster.log(n)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn topic_setting(bootstrap: &str, topic: &str, name: &str) -> Option<String> {
    let (admin, rt) = admin(bootstrap);
    let described = rt
        .block_on(admin.describe_configs([&ResourceSpecifier::Topic(topic)], &AdminOptions::new()))
        .unwrap();
    let resource = described.into_iter().next().unwrap().unwrap();
    resource.get(name).and_then(|e| e.value.clone())
}

#[test]
fn a_node_behind_the_logs_retention_copies_what_it_lacks() {
    require_kafka();
    let t0 = Instant::now();
    let mut cluster = Cluster::up(
        "sumi-kafka-gap",
        Some(SCHEMAS),
        &[("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string())],
    );
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    let bootstrap = cluster.get("KAFKA_BOOTSTRAP");
    let topic = cluster.get("CLUSTER_TOPIC");
    let carbon = cluster.get("INGEST_CARBON");
    let parts: Vec<Vec<u32>> = (1..=3).map(|n| cluster.partitions_of(n)).collect();
    let base = kafka::unix_now() - 3600;
    let (from, until) = (base - 10, base + 1000);

    // the metadata log is never cut by time or size
    let meta = format!("{topic}.growthforecast");
    for name in ["retention.ms", "retention.bytes"] {
        assert_eq!(
            topic_setting(&bootstrap, &meta, name).as_deref(),
            Some("-1"),
            "{meta}'s {name}"
        );
    }

    // a metadata topic with the broker's retention (made by an older release) gets
    // them when a node starts: here node 3, below
    set_topic_setting(&bootstrap, &meta, "retention.ms", "604800000");
    assert_eq!(
        topic_setting(&bootstrap, &meta, "retention.ms").as_deref(),
        Some("604800000")
    );

    // 1. node 3 stopped while records it never applied are removed
    send_rounds(&carbon, base, 0..10);
    for n in 1..=3u32 {
        wait_local(
            &cluster,
            n,
            &expected(base, 10, &parts[n as usize - 1]),
            from,
            until,
            30,
        );
    }
    cluster.node("stop", 3);
    send_rounds(&carbon, base, 10..40);
    for n in [1u32, 2] {
        wait_local(
            &cluster,
            n,
            &expected(base, 40, &parts[n as usize - 1]),
            from,
            until,
            30,
        );
    }
    let starts = remove_records(&bootstrap, &topic);
    assert!(starts.iter().all(|&s| s > 0), "log starts {starts:?}");
    send_rounds(&carbon, base, 40..50);
    cluster.node("start", 3);
    wait_local(&cluster, 3, &expected(base, 50, &parts[2]), from, until, 60);
    let log3 = cluster.log(3);
    assert!(
        log3.contains("dropping its series of the partition and copying it from a replica"),
        "node 3 did not see its gap:\n{log3}"
    );
    let node3 = cluster.get("NODE3_HTTP");
    assert_eq!(
        metric(&node3, "sumi_cluster_consume_lost_records_total"),
        0.0
    );
    assert_eq!(
        topic_setting(&bootstrap, &meta, "retention.ms").as_deref(),
        Some("-1"),
        "node 3's start did not settle the metadata topic's retention"
    );
    eprintln!("node 3 whole again at {:.1}s", t0.elapsed().as_secs_f64());

    // 2. node 2 behind while running (slow, with a small fetch queue) when records are
    // removed again
    let config = cluster.config(2);
    let toml = std::fs::read_to_string(&config).unwrap();
    let slow = toml.replacen(
        "[cluster]\n",
        "[cluster]\nconsume_max_points_per_sec = 200\nlibrdkafka_consumer = { \"queued.min.messages\" = \"1\", \"queued.max.messages.kbytes\" = \"1\", \"message.max.bytes\" = \"1000\", \"fetch.max.bytes\" = \"2048\", \"max.partition.fetch.bytes\" = \"1024\" }\n",
        1,
    );
    assert_ne!(slow, toml, "no [cluster] line in {}", config.display());
    std::fs::write(&config, &slow).unwrap();
    cluster.node("stop", 2);
    cluster.node("start", 2);
    send_rounds(&carbon, base, 50..150);
    for n in [1u32, 3] {
        wait_local(
            &cluster,
            n,
            &expected(base, 150, &parts[n as usize - 1]),
            from,
            until,
            60,
        );
    }
    let node2 = cluster.get("NODE2_HTTP");
    let own = rendered(&node2, from, until, true);
    let (short, _) = diff(&expected(base, 150, &parts[1]), &own);
    assert!(short > 0, "node 2 was not behind: the test proves nothing");
    remove_records(&bootstrap, &topic);
    send_rounds(&carbon, base, 150..160);
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(&node2, "sumi_cluster_consume_lost_records_total") == 0.0 {
        assert!(
            Instant::now() < deadline,
            "node 2 never counted the records it lost; its log:\n{}",
            cluster.log(2)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let gaps = cluster.file("node2/data/cluster/gaps");
    assert!(gaps.contains(&topic), "node 2's gaps file: {gaps:?}");
    // restarted at full speed, it copies what it lost
    std::fs::write(&config, &toml).unwrap();
    cluster.node("stop", 2);
    cluster.node("start", 2);
    wait_local(
        &cluster,
        2,
        &expected(base, 160, &parts[1]),
        from,
        until,
        60,
    );
    let gaps = cluster.file("node2/data/cluster/gaps");
    assert!(
        !gaps.contains(&topic),
        "node 2's gaps file after the copy: {gaps:?}"
    );
    for n in [1u32, 3] {
        wait_local(
            &cluster,
            n,
            &expected(base, 160, &parts[n as usize - 1]),
            from,
            until,
            30,
        );
    }
    eprintln!("node 2 whole again at {:.1}s", t0.elapsed().as_secs_f64());

    // 3. a partition copied onto a node that still holds series of it (moved back to
    // it, or a copy interrupted): a series deleted meanwhile does not come back.
    // Node 1 stops; one of its series is deleted through the ingest node; node 1
    // forgets its offset of that series' partition and starts copying from peers.
    let p = parts[0][0];
    let mut want = expected(base, 160, &parts[0]);
    let doomed = want
        .keys()
        .find(|n| sumi_cluster::partition_for(n, PARTITIONS) == p)
        .unwrap()
        .clone();
    want.remove(&doomed);
    cluster.node("stop", 1);
    let ingest = cluster.get("INGEST_HTTP");
    let deleted = ureq::post(&format!("http://{ingest}/api/v1/series/delete"))
        .timeout(Duration::from_secs(60))
        .send_form(&[("target", doomed.as_str())])
        .unwrap()
        .into_string()
        .unwrap();
    assert!(deleted.contains("\"deleted\":1"), "{deleted}");
    let offsets = cluster.dir.path().join("node1/data/cluster/offsets");
    let forget = format!("{topic} {p} ");
    let kept: String = std::fs::read_to_string(&offsets)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with(&forget))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&offsets, kept).unwrap();
    let config = cluster.config(1);
    let toml = std::fs::read_to_string(&config).unwrap();
    let copying = toml.replacen("[cluster]\n", "[cluster]\ncopy_from_peers = true\n", 1);
    std::fs::write(&config, copying).unwrap();
    cluster.node("start", 1);
    wait_local(&cluster, 1, &want, from, until, 60);
    let log1 = cluster.log(1);
    assert!(
        log1.contains("partition copied from a replica"),
        "node 1 did not copy partition {p}:\n{log1}"
    );
    // 4. growthforecast.db lost on node 3 while the metadata log lost its first ops:
    // node 3 copies a peer's database and applies the log from its offset
    for g in ["g1", "g2", "g3"] {
        gf_post(&ingest, &format!("/api/gap/snap/{g}"), "7");
    }
    let node1 = cluster.get("NODE1_HTTP");
    wait_graphs(&cluster, 3, 3);
    cluster.node("stop", 3);
    for f in [
        "growthforecast.db",
        "growthforecast.db-wal",
        "growthforecast.db-shm",
    ] {
        let _ = std::fs::remove_file(cluster.dir.path().join("node3/data").join(f));
    }
    let meta_start = remove_records_of(&bootstrap, &meta, 1);
    assert!(meta_start[0] > 0, "metadata log start {meta_start:?}");
    gf_post(&ingest, "/api/gap/snap/g4", "8");
    cluster.node("start", 3);
    wait_graphs(&cluster, 3, 4);
    assert_eq!(
        graph_list(&cluster.get("NODE3_HTTP")),
        graph_list(&node1),
        "node 3's graphs differ from node 1's"
    );
    assert!(
        cluster
            .log(3)
            .contains("growthforecast.db copied from a peer"),
        "node 3 did not copy a peer's database:\n{}",
        cluster.log(3)
    );

    // every node stops cleanly (a runtime dropped inside the HTTP server's state at
    // shutdown once panicked there)
    for n in 1..=3u32 {
        cluster.node("stop", n);
        let log = cluster.log(n);
        assert!(
            !log.contains("panicked") && log.contains("stopped"),
            "node {n}'s log:\n{log}"
        );
    }
    eprintln!("done at {:.1}s", t0.elapsed().as_secs_f64());
}
