//! libFuzzer entry for `sumi_fuzz::anomaly::anomaly_state_file` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::anomaly::anomaly_state_file(data));
