//! Fuzz target for the anomaly detector's saved state (`sumi_anomaly::codec`).
//!
//! - [`anomaly_state`] restores a detector from the input under the single-stage
//!   settings (`block = 0`, state version 4) and under the two-stage ones (`block = 16`, state version 8, and the older
//!   versions 5 to 7). Accepted outcomes, anything else panics: a `DecodeError` with a
//!   message; or a detector that saves back to exactly the input (a version-5, -6 or -7
//!   input: to its version-8 form, which is the input again once [`as_version`] drops
//!   what that version did not save) and then scores further points with scores in
//!   `[0, 1]` (or `None`) without panicking.
//!
//! - [`anomaly_state_file`] decodes the input as the server's file of many series'
//!   states (`sumi_anomaly::state_file`). Accepted outcomes: an error with a message
//!   (bad magic); or records (damaged ones counted, never a panic) that encode back to
//!   exactly the bytes they came from, each detector restoring or refusing cleanly.
//!
//! Their seed corpora are generated: [`seeds`] (states after a few lengths of a
//! series) and [`state_file_seeds`].

use sumi_anomaly::events::{event_id, Event, Tracker};
use sumi_anomaly::state_file;
use sumi_anomaly::{Config, Detector};

/// The single-stage settings (state version 4): `block = 0`, as measured.
fn single_stage() -> Config {
    let mut cfg = Config::default();
    cfg.set("block", "0").expect("block");
    cfg.set("pattern_weight", "0.2").expect("pattern_weight");
    cfg
}

/// The two-stage settings the seeds and the target use (the default's block).
fn two_stage() -> Config {
    let mut cfg = Config::default();
    cfg.set("block", "16").expect("block");
    cfg
}

pub fn anomaly_state(data: &[u8]) {
    restore_and_run(single_stage(), data);
    restore_and_run(two_stage(), data);
}

fn restore_and_run(cfg: Config, data: &[u8]) {
    match Detector::restore(cfg, data) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(mut det) => {
            let saved = det.save();
            if let Some(&old @ (5..=7)) = data.get(7) {
                assert_eq!(saved[7], 8, "a version-{old} state saves as version 8");
                assert_eq!(
                    as_version(&saved, old),
                    data,
                    "restored version-{old} state does not save back the same"
                );
            } else {
                assert_eq!(saved, data, "restored state does not save back the same");
            }
            let start = 1_000_000_000i64;
            for i in 0..64i64 {
                let v = if i % 7 == 0 { 1e12 } else { (i as f64).sin() };
                if let Some(s) = det.update(start + i, v) {
                    assert!((0.0..=1.0).contains(&s), "score {s} outside [0, 1]");
                }
            }
        }
    }
}

/// A two-stage state of version 8 as version 7 wrote it (without the young detector:
/// its bytes and their length, before the CRC), version 6 (also without the range
/// view's range, 26 bytes more) or version 5 (also without the unfinished block's
/// largest and smallest value, 16 bytes more).
pub fn as_version(v8: &[u8], version: u8) -> Vec<u8> {
    let n = v8.len() - 4;
    let young = u32::from_le_bytes([v8[n - 4], v8[n - 3], v8[n - 2], v8[n - 1]]) as usize;
    let cut = 4
        + young
        + match version {
            5 => 26 + 16,
            6 => 26,
            _ => 0,
        };
    let body = &v8[..n - cut];
    let mut out = body.to_vec();
    out[7] = version;
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Saved states after 0, 20, 600 and 1,500 points of a bumpy series, single-stage
/// and two-stage (version 8, 600 points with the young detector in it, and 1,500
/// points cut inside a block as versions 5, 6 and 7).
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, n, cfg) in [
        ("empty", 0, single_stage()),
        ("warmup", 20, single_stage()),
        ("full", 600, single_stage()),
        ("long", 1500, single_stage()),
        ("two-stage-warmup", 20, two_stage()),
        ("two-stage-young", 600, two_stage()),
        ("two-stage-long", 1500, two_stage()),
    ] {
        let mut det = Detector::new(cfg);
        for i in 0..n {
            let v = 10.0 * (i as f64 / 30.0).sin() + if i % 400 == 399 { 50.0 } else { 0.0 };
            det.update(i as i64 * 60, v);
        }
        out.push((name, det.save()));
    }
    let mut det = Detector::new(two_stage());
    for i in 0..1500 + 7 {
        let v = 10.0 * (i as f64 / 30.0).sin() + if i % 400 == 399 { 50.0 } else { 0.0 };
        det.update(i as i64 * 60, v);
    }
    out.push(("two-stage-v5", as_version(&det.save(), 5)));
    out.push(("two-stage-v6", as_version(&det.save(), 6)));
    out.push(("two-stage-v7", as_version(&det.save(), 7)));
    out
}

pub fn anomaly_state_file(data: &[u8]) {
    let (saved, damaged) = match state_file::decode(data) {
        Err(e) => {
            assert!(!e.is_empty());
            return;
        }
        Ok(x) => x,
    };
    let mut again = state_file::MAGIC.to_vec();
    for s in &saved {
        state_file::encode_record(&mut again, &s.name, &s.tracker, &s.detector);
        if let Ok(mut det) = Detector::restore(Config::default(), &s.detector) {
            if let Some(score) = det.update(i64::MAX / 2, 1.0) {
                assert!((0.0..=1.0).contains(&score), "score {score}");
            }
        }
    }
    if damaged == 0 {
        // undamaged records re-encode to the input (floats bit for bit)
        let (again_saved, again_damaged) = state_file::decode(&again).expect("own output");
        assert_eq!(again_damaged, 0);
        assert_eq!(again_saved.len(), saved.len());
        for (a, b) in again_saved.iter().zip(&saved) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.detector, b.detector);
            assert_eq!(a.tracker.quiet, b.tracker.quiet);
            assert_eq!(
                a.tracker.open.as_ref().map(|e| e.peak.to_bits()),
                b.tracker.open.as_ref().map(|e| e.peak.to_bits())
            );
        }
    }
}

/// A file of two series (one with an open event), and an empty one.
pub fn state_file_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut det = Detector::new(Config::default());
    for i in 0..100 {
        det.update(i * 60, (i % 7) as f64);
    }
    let open = Tracker {
        open: Some(Event {
            id: event_id("b;dc=eu", 600),
            series: "b;dc=eu".into(),
            start: 600,
            end: 660,
            peak: 0.91,
            peak_ts: 600,
            reason: "spike".into(),
            open: true,
        }),
        quiet: 2,
    };
    let mut two = state_file::MAGIC.to_vec();
    state_file::encode_record(&mut two, "a.b.c", &Tracker::default(), &det.save());
    state_file::encode_record(&mut two, "b;dc=eu", &open, &det.save());
    vec![("two", two), ("empty", state_file::MAGIC.to_vec())]
}
