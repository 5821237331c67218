//! Runs a child process to completion or stops it after a limit, with its output kept
//! for the failure message: the plumbing of the tests that drive the Python harness in
//! `tests/graphite-diff/` (`graphite_diff.rs`, `kafka_graphite_diff.rs`).

#![allow(unreachable_pub)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

pub fn harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graphite-diff")
}

pub struct Outcome {
    pub success: bool,
    pub status: String,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn transcript(&self) -> String {
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
pub fn run_bounded(mut command: Command, limit: Duration) -> Outcome {
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
