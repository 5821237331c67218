//! libFuzzer entry for `sumi_fuzz::json_bulk::json_bulk` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::json_bulk::json_bulk(data));
