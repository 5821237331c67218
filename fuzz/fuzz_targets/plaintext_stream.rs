//! libFuzzer entry for `sumi_fuzz::plaintext::plaintext_stream` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::plaintext::plaintext_stream(data));
