//! `/api/v1/series/rename` in a cluster: sent to one storage node, it moves a subtree's
//! history (two days: a 10-minute archive and a 1-minute one) through the data topic
//! to the new names' partitions and deletes the old names with delete markers
//! (`crates/http/src/rename.rs`, `docs/cluster.md`). Real processes, a real Kafka
//! (`scripts/cluster-up.sh`).
//!
//! Then every node answers `/render` and `/metrics/find` for the new names with the
//! values sent, value for value over both archives, no node holds an old name, and
//! the two replicas of every new series are identical (the second test: with a storage
//! node down during the rename that catches up after it). A rename onto a taken name is refused (409) and a
//! dry run lists without changing anything.
//!
//! Needs Java and Maven, like every kafka_* test; never skipped.

mod common;
#[path = "common/kafka.rs"]
mod kafka;

use std::collections::BTreeMap;
use std::time::Instant;

use kafka::{
    eventually, http_get, post_form, require_kafka, send_carbon, unix_now, wait_produced, Cluster,
    Points,
};
use serde_json::Value;

const SCHEMAS: &str = "[all]\npattern = .*\nretentions = 1m:6h,10m:7d\n";

const HOSTS: usize = 6;

/// One series' points: ts → value.
type Series = BTreeMap<i64, f64>;

/// The points of `pattern` in `range` (from, until) a node answers (`local`: that it
/// stores itself), read from the archive that reaches `range.0`.
fn read(addr: &str, pattern: &str, local: bool, range: (i64, i64)) -> Points {
    let mut got = kafka::points_of(&http_get(
        addr,
        &format!(
            "/render?target={pattern}&from={}&until={}&format=json{}",
            range.0 - 1,
            unix_now(),
            if local { "&local=1" } else { "" }
        ),
    ));
    for s in got.values_mut() {
        s.retain(|ts, _| (range.0..range.1).contains(ts));
    }
    got.retain(|_, s| !s.is_empty());
    got
}

/// The records a storage node has not applied yet, over its partitions.
fn lag(addr: &str) -> f64 {
    http_get(addr, "/metrics")
        .lines()
        .filter(|l| l.starts_with("sumi_cluster_consume_lag_records{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `want` with `ren.` names as `moved.`.
fn renamed(want: &Points) -> Points {
    want.iter()
        .map(|(n, s)| (n.replacen("ren.", "moved.", 1), s.clone()))
        .collect()
}

/// The names `/metrics/find` answers for `query` on a node.
fn found(addr: &str, query: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(&http_get(
        addr,
        &format!("/metrics/find?query={query}&format=completer"),
    ))
    .unwrap();
    let mut names: Vec<String> = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["path"]
                .as_str()
                .unwrap()
                .trim_end_matches('.')
                .to_string()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_rename_moves_a_subtrees_history_to_every_replica_of_the_new_partitions() {
    rename_in_a_cluster(false);
}

/// The same with storage node 3 killed before the rename and restarted after it: it
/// replays the moved history and the markers from the data topic.
#[test]
fn a_rename_reaches_a_replica_that_was_down() {
    rename_in_a_cluster(true);
}

fn rename_in_a_cluster(kill: bool) {
    require_kafka();
    let t_start = Instant::now();
    let mut cluster = Cluster::up("sumi-kafka-sren", Some(SCHEMAS), &[]);
    let node_down = if kill { "node 3 down" } else { "every node up" };
    eprintln!("{node_down} during the rename");
    eprintln!("cluster up in {:.1}s", t_start.elapsed().as_secs_f64());
    let ingest = cluster.get("INGEST_HTTP");
    let carbon = cluster.get("INGEST_CARBON");
    let node = |c: &Cluster, n: u32| c.get(&format!("NODE{n}_HTTP"));

    // two days of history: every 10 minutes until 7 h ago (the 10-minute archive),
    // every minute over the last 5 h (the 1-minute one); a series taken under `taken`
    let now = unix_now();
    let fine_from = now - now % 60 - 5 * 3600;
    let coarse_until = now - now % 600 - 7 * 3600;
    let coarse_from = coarse_until - 2 * 86400;
    let mut want = Points::new();
    let mut text = String::new();
    for h in 0..HOSTS {
        for (k, metric) in ["cpu", "mem"].iter().enumerate() {
            let name = format!("ren.h{h}.{metric}");
            let s = want.entry(name.clone()).or_default();
            let base = (h * 10 + k) as f64 * 1000.0;
            for ts in (coarse_from..coarse_until).step_by(600) {
                let v = base + ((ts - coarse_from) / 600) as f64 + 0.25;
                s.insert(ts, v);
                text.push_str(&format!("{name} {v} {ts}\n"));
            }
            for ts in (fine_from..now - 60).step_by(60) {
                let v = base + 500.0 + ((ts - fine_from) / 60) as f64 * 0.5;
                s.insert(ts, v);
                text.push_str(&format!("{name} {v} {ts}\n"));
            }
        }
    }
    text.push_str(&format!("taken.h3.cpu 1 {}\n", now - 120));
    let total: usize = want.values().map(|s| s.len()).sum::<usize>() + 1;
    send_carbon(&carbon, &text);
    wait_produced(&ingest, total as f64, 60, String::new);
    let fine = (fine_from, now);
    let coarse = (coarse_from, coarse_until);
    let split = |p: &Points, r: (i64, i64)| -> Points {
        p.iter()
            .map(|(n, s)| {
                let s: BTreeMap<i64, f64> = s.range(r.0..r.1).map(|(t, v)| (*t, *v)).collect();
                (n.clone(), s)
            })
            .collect()
    };
    let (want_fine, want_coarse) = (split(&want, fine), split(&want, coarse));
    eventually("the history through the cluster", 90, || {
        let got = read(&ingest, "ren.*.*", false, fine);
        let old = read(&ingest, "ren.*.*", false, coarse);
        (got == want_fine && old == want_coarse)
            .then_some(())
            .ok_or_else(|| format!("{} and {} of {} series", got.len(), old.len(), want.len()))
    });

    // a dry run lists, changes nothing
    let (status, _, dry) = post_form(
        &ingest,
        "/api/v1/series/rename",
        &[("from", "ren"), ("to", "moved"), ("dryRun", "1")],
    );
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["matched"], Value::from(HOSTS * 2), "{dry}");
    assert_eq!(dry["renamed"], Value::from(0), "{dry}");
    assert_eq!(dry["series"][0]["from"], Value::from("ren.h0.cpu"), "{dry}");
    assert_eq!(dry["series"][0]["to"], Value::from("moved.h0.cpu"), "{dry}");
    // a new name taken anywhere in the cluster: refused, nothing changes
    let (status, _, taken) = post_form(
        &node(&cluster, 2),
        "/api/v1/series/rename",
        &[("from", "ren"), ("to", "taken")],
    );
    assert_eq!(status, 409, "{taken}");
    assert!(
        taken["error"].as_str().unwrap().contains("taken.h3.cpu"),
        "{taken}"
    );
    // nothing at `from`
    let (status, _, none) = post_form(
        &ingest,
        "/api/v1/series/rename",
        &[("from", "nothing.here"), ("to", "moved")],
    );
    assert_eq!(status, 404, "{none}");
    assert!(found(&ingest, "moved.*").is_empty());
    assert_eq!(read(&ingest, "ren.*.*", false, fine), want_fine);

    // node 3 is down during the rename, which goes to node 1
    if kill {
        cluster.node("kill", 3);
    }
    let t_rename = Instant::now();
    let (status, _, done) = post_form(
        &node(&cluster, 1),
        "/api/v1/series/rename",
        &[("from", "ren"), ("to", "moved")],
    );
    eprintln!(
        "rename answered in {:.2}s",
        t_rename.elapsed().as_secs_f64()
    );
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["renamed"], Value::from(HOSTS * 2), "{done}");
    assert_eq!(
        done["series"][11]["to"],
        Value::from("moved.h5.mem"),
        "{done}"
    );
    // node 1 has applied its markers: it holds no old name
    assert!(read(&node(&cluster, 1), "ren.*.*", true, coarse).is_empty());

    if kill {
        cluster.node("start", 3);
    }
    let want_fine = renamed(&want_fine);
    let want_coarse = renamed(&want_coarse);
    let nodes: Vec<String> = (1..=3).map(|n| node(&cluster, n)).collect();
    let hosts: Vec<String> = (0..HOSTS).map(|h| format!("moved.h{h}")).collect();
    // every node answers for the whole cluster with the new names and the old values
    for addr in std::iter::once(&ingest).chain(&nodes) {
        eventually(&format!("the renamed series through {addr}"), 120, || {
            let got = read(addr, "moved.*.*", false, fine);
            let old = read(addr, "moved.*.*", false, coarse);
            let gone = read(addr, "ren.*.*", false, coarse);
            let (f_new, f_old) = (found(addr, "moved.*"), found(addr, "ren.*"));
            (got == want_fine
                && old == want_coarse
                && gone.is_empty()
                && f_new == hosts
                && f_old.is_empty())
            .then_some(())
            .ok_or_else(|| {
                format!(
                    "fine {:?}, coarse {:?}, {} old names, find {f_new:?} and {f_old:?}",
                    kafka::diff(&want_fine, &got),
                    kafka::diff(&want_coarse, &old),
                    gone.len()
                )
            })
        });
    }
    // every new series on both replicas of its partition, identical, once every
    // storage node has consumed the whole data topic; no old name stored anywhere
    // (node 3 applied the markers when it replayed the data topic)
    eventually("both replicas of every new series", 120, || {
        let mut copies: BTreeMap<String, Vec<(usize, Series)>> = BTreeMap::new();
        for (n, addr) in nodes.iter().enumerate() {
            let lag = lag(addr);
            if lag > 0.0 {
                return Err(format!("node {} lags {lag} records", n + 1));
            }
            let left = read(addr, "ren.*.*", true, coarse);
            if !left.is_empty() {
                return Err(format!("node {} holds {:?}", n + 1, left.keys()));
            }
            let coarse_here = read(addr, "moved.*.*", true, coarse);
            for (name, mut points) in read(addr, "moved.*.*", true, fine) {
                points.extend(coarse_here.get(&name).cloned().unwrap_or_default());
                copies.entry(name).or_default().push((n + 1, points));
            }
        }
        if copies.len() != HOSTS * 2 {
            return Err(format!("{} new series stored", copies.len()));
        }
        for (name, on) in &copies {
            let nodes: Vec<usize> = on.iter().map(|c| c.0).collect();
            if on.len() != 2 || on[0].1 != on[1].1 {
                // the slots where the copies differ, by their age now
                let now = unix_now();
                let differ: Vec<i64> = on
                    .iter()
                    .flat_map(|c| c.1.iter())
                    .filter(|(ts, v)| on.iter().any(|c| c.1.get(ts) != Some(v)))
                    .map(|(ts, _)| now - ts)
                    .collect();
                return Err(format!(
                    "{name} on nodes {nodes:?}, points {:?}, {} slots differ, aged {:?}..{:?} s",
                    on.iter().map(|c| c.1.len()).collect::<Vec<_>>(),
                    differ.len(),
                    differ.iter().min(),
                    differ.iter().max()
                ));
            }
            let want: BTreeMap<i64, f64> = want_fine[name]
                .iter()
                .chain(&want_coarse[name])
                .map(|(t, v)| (*t, *v))
                .collect();
            if on[0].1 != want {
                return Err(format!(
                    "{name}: {:?}",
                    kafka::diff(
                        &BTreeMap::from([(name.clone(), want)]),
                        &BTreeMap::from([(name.clone(), on[0].1.clone())])
                    )
                ));
            }
        }
        Ok(())
    });
    assert_eq!(found(&ingest, "taken.*"), vec!["taken.h3".to_string()]);
    eprintln!("done in {:.1}s", t_start.elapsed().as_secs_f64());
}
