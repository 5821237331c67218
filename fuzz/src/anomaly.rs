//! Fuzz target for the anomaly detector's saved state (`sumi_anomaly::codec`).
//!
//! - [`anomaly_state`] restores a detector from the input under the default settings.
//!   Accepted outcomes, anything else panics: a `DecodeError` with a message; or a
//!   detector that saves back to exactly the input and then scores further points with
//!   scores in `[0, 1]` (or `None`) without panicking.
//!
//! Its seed corpus is generated: [`seeds`] (states after a few lengths of a series).

use sumi_anomaly::{Config, Detector};

pub fn anomaly_state(data: &[u8]) {
    match Detector::restore(Config::default(), data) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(mut det) => {
            assert_eq!(
                det.save(),
                data,
                "restored state does not save back the same"
            );
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

/// Saved states after 0, 20, 600 and 1,500 points of a bumpy series.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, n) in [("empty", 0), ("warmup", 20), ("full", 600), ("long", 1500)] {
        let mut det = Detector::new(Config::default());
        for i in 0..n {
            let v = 10.0 * (i as f64 / 30.0).sin() + if i % 400 == 399 { 50.0 } else { 0.0 };
            det.update(i as i64 * 60, v);
        }
        out.push((name, det.save()));
    }
    out
}
