//! libFuzzer entry for `sumi_fuzz::cluster::cluster_state_files` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::cluster::cluster_state_files(data));
