//! libFuzzer entry for `sumi_fuzz::wal::wal_segment` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::wal::wal_segment(data));
