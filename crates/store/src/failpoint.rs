//! Failpoints: named places inside the WAL, seal (freeze + flush), compaction and
//! retention where a crash test can make the process die, to prove that recovery
//! works from exactly that state.
//!
//! `SUMI_FAILPOINT` names them, comma-separated, each optionally with the hit that
//! fires (`seal:after_parts@3` aborts at the third time that point is reached; the
//! default is the first). It is read once, when the first store opens. A firing
//! failpoint prints one line to stderr (`sumi failpoint NAME fired`) and calls
//! `abort()`: no destructor runs, no buffer is flushed, like a `kill -9` at that
//! instruction.
//!
//! [`ERROR_FAILPOINTS`] do not abort: they make the WAL's group write fail as a full
//! (`wal:write_enospc`) or failing (`wal:write_eio`) disk would, so that a test can
//! check what a writer sees and what readers see after it. Each group write counts as
//! one hit of each.
//!
//! The cost when unset is one relaxed atomic load per call site (the sites are per
//! flush, per compaction, per WAL group write: never per point).
//!
//! [`Op`] brackets each maintenance operation with `debug` log lines
//! (`op started` / `op done`), so that a crash test reading the log can tell which
//! operation a random `kill -9` interrupted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Every failpoint the store has, for documentation and for tests that iterate them.
pub const FAILPOINTS: &[&str] = &[
    "wal:torn_write",
    "wal:after_write",
    "seal:after_rotate",
    "seal:after_parts",
    "seal:after_manifest",
    "compact:after_write",
    "compact:after_manifest",
    "retention:before_manifest",
    "retention:after_manifest",
];

/// Failpoints that make an operation fail with an error instead of aborting.
pub const ERROR_FAILPOINTS: &[&str] = &["wal:write_enospc", "wal:write_eio"];

/// The environment variable read at store open.
pub const ENV: &str = "SUMI_FAILPOINT";

static ENABLED: AtomicBool = AtomicBool::new(false);
static ARMED: OnceLock<Vec<Armed>> = OnceLock::new();

struct Armed {
    name: String,
    /// Hits left before it fires (fires when this reaches zero).
    left: AtomicU64,
}

/// Parses `SUMI_FAILPOINT` (once per process). Unknown names are reported and ignored.
pub(crate) fn init() {
    ARMED.get_or_init(|| {
        let spec = std::env::var(ENV).unwrap_or_default();
        let armed = parse(&spec);
        if !armed.is_empty() {
            let names: Vec<&str> = armed.iter().map(|a| a.name.as_str()).collect();
            tracing::warn!(failpoints = ?names, "failpoints armed: this process will abort on purpose");
            ENABLED.store(true, Ordering::Relaxed);
        }
        armed
    });
}

fn parse(spec: &str) -> Vec<Armed> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, nth) = match item.split_once('@') {
            Some((n, k)) => (n, k.parse::<u64>().ok().filter(|&k| k > 0)),
            None => (item, Some(1)),
        };
        let Some(nth) = nth else {
            tracing::error!(
                failpoint = item,
                "ignoring a failpoint with a bad hit count"
            );
            continue;
        };
        if !FAILPOINTS.contains(&name) && !ERROR_FAILPOINTS.contains(&name) {
            tracing::error!(failpoint = name, known = ?FAILPOINTS, errors = ?ERROR_FAILPOINTS, "ignoring an unknown failpoint");
            continue;
        }
        out.push(Armed {
            name: name.to_string(),
            left: AtomicU64::new(nth),
        });
    }
    out
}

/// Aborts the process if failpoint `name` is armed and this is its firing hit.
#[inline]
pub(crate) fn hit(name: &'static str) {
    if due(name) {
        fire(name);
    }
}

/// True when failpoint `name` is armed and this is its firing hit; the caller does
/// something partial (half a write) and then calls [`fire`].
#[inline]
pub(crate) fn due(name: &'static str) -> bool {
    ENABLED.load(Ordering::Relaxed) && count_hit(name)
}

#[cold]
fn count_hit(name: &'static str) -> bool {
    let Some(armed) = ARMED.get() else {
        return false;
    };
    armed
        .iter()
        .filter(|a| a.name == name)
        .any(|a| a.left.fetch_sub(1, Ordering::AcqRel) == 1)
}

/// Prints which failpoint fired and aborts the process.
#[cold]
pub(crate) fn fire(name: &'static str) -> ! {
    announce(name);
    std::process::abort();
}

fn announce(name: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "sumi failpoint {name} fired");
    let _ = err.flush();
}

/// The error the WAL's group write fails with when `wal:write_enospc` or
/// `wal:write_eio` is armed and this is its hit (a hit of both, ENOSPC wins).
#[inline]
pub(crate) fn wal_write_error() -> Option<std::io::Error> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    injected_write_error()
}

#[cold]
fn injected_write_error() -> Option<std::io::Error> {
    let enospc = count_hit("wal:write_enospc");
    let eio = count_hit("wal:write_eio");
    let (name, errno) = if enospc {
        ("wal:write_enospc", libc::ENOSPC)
    } else if eio {
        ("wal:write_eio", libc::EIO)
    } else {
        return None;
    };
    announce(name);
    Some(std::io::Error::from_raw_os_error(errno))
}

/// A maintenance operation in progress, logged at `debug` when it starts and ends.
pub(crate) struct Op {
    name: &'static str,
}

impl Op {
    pub(crate) fn start(name: &'static str) -> Op {
        tracing::debug!(op = name, "op started");
        Op { name }
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        tracing::debug!(op = self.name, "op done");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_hit_counts() {
        let a = parse(
            " seal:after_parts@3, wal:after_write ,bogus,compact:after_write@0,wal:write_eio@2",
        );
        let got: Vec<(&str, u64)> = a
            .iter()
            .map(|x| (x.name.as_str(), x.left.load(Ordering::Relaxed)))
            .collect();
        assert_eq!(
            got,
            vec![
                ("seal:after_parts", 3),
                ("wal:after_write", 1),
                ("wal:write_eio", 2)
            ]
        );
        assert!(parse("").is_empty());
    }
}
