//! libFuzzer entry for `sumi_fuzz::target::target_expr` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::target::target_expr(data));
