//! libFuzzer entry for `sumi_fuzz::codec::codec_roundtrip` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::codec::codec_roundtrip(data));
