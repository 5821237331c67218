//! `sumi relay`: carbon plaintext and pickle in, carbon plaintext or pickle out to
//! carbon-compatible destinations (carbon-cache, go-carbon, another sumi), placed as
//! carbon places them, each destination behind a bounded on-disk queue.
//!
//! - [`hashing`]: carbon's consistent-hashing ring (`carbon_ch`, `fnv1a_ch`), the
//!   destination syntax, replication factor and diverse replicas.
//! - [`rules`]: `relay-rules.conf` (regex → destinations).
//! - [`aggregate`]: carbon-aggregator's `aggregation-rules.conf` and buffers.
//! - [`queue`]: the on-disk queue of one destination (segment files, a cursor).
//! - [`wire`]: points out as plaintext lines or pickle messages.
//! - [`config`]: the TOML file; [`server`]: the threads that run it all.

pub mod aggregate;
pub mod config;
pub mod hashing;
pub mod queue;
pub mod rules;
pub mod server;
pub mod wire;

pub use config::Config;
pub use server::{run_until_signal, Relay, RelayError};
