//! libFuzzer entry for `sumi_fuzz::attime::attime` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::attime::attime(data));
