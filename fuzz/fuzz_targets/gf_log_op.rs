//! libFuzzer entry for `sumi_fuzz::gf_log::gf_log_op` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::gf_log::gf_log_op(data));
