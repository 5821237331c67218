//! `sumi relay`: carbon plaintext and pickle in, carbon plaintext or pickle out to
//! carbon-compatible destinations, placed as carbon places them.
//!
//! - [`hashing`]: carbon's consistent-hashing ring (`carbon_ch`, `fnv1a_ch`), the
//!   destination syntax, replication factor and diverse replicas.
pub mod hashing;
