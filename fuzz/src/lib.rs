//! Fuzz targets for every parser and decoder, runnable two ways:
//!
//! - on stable, by the seeded driver `src/bin/fuzz-smoke.rs` (CI runs it briefly);
//! - under libFuzzer with cargo-fuzz on nightly, through `fuzz_targets/` and the
//!   separate manifest in `libfuzzer/` (outside the workspace build).
//!
//! A target is a `fn(&[u8])` that must not panic on any input; each module's doc lists
//! the outcomes it accepts. To add one: a module here, a row in [`TARGETS`], seed
//! inputs in `corpus/<name>/`, and (for libFuzzer) a file in `fuzz_targets/` plus a
//! `[[bin]]` in `libfuzzer/Cargo.toml`.

pub mod anomaly;
pub mod attime;
pub mod cluster;
pub mod codec;
pub mod dump;
pub mod export_raw;
pub mod fanout;
pub mod gf_log;
pub mod gf_meta;
pub mod glob;
pub mod import_values;
pub mod json_bulk;
pub mod part;
pub mod pickle;
pub mod plaintext;
pub mod relay;
pub mod remote_write;
pub mod rrd;
pub mod series_log;
pub mod tagged;
pub mod target;
pub mod wal;
pub mod whisper;

/// A fuzz target: must not panic, whatever the bytes.
pub type Target = fn(&[u8]);

/// Every target by name, as the drivers find them.
pub const TARGETS: &[(&str, Target)] = &[
    ("plaintext_line", plaintext::plaintext_line),
    ("plaintext_stream", plaintext::plaintext_stream),
    ("target_expr", target::target_expr),
    ("attime", attime::attime),
    ("codec_decode", codec::codec_decode),
    ("codec_roundtrip", codec::codec_roundtrip),
    ("pickle", pickle::pickle),
    ("json_bulk", json_bulk::json_bulk),
    ("remote_write", remote_write::remote_write),
    ("glob", glob::glob),
    ("tagged_name", tagged::tagged_name),
    ("wal_segment", wal::wal_segment),
    ("series_log", series_log::series_log),
    ("whisper_file", whisper::whisper_file),
    ("rrd_file", rrd::rrd_file),
    ("relay_queue", relay::relay_queue),
    ("relay_rules", relay::relay_rules),
    ("cluster_record", cluster::cluster_record),
    ("cluster_spill", cluster::cluster_spill),
    ("cluster_state_files", cluster::cluster_state_files),
    ("fanout_fetch", fanout::fanout_fetch),
    ("import_values", import_values::import_values),
    ("anomaly_state", anomaly::anomaly_state),
    ("anomaly_state_file", anomaly::anomaly_state_file),
    ("export_raw", export_raw::export_raw),
    ("gf_meta", gf_meta::gf_meta),
    ("gf_log_op", gf_log::gf_log_op),
    ("partition_dump", dump::partition_dump),
    ("part_file", part::part_file),
];

/// A target's seed inputs made by code (file name, bytes), for the targets whose inputs
/// are binary formats: `tests/corpus.rs` checks that `corpus/<target>/` holds them, and
/// `SUMI_FUZZ_WRITE_CORPUS=1 cargo test -p sumi-fuzz --test corpus` writes them.
pub type Seeds = fn() -> Vec<(&'static str, Vec<u8>)>;

/// The targets whose corpus is generated, with their generators.
pub const GENERATED_CORPORA: &[(&str, Seeds)] = &[
    ("codec_decode", codec::decode_seeds),
    ("codec_roundtrip", codec::roundtrip_seeds),
    ("wal_segment", wal::seeds),
    ("series_log", series_log::seeds),
    ("whisper_file", whisper::seeds),
    ("rrd_file", rrd::seeds),
    ("relay_queue", relay::queue_seeds),
    ("cluster_record", cluster::seeds),
    ("cluster_spill", cluster::spill_seeds),
    ("fanout_fetch", fanout::seeds),
    ("partition_dump", dump::seeds),
    ("part_file", part::seeds),
    ("anomaly_state", anomaly::seeds),
    ("anomaly_state_file", anomaly::state_file_seeds),
];

/// Where targets that work on files put their scratch directories: a memory file
/// system when there is one (`/dev/shm`), else the temporary directory.
pub(crate) fn scratch_base() -> std::path::PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Reads a fuzz input front to back; past its end every read gives zeros.
pub(crate) struct Input<'a>(pub(crate) &'a [u8]);

impl Input<'_> {
    pub(crate) fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    pub(crate) fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
