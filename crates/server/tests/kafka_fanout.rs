//! Reads across a sumi cluster on a real Apache Kafka (`scripts/cluster-up.sh`: one
//! Kafka 4.1.0 broker, one ingest node, three storage nodes, every partition on two of
//! them), checked against a single sumi node that received the same points.
//!
//! Every question — plain targets, globs, Graphite functions over series spread across
//! the nodes (`sumSeries`, `groupByNode`, ...), several archives, `/metrics/find`,
//! `/metrics/expand`, the tag API — is asked of the ingest node (which stores nothing)
//! and of each storage node, and each answer must equal the single node's, byte for
//! byte (tag and value ids aside: they are each node's own), and a GrowthForecast graph
//! posted to the ingest node is exported there with its value. Then `sumi cluster status`
//! must show every partition's owners caught up. With one storage node killed every
//! partition still has a live replica and the answers stay complete; with a second
//! killed, the partitions only those two stored are missing, and the answer says so
//! (`X-Sumi-Partial`, `sumi_cluster_read_partial_total`). Last, with Kafka killed the
//! ingest node spills two rounds of points for the same slots to disk and delivers them
//! in order once Kafka is back: the later round wins on every replica.
//!
//! Needs Java and Maven, as `kafka_cluster.rs`.

mod common;
#[path = "common/kafka.rs"]
mod kafka;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::Sumi;
use kafka::{get, metric, require_kafka, send_carbon, Cluster};

/// Two archives, so that a long range is answered from the coarser one.
const SCHEMAS: &str = "[fan]\npattern = ^fan\nretentions = 10s:1h,60s:1d\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
const HOSTS: usize = 8;
const METRICS: usize = 4;
const POINTS: i64 = 300;

fn up(schemas: &Path) -> Cluster {
    let dir = tempfile::Builder::new()
        .prefix("sumi-kafka-fanout")
        .tempdir()
        .unwrap();
    Cluster::up_in(
        dir,
        &format!("--no-selfmon --storage-schemas {}", schemas.display()),
        &[
            ("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string()),
            ("SUMI_CLUSTER_READ_TIMEOUT_MS", "2000".to_string()),
            ("SUMI_CLUSTER_APPEND_TIMEOUT_MS", "1500".to_string()),
        ],
    )
}

/// The answer as compared: tag and value ids are each node's own, so `/tags` and
/// `/tags/<tag>` are compared without them.
fn comparable(path: &str, body: &str) -> String {
    if !path.starts_with("/tags")
        || path.starts_with("/tags/findSeries")
        || path.contains("autoComplete")
    {
        return body.to_string();
    }
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("id");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: serde_json::Value = serde_json::from_str(body).unwrap_or(serde_json::Value::Null);
    strip(&mut v);
    v.to_string()
}

/// The questions, all with a fixed `now` and absolute ranges so that every node
/// answers for the same instant.
fn questions(base: i64, now: i64) -> Vec<String> {
    let end = base + POINTS * 10;
    let r = |target: &str, from: i64| {
        format!("/render?target={target}&from={from}&until={end}&now={now}&format=json")
    };
    let mut q = Vec::new();
    for target in [
        "fan.h0.m0",
        "fan.h3.m2",
        "fan.*.m1",
        "fan.h[1-4].*",
        "fan.{h2,h5}.m{0,3}",
        "sumSeries(fan.*.*)",
        "sumSeries(fan.*.m2)",
        "averageSeries(fan.h*.m0)",
        "maxSeries(fan.*.*)",
        "minSeries(fan.*.m3)",
        "countSeries(fan.*.*)",
        "stddevSeries(fan.*.m1)",
        "groupByNode(fan.*.*,2,\"sumSeries\")",
        "aliasByNode(fan.h1.*,1,2)",
        "scale(fan.h2.m1,2.5)",
        "summarize(fan.h4.m0,\"5min\",\"sum\")",
        "movingAverage(fan.h5.m2,6)",
        "nonNegativeDerivative(fan.h6.m3)",
        "highestMax(fan.*.m0,3)",
        "asPercent(fan.h7.m1,sumSeries(fan.*.m1))",
        "seriesByTag('name=fant','dc=d1')",
        "sumSeries(seriesByTag('name=fant'))",
        "groupByTags(seriesByTag('name=fant'),\"sum\",\"dc\")",
    ] {
        q.push(r(target, base));
    }
    // older than the first archive holds: the 60 s archive answers
    q.push(r("sumSeries(fan.*.*)", now - 3 * 3600));
    q.push(r("fan.h1.m1", now - 3 * 3600));
    q.push(format!(
        "/render?target=sumSeries(fan.*.*)&from={base}&until={end}&now={now}&format=json&maxDataPoints=40"
    ));
    q.push(format!(
        "/render?target=fan.h*.m3&from={base}&until={end}&now={now}&format=csv"
    ));
    for find in [
        "/metrics/find?query=fan.*",
        "/metrics/find?query=fan.*.*&format=treejson",
        "/metrics/find?query=fan.h1.*&format=completer",
        "/metrics/find?query=fan.*.m1&format=nodelist&position=1",
        "/metrics/find?query=*",
        "/metrics/expand?query=fan.*&query=fan.h2.*&leavesOnly=1",
        "/tags/findSeries?expr=dc=d0",
        "/tags/findSeries?expr=name=fant&expr=host=~h[12]",
        "/tags/autoComplete/tags?expr=name=fant",
        "/tags/autoComplete/values?tag=host",
        "/tags/autoComplete/values?tag=host&valuePrefix=h1&limit=2",
        "/tags",
        "/tags/host",
        "/tags/dc",
        "/tags/nosuchtag",
    ] {
        q.push(find.to_string());
    }
    q
}

#[test]
fn any_node_answers_for_the_whole_cluster_like_a_single_node() {
    require_kafka();
    let t0 = Instant::now();
    let single_dir = common::scratch();
    let schemas = single_dir.path().join("schemas.conf");
    std::fs::write(&schemas, SCHEMAS).unwrap();
    let schemas_arg = schemas.display().to_string();
    let single = Sumi::start(
        &single_dir.path().join("data"),
        &["--no-selfmon", "--storage-schemas", &schemas_arg],
    );
    let mut cluster = up(&schemas);
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());

    // the same points to the single node and to the cluster's ingest node
    let now = common::now();
    let base = (now - POINTS * 10 - 60) / 10 * 10;
    let mut lines = String::new();
    let mut points = 0u64;
    for i in 0..POINTS {
        let ts = base + i * 10;
        for h in 0..HOSTS {
            for m in 0..METRICS {
                // a few gaps, negative values and fractions
                if (i + h as i64 + m as i64) % 17 == 0 {
                    continue;
                }
                let v =
                    ((h * 31 + m * 7) as f64 + i as f64 * 0.25) * if m == 3 { -1.0 } else { 1.0 };
                lines.push_str(&format!("fan.h{h}.m{m} {v} {ts}\n"));
                points += 1;
            }
        }
        for host in 0..3 {
            for dc in 0..2 {
                let v = (host * 10 + dc) as f64 + i as f64;
                lines.push_str(&format!("fant;host=h{host};dc=d{dc} {v} {ts}\n"));
                points += 1;
            }
        }
    }
    send_carbon(&single.carbon.to_string(), &lines);
    send_carbon(&cluster.get("INGEST_CARBON"), &lines);
    single.wait_stored(points);
    // each point is stored by the two replicas of its partition
    let nodes: Vec<String> = (1..=3)
        .map(|n| cluster.get(&format!("NODE{n}_HTTP")))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let applied: f64 = nodes
            .iter()
            .map(|a| metric(a, "sumi_cluster_consume_points_total"))
            .sum();
        if applied >= 2.0 * points as f64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the storage nodes applied {applied} of {} points",
            2 * points
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "{points} points stored at {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    let ingest = cluster.get("INGEST_HTTP");
    let single_http = single.http.to_string();
    // GrowthForecast: a graph posted to the ingest node (which keeps its metadata but
    // stores no points) is read back there through the cluster (one archive: the
    // storage nodes do not know the graph's rollup override, see docs/cluster.md)
    // (and to the single node, so that both trees keep agreeing)
    for node in [&ingest, &single_http] {
        let url = format!("http://{node}/api/gfsvc/gf/g1");
        let posted = ureq::post(&url)
            .timeout(Duration::from_secs(30))
            .send_form(&[("number", "42")]);
        assert!(posted.is_ok(), "POST {url}: {posted:?}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, body) = get(&ingest, "/xport/gfsvc/gf/g1?t=h");
        assert_eq!(status, 200, "{body}");
        let x: serde_json::Value = serde_json::from_str(&body).unwrap();
        let found = x["rows"]
            .as_array()
            .is_some_and(|rows| rows.iter().any(|r| r[0].as_f64() == Some(42.0)));
        if found {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the ingest node's GrowthForecast export lacks the posted 42: {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let qs = questions(base, now);
    let want: Vec<String> = qs
        .iter()
        .map(|q| {
            let (status, _, body) = get(&single_http, q);
            assert_eq!(status, 200, "single node, {q}: {body}");
            comparable(q, &body)
        })
        .collect();
    // the data is there and spread: a node alone holds only part of it
    assert!(
        want[5].contains("datapoints") && want[5].len() > 1000,
        "{}",
        want[5]
    );
    let (_, _, local) = get(&nodes[0], &format!("{}&local=1", qs[5]));
    assert_ne!(local, want[5], "node 1 alone holds every series");

    let check_all = |who: &str, addr: &str| {
        for (q, w) in qs.iter().zip(&want) {
            let (status, partial, body) = get(addr, q);
            assert_eq!(status, 200, "{who}, {q}: {body}");
            assert_eq!(partial, None, "{who}, {q}: partial");
            assert_eq!(
                &comparable(q, &body),
                w,
                "{who} differs from a single node on {q}"
            );
        }
    };
    check_all("ingest node", &ingest);
    for (n, addr) in nodes.iter().enumerate() {
        check_all(&format!("storage node {}", n + 1), addr);
    }
    eprintln!(
        "{} questions x 4 nodes agree at {:.1}s",
        qs.len(),
        t0.elapsed().as_secs_f64()
    );

    // every replica applied everything: status shows no lag
    let status = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["cluster", "status", "--config"])
        .arg(cluster.config(0))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        status.status.success(),
        "sumi cluster status: {text}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    check_status(&text, &[true, true, true]);

    // one replica of each group killed: still complete
    cluster.node("kill", 2);
    check_all("ingest node, node 2 down", &ingest);
    check_all("storage node 1, node 2 down", &nodes[0]);
    assert!(metric(&ingest, "sumi_cluster_read_peer_errors_total") >= 1.0);
    assert_eq!(metric(&ingest, "sumi_cluster_read_partial_total"), 0.0);
    let status = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["cluster", "status", "--config"])
        .arg(cluster.config(1))
        .output()
        .unwrap();
    // a node down is a non-zero exit, and the table says which
    assert_eq!(status.status.code(), Some(1));
    check_status(
        &String::from_utf8_lossy(&status.stdout),
        &[true, false, true],
    );

    // both replicas of partitions 1 and 4 (nodes 2 and 3) down: partial, and said so
    cluster.node("kill", 3);
    let lost: Vec<u32> = (0..PARTITIONS)
        .filter(|p| {
            let on = |n: u32| {
                cluster
                    .get(&format!("NODE{n}_PARTITIONS"))
                    .split(',')
                    .any(|x| x == p.to_string())
            };
            !on(1)
        })
        .collect();
    assert_eq!(lost, vec![1, 4]);
    let sum = &qs[5];
    for addr in [&ingest, &nodes[0]] {
        let (status, partial, body) = get(addr, sum);
        assert_eq!(status, 200);
        assert_eq!(partial.as_deref(), Some("partitions=1,4"), "{body}");
        assert_ne!(body, want[5], "a partial sum equals the whole");
        let (_, partial, _) = get(addr, "/metrics/find?query=fan.*.*");
        assert_eq!(partial.as_deref(), Some("partitions=1,4"));
        let (_, partial, _) = get(addr, "/tags/findSeries?expr=dc=d0");
        assert_eq!(partial.as_deref(), Some("partitions=1,4"));
        assert!(metric(addr, "sumi_cluster_read_partial_total") >= 3.0);
    }
    // a plain series of a partition still stored is complete and not marked
    let whole = qs.iter().zip(&want).find(|(q, _)| {
        q.contains("target=fan.h0.m0&")
            && sumi_cluster::partition_for("fan.h0.m0", PARTITIONS) != 1
            && sumi_cluster::partition_for("fan.h0.m0", PARTITIONS) != 4
    });
    if let Some((q, w)) = whole {
        let (_, partial, body) = get(&ingest, q);
        assert_eq!(partial, None);
        assert_eq!(&body, w);
    }
    eprintln!(
        "partial answers checked at {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    // Kafka down: the ingest node spills what Kafka does not take (acknowledging it
    // once on disk) and delivers it in order when Kafka is back. Two values for the
    // same slots, one append after the other: the later must win on every replica.
    cluster.kafka("kill");
    let slot = base + POINTS * 10;
    let round = |v: f64| -> String {
        (0..HOSTS)
            .map(|h| format!("fan.h{h}.m0 {} {slot}\n", v + h as f64))
            .collect()
    };
    send_carbon(&cluster.get("INGEST_CARBON"), &round(1000.0));
    assert_eq!(
        metric(&ingest, "sumi_cluster_spill_points_total"),
        HOSTS as f64,
        "the first round was not spilled"
    );
    send_carbon(&cluster.get("INGEST_CARBON"), &round(2000.0));
    assert_eq!(
        metric(&ingest, "sumi_cluster_spill_points_total"),
        2.0 * HOSTS as f64
    );
    assert_eq!(metric(&ingest, "sumi_cluster_spill_files"), 2.0);
    eprintln!("two rounds spilled at {:.1}s", t0.elapsed().as_secs_f64());
    cluster.kafka("start");
    cluster.node_with("start", 2, &["--no-wait"]);
    cluster.node_with("start", 3, &["--no-wait"]);
    cluster.node("wait", 2);
    cluster.node("wait", 3);
    eprintln!(
        "kafka and nodes 2, 3 up again at {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    let target = format!(
        "/render?target=fan.*.m0&from={}&until={}&format=json",
        slot - 10,
        slot
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, partial, body) = get(&ingest, &target);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let last: Vec<Option<f64>> = v
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| {
                        s["datapoints"]
                            .as_array()
                            .and_then(|d| d.last()?[0].as_f64())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let want: Vec<Option<f64>> = (0..HOSTS).map(|h| Some(2000.0 + h as f64)).collect();
        if partial.is_none() && last == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the spilled rounds did not arrive in order: {last:?} (partial {partial:?})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        metric(&ingest, "sumi_cluster_spill_delivered_points_total"),
        2.0 * HOSTS as f64
    );
    assert_eq!(metric(&ingest, "sumi_cluster_spill_files"), 0.0);
    eprintln!("test done in {:.1}s", t0.elapsed().as_secs_f64());
}

/// `sumi cluster status` lists every partition with its owners, each owner's consumed
/// offset equal to the log end (no lag) when up, and each node's health.
fn check_status(text: &str, up: &[bool; 3]) {
    for n in 1..=3 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("node {n} ")))
            .unwrap_or_else(|| panic!("no line for node {n}:\n{text}"));
        let want = if up[n - 1] { "up" } else { "down" };
        assert!(
            line.contains(want),
            "node {n} should be {want}: {line}\n{text}"
        );
    }
    for p in 0..PARTITIONS {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("partition {p} ")))
            .unwrap_or_else(|| panic!("no line for partition {p}:\n{text}"));
        // "partition P  end E  node N offset O lag L ..."
        let end: i64 = field(line, "end").parse().unwrap();
        assert!(end > 0, "{line}");
        let owners: Vec<&str> = line.split("node ").skip(1).collect();
        assert_eq!(owners.len(), 2, "{line}");
        for o in owners {
            let n: usize = o.split_whitespace().next().unwrap().parse().unwrap();
            if up[n - 1] {
                assert_eq!(field(o, "lag"), "0", "{line}");
                assert_eq!(field(o, "offset"), end.to_string(), "{line}");
            } else {
                assert!(o.contains("down"), "{line}");
            }
        }
    }
}

fn field<'a>(text: &'a str, name: &str) -> &'a str {
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == name {
            return words.next().unwrap_or("");
        }
    }
    panic!("no {name} in {text}")
}
