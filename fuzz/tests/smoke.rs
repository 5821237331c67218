//! CI's smoke run of every fuzz target: the stable driver, a couple of seconds each,
//! seeded, so that targets cannot rot and a regression in a parser's robustness fails
//! the build. Long runs use cargo-fuzz (see fuzz/README.md).

use std::process::Command;

#[test]
fn every_target_survives_a_short_seeded_run() {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");
    let artifacts = std::env::temp_dir().join("sumi-fuzz-artifacts");
    let out = Command::new(env!("CARGO_BIN_EXE_fuzz-smoke"))
        .args(["--secs", "2", "--seed", "20261122", "--corpus", corpus])
        .args(["--min-iters", &MIN_INPUTS.to_string()])
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .expect("run fuzz-smoke");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "fuzz smoke run failed:\n{stdout}\n{stderr}"
    );
    for (name, _) in sumi_fuzz::TARGETS {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name) && l.contains(" ok "))
            .unwrap_or_else(|| panic!("target {name} did not run:\n{stdout}"));
        let (inputs, seeds) = counts(line);
        assert!(
            inputs >= MIN_INPUTS,
            "target {name} ran {inputs} inputs, fewer than {MIN_INPUTS}:\n{stdout}"
        );
        assert!(seeds > 0, "target {name} started from no seed:\n{stdout}");
    }
}

/// Inputs each target must get through (of a debug build; the driver gives it up to 20 s
/// on a loaded machine), so that a target that stopped doing work, or became too slow to
/// find anything, fails.
const MIN_INPUTS: u64 = 1000;

/// The inputs and seeds of a driver line
/// (`<target>  ok  <inputs> inputs in <secs> s (<rate>/s), <seeds> seeds`).
fn counts(line: &str) -> (u64, u64) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let before = |word: &str| -> u64 {
        let i = words
            .iter()
            .position(|w| *w == word)
            .unwrap_or_else(|| panic!("no {word:?} in {line:?}"));
        words[i - 1]
            .parse()
            .unwrap_or_else(|e| panic!("{line:?}: {e}"))
    };
    (before("inputs"), before("seeds"))
}
