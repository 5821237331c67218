//! libFuzzer entry for `sumi_fuzz::cluster::cluster_spill` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::cluster::cluster_spill(data));
