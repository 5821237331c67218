//! `sumi import rrd` into a cluster, against `rrdtool fetch` on the same files: with
//! `--config` of a cluster node the import goes through that running node into the data
//! topic, every replica of a series' partition placing each point by its age at the
//! import. The storage nodes are given the files' archives and consolidations as
//! carbon rules (`storage-schemas.conf`, `storage-aggregation.conf`); then `/render` of
//! every (data source, consolidation function) over a range its RRA alone serves gives
//! rrdtool's rows bit for bit through every node, and through each replica alone.
//!
//! Needs Java and Maven, like every kafka_* test, and python3-rrdtool; never skipped.

mod common;
#[path = "common/kafka.rs"]
mod kafka;
#[path = "common/rrd_ref.rs"]
mod rrd_ref;

use std::process::Command;
use std::time::{Duration, Instant};

use kafka::{get, require_kafka, Cluster};

/// The generator's RRAs (`FILES` in import_rrd_gen.py) as archives, by series: rows ×
/// steps × the file's step, in seconds.
const SCHEMAS: &str = "\
[munin_average]
pattern = ^munin\\.load\\.[a-z]+\\.average$
retentions = 60:1440,300:864

[munin_extremes]
pattern = ^munin\\.load\\.[a-z]+\\.(min|max)$
retentions = 300:864

[munin_last]
pattern = ^munin\\.load\\.[a-z]+\\.last$
retentions = 60:1440

[cpu_average]
pattern = ^web01\\.cpu-0\\.cpu-idle\\.value\\.average$
retentions = 10:4320,300:600

[cpu_max]
pattern = ^web01\\.cpu-0\\.cpu-idle\\.value\\.max$
retentions = 300:600

[if_average]
pattern = ^web01\\.if_octets-eth0\\.[a-z]+\\.average$
retentions = 30:2880,300:576

[if_last]
pattern = ^web01\\.if_octets-eth0\\.[a-z]+\\.last$
retentions = 30:2880
";

/// The consolidation functions and xFilesFactors of the files' RRAs.
const AGGREGATION: &str = "\
[cpu_average]
pattern = ^web01\\.cpu-0\\.cpu-idle\\.value\\.average$
xFilesFactor = 0.1
aggregationMethod = average

[average]
pattern = \\.average$
xFilesFactor = 0.5
aggregationMethod = average

[min]
pattern = \\.min$
xFilesFactor = 0.5
aggregationMethod = min

[max]
pattern = \\.max$
xFilesFactor = 0.5
aggregationMethod = max

[last]
pattern = \\.last$
xFilesFactor = 0.5
aggregationMethod = last
";

#[test]
fn rrd_import_into_a_cluster_renders_what_rrdtool_fetches() {
    require_kafka();
    let t_start = Instant::now();
    let cluster = Cluster::up_with_rules("sumi-kafka-importrrd", SCHEMAS, AGGREGATION);
    eprintln!("cluster up in {:.1}s", t_start.elapsed().as_secs_f64());
    let rrd_dir = cluster.dir.path().join("rrd");
    let gen = rrd_ref::generate(&rrd_dir);

    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["import", "rrd"])
        .arg(&rrd_dir)
        .arg("--config")
        .arg(cluster.config(1))
        .arg("--state")
        .arg(cluster.dir.path().join("import.state"))
        .output()
        .expect("run sumi import rrd");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("through it at http://"), "{text}");
    assert!(text.starts_with("files: 3 (3 imported"), "{text}");
    // the storage nodes create the series (as they apply the log), not the import
    assert!(text.contains("series: 14 (0 created)"), "{text}");

    // through every node (each fans out), once the replicas applied the points; then
    // each storage node alone, where it holds the series
    let mut nodes = vec![cluster.get("INGEST_HTTP")];
    nodes.extend((1..=3).map(|n| cluster.get(&format!("NODE{n}_HTTP"))));
    let deadline = Instant::now() + Duration::from_secs(60);
    for addr in &nodes {
        let fetch = |p: &str| {
            let (status, _, body) = get(addr, p);
            (status, body)
        };
        loop {
            let tried = std::panic::catch_unwind(|| rrd_ref::check_fetches(fetch, &gen, ""));
            match tried {
                Ok(()) => break,
                Err(e) if Instant::now() >= deadline => std::panic::resume_unwind(e),
                Err(_) => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }
    // each replica alone (`local=1`): the series it holds, as rrdtool; every series
    // held by exactly two
    let fetches = gen["fetches"].as_array().unwrap();
    assert_eq!(fetches.len(), 19);
    let mut held_by = vec![0; fetches.len()];
    for n in 1..=3 {
        let addr = cluster.get(&format!("NODE{n}_HTTP"));
        let fetch = |p: &str| {
            let (status, _, body) = get(&addr, p);
            (status, body)
        };
        let mut held = Vec::new();
        for (i, f) in fetches.iter().enumerate() {
            let series = f["series"].as_str().unwrap();
            let (_, body) = fetch(&format!(
                "/render?target={series}&from=-4d&format=json&local=1"
            ));
            if body.trim() != "[]" {
                held_by[i] += 1;
                held.push(f.clone());
            }
        }
        let mine = serde_json::json!({"t0": gen["t0"], "fetches": held});
        rrd_ref::check_fetches(fetch, &mine, "&local=1");
    }
    assert!(
        held_by.iter().all(|&n| n == 2),
        "replicas per fetch: {held_by:?}"
    );
    eprintln!("done in {:.1}s", t_start.elapsed().as_secs_f64());
}
