//! The Numenta Anomaly Benchmark, scored by NAB's own scorer: the default detector must
//! not fall below the standard-profile score recorded in docs/anomaly.md.
//!
//! Needs NAB (the corpus, labels and scorer; `SUMI_NAB`, else `../shared/nab` or
//! `../../shared/nab` beside the repository, else `target/nab`, which `.ci/run` clones at
//! the pinned commit) and the scorer's Python stack, which `scripts/nab-score.sh --setup`
//! builds in `target/nab-venv` (pip downloads, once).

#[path = "../examples/nab/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::process::Command;

use sumi_anomaly::Config;

/// The default configuration's standard-profile score when it was recorded
/// (docs/anomaly.md). The run is deterministic; the margin only absorbs rounding.
const RECORDED_STANDARD: f64 = 75.40;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn nab_dir() -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::env::var_os("SUMI_NAB")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.extend([
        repo().join("../shared/nab"),
        repo().join("../../shared/nab"),
        repo().join("target/nab"),
    ]);
    candidates
        .iter()
        .find(|d| d.join("run.py").is_file() && d.join("data").is_dir())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "NAB not found (looked at {candidates:?}): set SUMI_NAB, or clone numenta/NAB \
                 at ea702d75cc2258d9d7dd35ca8e5e2539d71f3140 into target/nab (.ci/run does)"
            )
        })
}

/// Copies NAB without the results of other detectors (the scorer needs `results/null`).
fn copy_nab(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read NAB dir") {
        let entry = entry.expect("dir entry");
        let name = entry.file_name();
        let src = entry.path();
        let dst = to.join(&name);
        if src.is_dir() {
            if from.file_name().is_some_and(|n| n == "results") && name != "null" {
                continue;
            }
            std::fs::create_dir_all(&dst).expect("mkdir");
            copy_nab(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

fn final_score(out: &str, profile: &str) -> f64 {
    let key = format!("Final score for 'sumi' detector on '{profile}' profile = ");
    out.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {profile} score in the scorer's output:\n{out}"))
}

#[test]
fn nab_standard_score_holds() {
    let nab = nab_dir();
    let setup = Command::new(repo().join("scripts/nab-score.sh"))
        .arg("--setup")
        .output()
        .expect("run scripts/nab-score.sh --setup");
    assert!(
        setup.status.success(),
        "scorer venv setup failed:\n{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let venv = String::from_utf8_lossy(&setup.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();

    let work = tempfile::tempdir().expect("tempdir");
    copy_nab(&nab, work.path());
    let run = harness::run(work.path(), "sumi", &Config::default()).expect("harness");
    assert_eq!(run.files, 58, "NAB has 58 data files");
    assert_eq!(run.points, 365_558, "NAB has 365,558 points");

    let out = Command::new(Path::new(&venv).join("bin/python"))
        .args([
            "run.py",
            "-d",
            "sumi",
            "--optimize",
            "--score",
            "--normalize",
            "--skipConfirmation",
        ])
        .current_dir(work.path())
        .output()
        .expect("run NAB's scorer");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "NAB's scorer failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let standard = final_score(&stdout, "standard");
    let low_fp = final_score(&stdout, "reward_low_FP_rate");
    let low_fn = final_score(&stdout, "reward_low_FN_rate");
    eprintln!("NAB: standard {standard}, low FP {low_fp}, low FN {low_fn}");
    assert!(
        standard >= RECORDED_STANDARD - 0.01,
        "NAB standard score {standard} fell below the recorded {RECORDED_STANDARD}"
    );
}
