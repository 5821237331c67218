//! graphite-web 1.1.10 as a real client of sumi's cluster protocol.
//!
//! `tests/graphite-diff/run.py --cluster` (see `gdiff/cluster.py`) feeds the harness's
//! generated points to this package's `sumi` binary, starts graphite-web with
//! `CLUSTER_SERVERS` pointing at sumi and no data of its own (once reading
//! `format=pickle`, once `format=msgpack`), and compares what graphite-web answers for a
//! set of dashboard queries (paths, globs, functions, `/metrics/find`,
//! `/metrics/index.json`) with what sumi answers directly.
//!
//! Like `graphite_diff.rs`, this never skips: a machine without python3, its venv module
//! or libcairo2 fails with the command that fixes it. `SUMI_GRAPHITE_DIFF_KEEP=1` keeps
//! the run's data and logs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

const SETUP_LIMIT: Duration = Duration::from_secs(600);
const RUN_LIMIT: Duration = Duration::from_secs(600);

fn harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graphite-diff")
}

/// Runs a command to completion (or kills it after `limit`): (success, transcript).
fn run_bounded(mut command: Command, limit: Duration) -> (bool, String) {
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start {shown}: {e} (apt-get install python3 python3-venv)")
        });
    let mut readers = Vec::new();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ] {
        readers.push(thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                // a read error only shortens the transcript
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        }));
    }
    let pid = child.id();
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let status = child.wait();
        let _ = done_tx.send(());
        status
    });
    let timed_out = done_rx.recv_timeout(limit).is_err();
    if timed_out {
        // SIGTERM first, so that run.py stops the servers it started; then SIGKILL
        let pid = libc::pid_t::try_from(pid).unwrap_or(libc::pid_t::MAX);
        // SAFETY: kill(2) on the pid of our child, which is not reaped until the waiter
        // thread signals `done`.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        if done_rx.recv_timeout(Duration::from_secs(30)).is_err() {
            // SAFETY: as above.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    let status = waiter.join().expect("waiter thread");
    let texts: Vec<String> = readers
        .into_iter()
        .map(|r| r.join().unwrap_or_default())
        .collect();
    let ok = !timed_out && status.as_ref().is_ok_and(|s| s.success());
    let transcript = format!(
        "{shown}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        if timed_out {
            format!("stopped after {}s", limit.as_secs())
        } else {
            format!("{status:?}")
        },
        texts[0],
        texts[1]
    );
    (ok, transcript)
}

#[test]
fn graphite_web_reads_sumi_over_its_cluster_protocol() {
    let dir = harness_dir();
    let mut setup = Command::new("bash");
    setup.arg(dir.join("setup.sh"));
    let (ok, transcript) = run_bounded(setup, SETUP_LIMIT);
    assert!(
        ok,
        "setting up the graphite-web reference venv failed:\n{transcript}"
    );

    let mut cluster = Command::new("python3");
    cluster
        .arg(dir.join("run.py"))
        .arg("--cluster")
        .arg("--sumi-bin")
        .arg(env!("CARGO_BIN_EXE_sumi"))
        .arg("--deadline")
        .arg((RUN_LIMIT.as_secs() - 60).to_string());
    if std::env::var_os("SUMI_GRAPHITE_DIFF_KEEP").is_some() {
        cluster.arg("--keep");
    }
    let (ok, transcript) = run_bounded(cluster, RUN_LIMIT);
    assert!(
        ok,
        "graphite-web's cluster answers differ from sumi's (or the harness failed):\n{transcript}"
    );
    let summary = transcript
        .lines()
        .rev()
        .find(|l| l.starts_with("summary:"))
        .unwrap_or("");
    assert!(
        summary.contains("all identical")
            && summary.contains("x 2 passes")
            && !summary.starts_with("summary: 0 queries"),
        "no summary of both front ends:\n{transcript}"
    );
    println!("{summary}");
}
