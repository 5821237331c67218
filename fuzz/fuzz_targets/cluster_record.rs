//! libFuzzer entry for `sumi_fuzz::cluster::cluster_record` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::cluster::cluster_record(data));
