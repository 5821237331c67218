//! libFuzzer entry for `sumi_fuzz::import_values::import_values` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::import_values::import_values(data));
