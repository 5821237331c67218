//! The Graphite differential test's plain cases through a sumi cluster on Apache Kafka.
//!
//! `tests/graphite-diff/run.py --kafka-cluster` (gdiff/kafka.py) sends the differential
//! test's points (every schema and archive, too old and future points, pickled series)
//! to a single sumi node and to the ingest node of a cluster started by
//! `scripts/cluster-up.sh` (one Kafka broker, one ingest node, three storage nodes,
//! every partition on two of them), then asks the plain cases (every glob over every
//! archive's range, several targets, the metric tree in every format) of the single
//! node and, with the same `now`, of the cluster's ingest node and of a storage node,
//! and compares the answers value by value. The single node is what `graphite_diff.rs`
//! holds to graphite-web and whisper.
//!
//! Needs the reference venv (`tests/graphite-diff/setup.sh`, as `graphite_diff.rs`),
//! Java and Maven (as `kafka_cluster.rs`); never skipped.

#[path = "common/bounded.rs"]
mod bounded;

use std::process::Command;
use std::time::Duration;

use bounded::{harness_dir, run_bounded};

/// First-time setup installs a dozen packages with pip; later runs take a second.
const SETUP_LIMIT: Duration = Duration::from_secs(600);
/// The comparison takes about a minute; run.py has its own deadline below this.
const RUN_LIMIT: Duration = Duration::from_secs(600);

#[test]
fn a_kafka_cluster_answers_the_plain_cases_like_a_single_node() {
    for (cmd, package) in [("java", "default-jre-headless"), ("mvn", "maven")] {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {cmd}"))
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "`{cmd}` not found: apt-get install {package} (.ci/run does)"
        );
    }
    let dir = harness_dir();
    let mut setup = Command::new("bash");
    setup.arg(dir.join("setup.sh"));
    let setup = run_bounded(setup, SETUP_LIMIT);
    assert!(
        setup.success,
        "setting up the graphite-web reference venv failed:\n{}",
        setup.transcript()
    );
    let mut diff = Command::new("python3");
    diff.arg(dir.join("run.py"))
        .arg("--sumi-bin")
        .arg(env!("CARGO_BIN_EXE_sumi"))
        .arg("--kafka-cluster")
        .arg("--deadline")
        .arg((RUN_LIMIT.as_secs() - 120).to_string());
    if std::env::var_os("SUMI_GRAPHITE_DIFF_KEEP").is_some() {
        diff.arg("--keep");
    }
    let diff = run_bounded(diff, RUN_LIMIT);
    assert!(
        diff.success,
        "the cluster and a single node answer differently (or the harness failed):\n{}",
        diff.transcript()
    );
    let summary = diff
        .stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("summary:"))
        .unwrap_or("");
    assert!(
        summary.contains("all identical") && !summary.starts_with("summary: 0 queries"),
        "run.py succeeded without a summary of compared queries:\n{}",
        diff.transcript()
    );
    println!("{summary}");
}
