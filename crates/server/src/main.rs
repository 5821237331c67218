//! `sumi`: one binary, one subcommand per job.
//!
//! - `sumi serve`: the server (config → open the store → bind → serve → ordered shutdown),
//!   see [`serve`].
//! - `sumi bench`: a carbon plaintext load generator that measures a server.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod config;
mod notify;
mod selfmon;
mod serve;
mod tls;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "sumi",
    version,
    about = "A time-series database for server metrics that speaks Graphite"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server: carbon plaintext and pickle in, Graphite's HTTP API out.
    Serve(config::ServeFlags),
    /// Generate carbon plaintext load against a server and measure it.
    Bench(sumi_bench::BenchArgs),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(flags) => {
            let config = config::Config::load(&flags)?;
            serve::init_logging(&config.log_level, config.log_format);
            serve::run_until_signal(config)
        }
        Command::Bench(args) => sumi_bench::run(args),
    }
}
