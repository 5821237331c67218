//! libFuzzer entry for `sumi_fuzz::glob::glob` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::glob::glob(data));
