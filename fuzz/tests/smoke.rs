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
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(name) && l.contains(" ok ")),
            "target {name} did not run:\n{stdout}"
        );
    }
}
