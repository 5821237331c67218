//! libFuzzer entry for `sumi_fuzz::tagged::tagged_name` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::tagged::tagged_name(data));
