//! libFuzzer entry for `sumi_fuzz::export_raw::export_raw` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::export_raw::export_raw(data));
