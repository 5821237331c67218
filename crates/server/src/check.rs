//! `sumi check [--data-dir DIR] [--repair]`: verifies every checksum and invariant of
//! a data directory while no server runs on it, prints a report, and with `--repair`
//! fixes what can be fixed (torn WAL and series-log tails cut, damaged parts
//! quarantined or rewritten without their bad blocks, the manifest rewritten or
//! rebuilt). The work is [`sumi_store::verify::check`]; this is the command line.
//!
//! Exit status follows `fsck`: 0 clean, 1 damage found and all of it repaired, 4
//! damage left, 8 the check could not run (no data directory, a server holds it).

use std::path::PathBuf;

/// Flags of `sumi check`.
#[derive(clap::Args, Debug)]
pub(crate) struct CheckFlags {
    /// The data directory to check.
    #[arg(long, default_value = "./data")]
    pub(crate) data_dir: PathBuf,
    /// Repair what can be repaired (damaged files are moved to DATA/quarantine/).
    #[arg(long)]
    pub(crate) repair: bool,
}

/// Runs the check, prints the report to stdout, returns the exit status.
pub(crate) fn run(flags: &CheckFlags) -> i32 {
    match sumi_store::verify::check(&flags.data_dir, flags.repair) {
        Ok(report) => {
            print!("{}", report.to_text(&flags.data_dir));
            report.exit_code()
        }
        Err(e) => {
            eprintln!("sumi check: cannot check {}: {e}", flags.data_dir.display());
            8
        }
    }
}
