//! libFuzzer entry for `sumi_fuzz::relay::relay_queue` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::relay::relay_queue(data));
