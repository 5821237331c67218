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

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// First-time setup installs a dozen packages with pip; later runs take a second.
const SETUP_LIMIT: Duration = Duration::from_secs(600);
/// The comparison takes about a minute; run.py has its own deadline below this.
const RUN_LIMIT: Duration = Duration::from_secs(600);

fn harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graphite-diff")
}

struct Outcome {
    success: bool,
    status: String,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // a read error only shortens the transcript
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Asks the child to stop (SIGTERM, so that run.py stops the servers it started), then
/// kills it if it is still there after a grace period.
fn stop(child_pid: u32, done: &mpsc::Receiver<()>) {
    let pid = libc::pid_t::try_from(child_pid).unwrap_or(libc::pid_t::MAX);
    // SAFETY: kill(2) with a pid we spawned and have not reaped yet (the waiting
    // thread signals `done` only after wait() returned).
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    if done.recv_timeout(Duration::from_secs(30)).is_err() {
        // SAFETY: as above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Runs a command to completion, or stops it after `limit`; never hangs.
fn run_bounded(mut command: Command, limit: Duration) -> Outcome {
    let shown = format!("{command:?}");
    let mut child: Child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e} (is python3 installed? apt-get install python3 python3-venv)"));
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let pid = child.id();
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let status = child.wait();
        let _ = done_tx.send(());
        status
    });
    let timed_out = match done_rx.recv_timeout(limit) {
        Ok(()) => false,
        Err(_) => {
            stop(pid, &done_rx);
            true
        }
    };
    let status = waiter.join().expect("waiter thread panicked");
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let (success, status) = match status {
        _ if timed_out => (
            false,
            format!("stopped after {}s: {shown}", limit.as_secs()),
        ),
        Ok(s) => (s.success(), format!("{s} ({shown})")),
        Err(e) => (false, format!("wait failed: {e} ({shown})")),
    };
    Outcome {
        success,
        status,
        stdout,
        stderr,
    }
}

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
