//! libFuzzer entry for `sumi_fuzz::codec::codec_decode` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::codec::codec_decode(data));
