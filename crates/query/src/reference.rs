//! Test support: reference answers from CPython and graphite-web 1.1.10, for the tests
//! that compare this crate with them on thousands of generated inputs (`repr` of
//! floats in [`crate::py::repr`], target trees in `grammar`, time expressions in
//! `attime`).
//!
//! The answers are made on the spot by `tests/graphite-diff/reference_dump.py`, run
//! with the python of the virtualenv `tests/graphite-diff/setup.sh` builds — the same
//! one the server's differential test uses (`target/graphite-venv`, or
//! `$SUMI_GRAPHITE_VENV`). Nothing is skipped: without python3, its venv module or
//! PyPI the first time, these tests fail with what setup.sh says is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A dump shorter than this is a broken dumper, not a pass.
const MIN_LINES: usize = 1000;

fn harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graphite-diff")
}

fn transcript(out: &Output) -> String {
    format!(
        "exit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The reference venv, checked (or built, about 30 s the first time) once per test
/// process; setup.sh's last line of output is its path.
fn venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let setup = harness_dir().join("setup.sh");
        let out = Command::new("bash")
            .arg(&setup)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", setup.display()));
        assert!(
            out.status.success(),
            "setting up the graphite-web reference venv failed:\n{}",
            transcript(&out)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        PathBuf::from(stdout.lines().last().unwrap_or_default().trim())
    })
}

/// The reference answers of one kind (`repr`, `grammar`, `attime`), one case a line
/// as `reference_dump.py` documents them.
pub(crate) fn dump(kind: &str) -> String {
    let python = venv().join("bin/python");
    let script = harness_dir().join("reference_dump.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(kind)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "reference_dump.py {kind} failed:\n{}",
        transcript(&out)
    );
    let text = String::from_utf8(out.stdout).expect("the dump is UTF-8");
    let lines = text.lines().count();
    assert!(
        lines >= MIN_LINES,
        "reference_dump.py {kind} wrote {lines} cases, expected at least {MIN_LINES}"
    );
    text
}

/// Decodes a hex field of the dump (inputs that may hold tabs or newlines).
pub(crate) fn unhex(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    String::from_utf8(bytes).expect("utf-8")
}
