//! libFuzzer entry for `sumi_fuzz::series_log::series_log` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::series_log::series_log(data));
