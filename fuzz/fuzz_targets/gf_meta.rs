//! libFuzzer entry for `sumi_fuzz::gf_meta::gf_meta` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::gf_meta::gf_meta(data));
