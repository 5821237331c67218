//! libFuzzer entry for `sumi_fuzz::whisper::whisper_file` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::whisper::whisper_file(data));
