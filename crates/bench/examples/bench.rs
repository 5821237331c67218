//! `sumi bench` as a stand-alone program, for trying the load generator against any
//! server before it is wired into the `sumi` binary:
//!
//! ```text
//! cargo run -p sumi-bench --release --example bench -- \
//!     --carbon 127.0.0.1:2003 --http 127.0.0.1:8080 --series 10000 --points 10
//! ```
//!
//! Started-server mode needs `--server-bin PATH/TO/sumi`: this example cannot `serve`.

use clap::Parser;

/// Command line of the example: exactly `sumi bench`'s.
#[derive(Parser)]
#[command(name = "bench", about = "sumi's carbon load generator")]
struct Cli {
    #[command(flatten)]
    args: sumi_bench::BenchArgs,
}

fn main() -> anyhow::Result<()> {
    sumi_bench::run(Cli::parse().args)
}
