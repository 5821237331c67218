//! `sumi import whisper` into a cluster, against graphite-web 1.1.10 reading the same
//! whisper files: with `--config` of a cluster node the import goes through that running
//! node into the data topic, each point placed by every replica of its partition by its
//! age at the import (`docs/cluster.md`, GrowthForecast: "`sumi import whisper` and
//! `sumi import rrd` into a cluster"). The storage nodes are given carbon's rules for
//! the files (`storage-schemas.conf` and `storage-aggregation.conf` as carbon would have
//! had them), so the cluster must then answer graphite-web's questions (`import_whisper_gen.py`:
//! every aggregation method, gaps, history only coarser archives hold, tagged series)
//! exactly as graphite-web does, through every node; and the two replicas of each
//! series must each hold it whole.
//!
//! Needs Java and Maven, like every kafka_* test, and the graphite-diff venv
//! (tests/graphite-diff/setup.sh, as `import_whisper`); never skipped.

mod common;
#[path = "common/kafka.rs"]
mod kafka;
#[path = "common/whisper_ref.rs"]
mod whisper_ref;

use std::time::{Duration, Instant};

use kafka::{get, require_kafka, Cluster};
use serde_json::Value;
use whisper_ref::{differences, import, reference, summary_number};

/// The generator's archives (`SCHEMAS` in import_whisper_gen.py), by name.
const SCHEMAS: &str = "\
[s1]
pattern = ^imp\\.s1\\.
retentions = 10s:1h,1m:1d,10m:7d

[tagged]
pattern = ^(cpu\\.usage|disk\\.used);
retentions = 10s:1h,1m:1d,10m:7d

[s2]
pattern = ^imp\\.s2\\.
retentions = 1m:6h,5m:2d

[s3]
pattern = ^imp\\.s3\\.
retentions = 1m:1d

[s4]
pattern = ^imp\\.s4\\.
retentions = 30s:2h,5m:1d,1h:7d
";

/// Each file's aggregation method and xFilesFactor (`series_list()` of the generator).
const AGGREGATION: [(&str, &str, f64); 14] = [
    ("imp\\.s1\\.average", "average", 0.0),
    ("imp\\.s1\\.sum", "sum", 0.3),
    ("imp\\.s1\\.last", "last", 0.5),
    ("imp\\.s1\\.max", "max", 1.0),
    ("imp\\.s1\\.min", "min", 0.0),
    ("imp\\.s1\\.avg_zero", "avg_zero", 0.3),
    ("imp\\.s1\\.absmax", "absmax", 0.5),
    ("imp\\.s1\\.absmin", "absmin", 1.0),
    ("imp\\.s2\\.avg", "average", 0.5),
    ("imp\\.s2\\.sum", "sum", 0.0),
    ("imp\\.s3\\.max", "max", 0.5),
    ("imp\\.s4\\.last", "last", 0.1),
    ("imp\\.s4\\.average", "average", 0.3),
    ("(cpu\\.usage|disk\\.used);.*", "average", 0.5),
];

/// A single series' name when the question's target is one (not a function or glob).
fn plain_target(path: &str) -> Option<String> {
    let q = path.split_once('?')?.1;
    let target = form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == "target")?
        .1;
    let plain = !target.contains(['(', '*', '{', '[']);
    plain.then(|| target.into_owned())
}

#[test]
fn whisper_import_into_a_cluster_answers_like_graphite_web() {
    require_kafka();
    let t_start = Instant::now();
    // the cluster first: the generator's T0 is "now" for the import's placement, and
    // its ranges keep 5 minutes from every retention's edge
    let rules: String = AGGREGATION
        .iter()
        .enumerate()
        .map(|(i, (pattern, method, xff))| {
            format!("[r{i}]\npattern = ^{pattern}$\nxFilesFactor = {xff}\naggregationMethod = {method}\n\n")
        })
        .collect();
    let cluster = Cluster::up_with_rules("sumi-kafka-importwsp", SCHEMAS, &rules);
    let work = cluster.dir.path().join("graphite");
    std::fs::create_dir_all(&work).unwrap();
    eprintln!("cluster up in {:.1}s", t_start.elapsed().as_secs_f64());
    let r = reference(&work);
    assert!(r.queries.len() > 50, "{} questions", r.queries.len());
    eprintln!(
        "graphite-web's answers in {:.1}s",
        t_start.elapsed().as_secs_f64()
    );

    let state = cluster.dir.path().join("import.state");
    let (out, text) = import(&[
        "whisper",
        r.whisper_dir.to_str().unwrap(),
        "--config",
        cluster.config(2).to_str().unwrap(),
        "--tagged-names",
        r.tagged_names.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    eprintln!("{text}");
    // the damaged file is skipped (status 1), every point read is written through the node
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("through it at http://"), "{text}");
    let damaged = r.damaged.to_str().unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("skipped") && l.contains(damaged)),
        "{text}"
    );
    // every point read is sent, or left to the storage nodes' rollup where a finer
    // archive covers its time (said in the summary)
    let read = summary_number(&text, "points:", 0);
    assert!(read > 10_000, "{text}");
    let written = summary_number(&text, "points:", 1);
    let covered = summary_number(&text, "points:", 4);
    assert!(covered > 0, "{text}");
    assert_eq!(written + covered, read, "{text}");
    assert!(text.contains("covered by a finer archive"), "{text}");

    // every node answers every question as graphite-web does, once the replicas applied
    // the points
    let mut nodes = vec![cluster.get("INGEST_HTTP")];
    nodes.extend((1..=3).map(|n| cluster.get(&format!("NODE{n}_HTTP"))));
    let deadline = Instant::now() + Duration::from_secs(90);
    for addr in &nodes {
        loop {
            let fetch = |p: &str| {
                let (status, _, body) = get(addr, p);
                (status, body)
            };
            let bad = differences(fetch, &r, addr);
            if bad.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{addr}: {} of {} answers differ from graphite-web's:\n{}",
                bad.len(),
                r.queries.len(),
                bad.join("\n")
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    // each replica holds each series whole: asked alone (`local=1`), a storage node
    // answers a one-series question as graphite-web or not at all, and exactly the two
    // owners of the series' partition answer it
    let mut checked = 0;
    for (path, want) in &r.queries {
        let Some(name) = plain_target(path) else {
            continue;
        };
        if want.as_array().is_none_or(|a| a.is_empty()) {
            continue;
        }
        let mut holders = Vec::new();
        for n in 1..=3 {
            let addr = cluster.get(&format!("NODE{n}_HTTP"));
            let (status, _, body) = get(&addr, &format!("{path}&local=1"));
            let got: Value = serde_json::from_str(&body)
                .unwrap_or_else(|e| panic!("node {n}: {path}: {status} {body:?}: {e}"));
            if got.as_array().is_some_and(|a| !a.is_empty()) {
                assert_eq!(&got, want, "node {n} alone, {name}: {path}");
                holders.push(n);
            }
        }
        assert_eq!(holders.len(), 2, "{name} held whole by {holders:?}: {path}");
        checked += 1;
    }
    assert!(
        checked > 30,
        "{checked} one-series questions checked per replica"
    );
    eprintln!("done in {:.1}s", t_start.elapsed().as_secs_f64());
}
