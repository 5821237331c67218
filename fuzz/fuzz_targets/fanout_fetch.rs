//! libFuzzer entry for `sumi_fuzz::fanout::fanout_fetch` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::fanout::fanout_fetch(data));
