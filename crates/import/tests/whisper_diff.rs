//! sumi's whisper reader against whisper 1.1.10 itself, on files whisper wrote.
//!
//! `whisper_gen.py` (beside this file) runs with the python of the venv that
//! `tests/graphite-diff/setup.sh` builds (`target/graphite-venv`, or
//! `$SUMI_GRAPHITE_VENV`): it writes files of 1, 2 and 3 archives with every
//! aggregation method, several xFilesFactors, gaps, stale laps, points out of order and
//! overwritten, and dumps whisper's `info` and `fetch` answers for thousands of
//! (from, until, now) triples. Every header, archive, fetch and value must match, floats
//! bit for bit. It also dumps carbon's paths for tagged and plain names
//! (`TaggedSeries.encode`, shared by carbon and graphite-web 1.1.10), and damaged copies
//! of a file with what whisper makes of them (sumi refuses each with its own error).
//!
//! Nothing is skipped: without python3, its venv module or PyPI the first time, the
//! test fails with what setup.sh says is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sumi_import::carbon::{self, PathName, TaggedLayout};
use sumi_import::whisper::{FetchError, Fetched, Whisper};

fn transcript(out: &Output) -> String {
    format!(
        "exit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The reference venv, built by setup.sh if need be; its last line is the path.
fn venv() -> PathBuf {
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graphite-diff/setup.sh");
    let out = Command::new("bash")
        .arg(&setup)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", setup.display()));
    assert!(
        out.status.success(),
        "setting up the whisper reference venv failed:\n{}",
        transcript(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().unwrap_or_default().trim())
}

/// Runs the generator into `dir`; its JSON dump.
fn generate(dir: &Path) -> Value {
    let python = venv().join("bin/python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/whisper_gen.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "whisper_gen.py failed:\n{}",
        transcript(&out)
    );
    serde_json::from_slice(&out.stdout).expect("whisper_gen.py prints JSON")
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn hex_bits(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// Our answer in the dump's shape: [from, until, step, [bits|null]].
fn shape(f: &Fetched) -> (i64, i64, i64, Vec<Option<String>>) {
    let values = f
        .values
        .iter()
        .map(|v| v.map(|x| format!("{:016x}", x.to_bits())))
        .collect();
    (f.from, f.until, f.step, values)
}

fn expected(result: &Value) -> (i64, i64, i64, Vec<Option<String>>) {
    let r = result.as_array().expect("a fetch result");
    let values = r[3]
        .as_array()
        .expect("values")
        .iter()
        .map(hex_bits)
        .collect();
    (int(&r[0]), int(&r[1]), int(&r[2]), values)
}

#[test]
fn whisper_files_read_as_whisper_reads_them() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("whisper-diff");
    let dump = generate(&dir);
    let files = dump["files"].as_array().expect("files");
    assert!(files.len() >= 25, "{} files", files.len());
    let (mut fetches, mut windows, mut values) = (0, 0, 0);
    for file in files {
        let name = file["file"].as_str().expect("file name");
        let w = Whisper::open(dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
        let info = &file["info"];
        let h = w.header();
        assert_eq!(h.aggregation.name(), info["aggregationMethod"], "{name}");
        assert_eq!(
            i64::from(h.max_retention),
            int(&info["maxRetention"]),
            "{name}"
        );
        assert_eq!(
            format!("{:08x}", h.x_files_factor.to_bits()),
            info["xFilesFactor"].as_str().expect("xff"),
            "{name}"
        );
        let archives: Vec<[i64; 3]> = w
            .archives()
            .iter()
            .map(|a| [a.offset.into(), a.seconds_per_point.into(), a.points.into()])
            .collect();
        let want: Vec<[i64; 3]> = info["archives"]
            .as_array()
            .expect("archives")
            .iter()
            .map(|a| [int(&a[0]), int(&a[1]), int(&a[2])])
            .collect();
        assert_eq!(archives, want, "{name}");
        assert_eq!(h.archive_count as usize, want.len(), "{name}");

        for case in file["fetches"].as_array().expect("fetches") {
            let (from, until, now) = (int(&case["from"]), int(&case["until"]), int(&case["now"]));
            let result = &case["result"];
            let what = format!(
                "{name}: fetch({from}, {until}, now={now}) {}",
                case["archive"]
            );
            if let Some(spp) = case["archive"].as_i64() {
                let index = w
                    .archives()
                    .iter()
                    .position(|a| i64::from(a.seconds_per_point) == spp)
                    .expect("the archive whisper picked");
                let got = w.window(index, now).expect("window");
                assert_eq!(shape(&got), expected(result), "{what}");
                let known: Vec<(i64, f64)> = w.points(index, now).expect("points").collect();
                let from_window: Vec<(i64, f64)> = got
                    .values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((got.from + i as i64 * got.step, (*v)?)))
                    .collect();
                assert_eq!(
                    known
                        .iter()
                        .map(|(t, v)| (*t, v.to_bits()))
                        .collect::<Vec<_>>(),
                    from_window
                        .iter()
                        .map(|(t, v)| (*t, v.to_bits()))
                        .collect::<Vec<_>>(),
                    "{what}"
                );
                windows += 1;
                continue;
            }
            let got = w.fetch(from, until, now);
            match result {
                Value::String(s) if s == "invalid" => {
                    assert_eq!(
                        got,
                        Err(FetchError::InvalidInterval { from, until }),
                        "{what}"
                    )
                }
                Value::Null => assert_eq!(got, Ok(None), "{what}"),
                _ => {
                    let got = got.expect(&what).expect(&what);
                    let want = expected(result);
                    values += want.3.iter().filter(|v| v.is_some()).count();
                    assert_eq!(shape(&got), want, "{what}");
                    assert_eq!(
                        got.step,
                        i64::from(w.archives()[got.archive].seconds_per_point),
                        "{what}"
                    );
                }
            }
            fetches += 1;
        }
    }
    assert!(fetches >= 2_500, "{fetches} fetches");
    assert!(windows >= 100, "{windows} windows");
    assert!(values >= 50_000, "{values} known values compared");
}

#[test]
fn carbon_paths_as_carbon_encodes_them() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("whisper-diff-names");
    let dump = generate(&dir);
    let names = dump["names"].as_array().expect("names");
    assert!(names.len() >= 100);
    for case in names {
        let name = case["name"].as_str().expect("name");
        let canonical = case["canonical"].as_str().expect("canonical");
        let hashed = case["hash"].as_str().expect("hash");
        let named = case["named"].as_str().expect("named");
        assert_eq!(
            carbon::whisper_path(name, TaggedLayout::Hash).as_deref(),
            Ok(hashed),
            "{name}"
        );
        assert_eq!(
            carbon::whisper_path(name, TaggedLayout::Name).as_deref(),
            Ok(named),
            "{name}"
        );
        if canonical.contains(';') {
            assert_eq!(
                carbon::series_name(Path::new(named)),
                Ok(PathName::Tagged(canonical.to_string())),
                "{name}"
            );
            let hash = carbon::tagged_hash(name).expect("hash");
            assert!(hashed.ends_with(&format!("/{hash}.wsp")), "{name}");
            assert_eq!(
                carbon::series_name(Path::new(hashed)),
                Ok(PathName::TaggedHash(hash)),
                "{name}"
            );
        } else {
            // carbon drops leading dots when it makes the path; the file holds the rest.
            let plain = PathName::Plain(canonical.trim_start_matches('.').to_string());
            assert_eq!(carbon::series_name(Path::new(named)), Ok(plain), "{name}");
        }
    }
}

#[test]
fn damaged_files_are_refused_where_whisper_fails_or_misreads() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("whisper-diff-damaged");
    let dump = generate(&dir);
    let damaged = dump["damaged"].as_array().expect("damaged");
    assert!(damaged.len() >= 13);
    for case in damaged {
        let file = case["file"].as_str().expect("file");
        let path = dir.join(file);
        let len = std::fs::metadata(&path).expect("damaged file").len();
        // whisper's verdict: "corrupt" (its header reader refuses), an exception from
        // fetch, or "ok" (it reads the file, wrongly). sumi refuses them all, here.
        let verdict = case["whisper"].as_str().expect("verdict");
        let e = Whisper::open(&path).expect_err(file);
        assert_eq!(e.path, path);
        assert!(e.offset <= len, "{e}: offset past {len} bytes");
        let kind = format!("{:?}", e.kind);
        let want = match file {
            "damaged_empty.wsp" | "damaged_cut_header.wsp" => "ShortHeader",
            "damaged_cut_table.wsp" | "damaged_many_archives.wsp" => "ShortArchiveTable",
            "damaged_cut_archive.wsp" | "damaged_offset_past_end.wsp" => "ArchiveOutsideFile",
            "damaged_agg_zero.wsp" | "damaged_agg_nine.wsp" => "UnknownAggregation",
            "damaged_xff_big.wsp" | "damaged_xff_nan.wsp" => "XFilesFactor",
            "damaged_no_archives.wsp" => "NoArchives",
            "damaged_zero_step.wsp" => "ZeroStep",
            "damaged_zero_points.wsp" => "ZeroPoints",
            other => panic!("unexpected damaged file {other}"),
        };
        assert!(kind.starts_with(want), "{file} (whisper: {verdict}): {e}");
    }
}
