//! libFuzzer entry for `sumi_fuzz::dump::partition_dump` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::dump::partition_dump(data));
