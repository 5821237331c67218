//! `sumi bench`: a load generator for carbon plaintext over TCP, and the measurements
//! that make its figures comparable from run to run.
//!
//! It sends a realistic agent-like workload (series × points, time-ordered, split across
//! connections by host, optionally paced) to a server it starts itself or to a running
//! one, and reports points/s accepted (first byte → `sumi_points_stored_total` grew by
//! the points sent), the time until a sample of series is complete in `/render`, the
//! server's CPU seconds, peak RSS and bytes on disk, and its own CPU.
//!
//! The crate depends on no other sumi crate: it speaks only the server's wire protocols.
//!
//! Modules, in the order a run uses them:
//! - [`args`]: the command line ([`BenchArgs`]) validated into a [`Plan`].
//! - [`workload`] (with [`rng`]): series names and realistic values, generated up front.
//! - [`server`]: start and stop the server under test, or describe a running one.
//! - [`send`] (with [`pacer`]): one thread per connection, large writes, `--rate`.
//! - [`http`], [`prom`], [`render`]: poll `/health`, `/metrics` and `/render`.
//! - [`watch`]: stall detection and poll intervals; [`procfs`]: CPU, RSS, disk usage.
//! - [`progress`], [`report`]: what the user sees during and after the run.
//! - [`run`]: the phases in order ([`execute`]).
//! - [`soak`]: the long steady run with queries in parallel (`--soak-minutes`).

pub mod args;
pub mod error;
pub mod http;
pub mod pacer;
pub mod probe;
pub mod procfs;
pub mod progress;
pub mod prom;
pub mod render;
pub mod report;
pub mod rng;
pub mod run;
pub mod send;
pub mod server;
pub mod soak;
pub mod watch;
pub mod workload;

pub use args::{BenchArgs, Plan};
pub use error::BenchError;
pub use report::Report;
pub use run::execute;

/// Runs `sumi bench` with `args`: prints the report to stdout (a table, or JSON with
/// `--json`) and fails when the run did not complete (the report says how far it got).
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(plan) = soak::SoakPlan::from_args(&args)? {
        let report = soak::execute_soak(&args, &plan)?;
        if args.json {
            println!("{}", report.to_json());
        } else {
            print!("{}", report.to_text());
        }
        return match (&report.error, report.errors) {
            (Some(e), _) => Err(anyhow::anyhow!("soak failed: {e}")),
            (None, 0) => Ok(()),
            (None, n) => Err(anyhow::anyhow!(
                "soak finished with {n} errors (first: {})",
                report.first_error.as_deref().unwrap_or("?")
            )),
        };
    }
    let report = execute(&args)?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_table());
    }
    match report.error {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}
