//! The differential test against graphite-web 1.1.10 + whisper 1.1.10.
//!
//! The work is done by the Python harness in `tests/graphite-diff/` (see its README):
//! `setup.sh` creates or checks the reference virtualenv (`target/graphite-venv`, or
//! `$SUMI_GRAPHITE_VENV`), then `run.py` writes the same generated points into whisper
//! files and into this package's `sumi` binary, asks both servers the same `/render` and
//! `/metrics/*` questions with the same `now`, and compares the answers value by value.
//!
//! The harness's own tests (`test_harness.py`: the comparison catches each kind of
//! difference, the data keeps away from retention boundaries) run before the comparison.
//!
//! This test is never ignored and never skips: a machine without python3, its venv
//! module or libcairo2 fails here with the command that fixes it. Set
//! `SUMI_GRAPHITE_DIFF_KEEP=1` to keep the run's data and logs for a look afterwards.

#[path = "common/bounded.rs"]
mod bounded;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bounded::{harness_dir, run_bounded};

/// First-time setup installs a dozen packages with pip; later runs take a second.
const SETUP_LIMIT: Duration = Duration::from_secs(600);
/// The comparison itself takes a minute or two; run.py has its own deadline below this.
const RUN_LIMIT: Duration = Duration::from_secs(1200);

#[test]
fn sumi_answers_like_graphite_web_and_whisper() {
    let dir = harness_dir();

    let mut setup = Command::new("bash");
    setup.arg(dir.join("setup.sh"));
    let setup = run_bounded(setup, SETUP_LIMIT);
    assert!(
        setup.success,
        "setting up the graphite-web reference venv failed:\n{}",
        setup.transcript()
    );

    // setup.sh's last line is the venv; the harness's own tests run first, so that a
    // broken comparison cannot pass silently
    let venv = setup
        .stdout
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut unit = Command::new(Path::new(&venv).join("bin/python"));
    unit.args(["-m", "unittest", "discover", "-s"])
        .arg(&dir)
        .args(["-p", "test_*.py"]);
    let unit = run_bounded(unit, SETUP_LIMIT);
    assert!(
        unit.success,
        "the harness's own tests fail:\n{}",
        unit.transcript()
    );

    let mut diff = Command::new("python3");
    diff.arg(dir.join("run.py"))
        .arg("--sumi-bin")
        .arg(env!("CARGO_BIN_EXE_sumi"))
        .arg("--deadline")
        .arg((RUN_LIMIT.as_secs() - 120).to_string());
    if std::env::var_os("SUMI_GRAPHITE_DIFF_KEEP").is_some() {
        diff.arg("--keep");
    }
    let diff = run_bounded(diff, RUN_LIMIT);
    assert!(
        diff.success,
        "sumi and graphite-web answer differently (or the harness failed):\n{}",
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
