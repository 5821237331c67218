//! `sumi import growthforecast` into a cluster (`docs/cluster.md`, GrowthForecast):
//! with `--config` of a cluster node, the import goes through that running node: the
//! graphs, complex graph and vertical rules as ops of the metadata log (every node holds
//! the same rows), each graph's history as points of the data topic (every replica of
//! its partition stores them, placed by their age at the import). Real processes, a
//! real Kafka (`scripts/cluster-up.sh`), GrowthForecast's files made by rrdtool
//! (`import_gf_gen.py`, as for `import_gf`).
//!
//! Needs Java and Maven, like every kafka_* test, and rrdtool; never skipped.

mod common;
#[path = "common/kafka.rs"]
mod kafka;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use kafka::{http_get, require_kafka, unix_now, Cluster};
use serde_json::Value;

/// GrowthForecast's RRAs (the 1-minute file's, then the 5-minute file's AVERAGEs) as
/// the storage nodes' schema, so that every level of the files has an archive.
const SCHEMAS: &str =
    "[all]\npattern = .*\nretentions = 60:4800,300:1440,1800:1008,7200:1344,86400:2500\n";

const DAY: i64 = 86400;

/// A series' points: ts → value.
type Series = BTreeMap<i64, f64>;

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(addr: &str, path: &str) -> Value {
    serde_json::from_str(&http_get(addr, path)).unwrap()
}

/// `(t, value)` of fetched rows (time, IEEE bits in hex or null).
fn rows(v: &Value) -> Vec<(i64, f64)> {
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let bits = u64::from_str_radix(r[1].as_str()?, 16).unwrap();
            Some((r[0].as_i64().unwrap(), f64::from_bits(bits)))
        })
        .collect()
}

/// `(t, value)` of an `/xport` answer's one column.
fn xport(addr: &str, path: &str) -> HashMap<i64, Option<f64>> {
    let x = json(addr, path);
    let start = x["start_timestamp"].as_i64().unwrap();
    let step = x["step"].as_i64().unwrap();
    x["rows"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, r)| (start + i as i64 * step, r[0].as_f64()))
        .collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// What a graph shows of a stored value (graph 3 has limits and `adjust`).
fn shown(g: &Value, v: f64) -> Option<f64> {
    if g["id"] == 3 {
        return (0.0..=900.0).contains(&v).then_some(v / 1000.0);
    }
    Some(v)
}

/// The rows of `want` in `[from, until)` against the `/xport` of view `t`: every one
/// the answer has, equal; most of them compared.
fn check_rows(addr: &str, g: &Value, t: &str, want: &[(i64, f64)], from: i64, until: i64) {
    let path = format!(
        "/xport/{}/{}/{}?t={t}&width=4000",
        g["service"].as_str().unwrap(),
        g["section"].as_str().unwrap(),
        g["graph"].as_str().unwrap()
    );
    let path = if g["service"] == "ユーザー" {
        format!("/xport/%E3%83%A6%E3%83%BC%E3%82%B6%E3%83%BC/load%20avg/50%25?t={t}&width=4000")
    } else {
        path
    };
    let got = xport(addr, &path);
    let first = got.keys().min().copied().unwrap_or_default();
    let (mut known, mut compared) = (0, 0);
    for &(ts, w) in want.iter().filter(|(ts, _)| (from..until).contains(ts)) {
        let Some(w) = shown(g, w) else { continue };
        known += 1;
        let Some(&gv) = got.get(&ts) else { continue };
        // a rate's first rows, and a first row covering less than its step, differ
        if ts <= first + 2 * 1800 {
            continue;
        }
        let gv = gv.unwrap_or_else(|| panic!("{addr}{path} at {ts}: null, rrdtool {w}"));
        let tol = if g["derive"] == true { 1e-6 } else { 1e-12 };
        assert!(
            close(gv, w, tol),
            "{addr}{path} at {ts}: sumi {gv}, rrdtool {w}"
        );
        compared += 1;
    }
    assert!(
        known > 20 && compared + 5 >= known,
        "{addr}{path}: {compared} of {known} rows compared"
    );
}

/// What a storage node holds itself of every series, as each archive holds the points
/// written into it (not the rollups of finer archives, which a replica computes when it
/// seals a partition): the 1-minute archive over the last three days, the 30-minute
/// one from 21 to 6 days ago, the daily one beyond 115 days; keyed by view and series.
fn local(addr: &str, t0: i64) -> kafka::Points {
    let mut out = kafka::Points::new();
    for (from, until) in [(3 * DAY, 0), (20 * DAY, 6 * DAY), (400 * DAY, 115 * DAY)] {
        let got = kafka::points_of(&http_get(
            addr,
            &format!("/render?target=*.*.*&from=-{from}s&format=json&local=1"),
        ));
        for (name, points) in got {
            let kept: Series = points
                .into_iter()
                .filter(|(ts, _)| until == 0 || *ts < t0 - until)
                .collect();
            if !kept.is_empty() {
                out.insert(format!("{from} {name}"), kept);
            }
        }
    }
    out
}

#[test]
fn growthforecast_import_into_a_cluster_reaches_every_node() {
    require_kafka();
    let t_start = Instant::now();
    let mut cluster = Cluster::up("sumi-kafka-importgf", Some(SCHEMAS), &[]);
    eprintln!("cluster up in {:.1}s", t_start.elapsed().as_secs_f64());
    let gf_dir = cluster.dir.path().join("gf");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_gf_gen.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(&gf_dir)
        .arg(cluster.dir.path().join("gf.sql"))
        .output()
        .expect("run import_gf_gen.py (apt-get install python3 rrdtool)");
    assert!(out.status.success(), "import_gf_gen.py:\n{}", text(&out));
    let gen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t0 = unix_now();

    // the cluster node's configuration: the import goes through the running node
    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["import", "growthforecast"])
        .arg(&gf_dir)
        .arg("--config")
        .arg(cluster.config(2))
        .arg("--state")
        .arg(cluster.dir.path().join("import.state"))
        .output()
        .unwrap();
    let t = text(&out);
    eprintln!("{t}");
    // graph 8's file is cut, row 9's meta is not JSON: skips make status 1
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("through it at http://"), "{t}");
    assert!(t.contains("graphs: 8 (8 created, 0 updated)"), "{t}");
    assert!(t.contains("complex graphs: 1 (1 created"), "{t}");
    assert!(t.contains("vertical rules: 2 (2 added"), "{t}");
    // the node refuses no database of its own at its next start (nothing was written
    // into it but from the log)
    cluster.node("stop", 2);
    cluster.node("start", 2);

    let mut nodes = vec![cluster.get("INGEST_HTTP")];
    nodes.extend((1..=3).map(|n| cluster.get(&format!("NODE{n}_HTTP"))));
    // every node holds the same graphs, complex graph and vertical rules
    let shown_by = |addr: &str| {
        [
            json(addr, "/json/list/all"),
            json(addr, "/json/graph/web/access/uu"),
            json(addr, "/vrule/summary"),
        ]
    };
    let want = shown_by(&nodes[0]);
    assert_eq!(want[0].as_array().unwrap().len(), 9, "{}", want[0]);
    assert_eq!(want[1]["color"], "#3366cc", "{}", want[1]);
    let deadline = Instant::now() + Duration::from_secs(30);
    for addr in &nodes[1..] {
        while shown_by(addr) != want {
            assert!(Instant::now() < deadline, "{addr}: {:?}", shown_by(addr));
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    // every replica of a partition holds the same points of every graph
    let mut by_series: BTreeMap<String, Vec<(usize, Series)>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        by_series.clear();
        for (n, addr) in nodes.iter().enumerate().skip(1) {
            for (name, points) in local(addr, t0) {
                by_series.entry(name).or_default().push((n, points));
            }
        }
        // the six graphs with files in every view, and the two without (their post's
        // point) in the last three days
        let settled = by_series.len() == 6 * 3 + 2
            && by_series
                .values()
                .all(|on| on.len() == 2 && on[0].1 == on[1].1);
        if settled {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replicas differ: {:?}",
            by_series
                .iter()
                .map(|(k, on)| {
                    let nodes: Vec<_> = on.iter().map(|(n, p)| (*n, p.len())).collect();
                    // the slots the two replicas disagree on: time, age at the import, values
                    let differ = on.get(1).map(|(_, b)| {
                        let a = &on[0].1;
                        a.keys()
                            .chain(b.keys().filter(|t| !a.contains_key(t)))
                            .filter(|t| a.get(t) != b.get(t))
                            .map(|t| (*t, t0 - *t, a.get(t).copied(), b.get(t).copied()))
                            .collect::<Vec<_>>()
                    });
                    (k, nodes, differ)
                })
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // the values: the 1-minute file's over the last day, and the 30-minute archive's
    // beyond the 5-minute archive's five days, read through any node
    for g in gen["graphs"].as_array().unwrap() {
        let f = &g["fetch"];
        for addr in [&nodes[0], &nodes[3]] {
            check_rows(addr, g, "sd", &rows(&f["60"]), t0 - DAY, t0);
            check_rows(addr, g, "w", &rows(&f["1800"]), t0 - 8 * DAY, t0 - 6 * DAY);
        }
    }
    eprintln!("done in {:.1}s", t_start.elapsed().as_secs_f64());
}
