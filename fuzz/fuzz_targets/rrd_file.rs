//! libFuzzer entry for `sumi_fuzz::rrd::rrd_file` (see `fuzz/README.md`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sumi_fuzz::rrd::rrd_file(data));
