//! libFuzzer entry for `sumi_fuzz::remote_write::remote_write` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::remote_write::remote_write(data));
