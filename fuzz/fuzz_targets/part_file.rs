//! libFuzzer entry for `sumi_fuzz::part::part_file` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::part::part_file(data));
