//! Runs the detector over NAB's corpus and writes results files the NAB scorer reads.
//! Shared by `examples/nab` and the NAB test (tests/nab.rs).
//!
//! Each data file (`data/<category>/<file>.csv`, columns `timestamp,value`) is read in
//! row order; row i goes to the detector at `i × 300 s` (a regular grid, so repeated or
//! backward timestamps in the file still get one slot each). The results file
//! `results/<name>/<category>/<name>_<file>.csv` has the columns
//! `timestamp,value,anomaly_score,label`, with the file's own timestamps, the score (0
//! where the detector gave none) and the label copied from `results/null/`.

use std::path::Path;
use std::time::{Duration, Instant};

use sumi_anomaly::{Config, Detector};

pub(crate) struct Run {
    pub(crate) files: usize,
    pub(crate) points: usize,
    /// Time spent inside `Detector::update` only.
    pub(crate) detector_time: Duration,
    /// Largest in-memory (`Detector::state_bytes`) and saved (`Detector::save`) size of
    /// one file's detector at its end.
    pub(crate) state_bytes: usize,
    pub(crate) saved_bytes: usize,
}

type Rows = Vec<(String, String)>;

fn read_rows(path: &Path) -> Result<Rows, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let mut it = line.splitn(3, ',');
        let (Some(ts), Some(v)) = (it.next(), it.next()) else {
            return Err(format!("{}:{}: not timestamp,value", path.display(), n + 1));
        };
        rows.push((ts.to_string(), v.to_string()));
    }
    Ok(rows)
}

fn read_labels(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let col = header
        .split(',')
        .position(|c| c.trim() == "label")
        .ok_or_else(|| format!("{}: no label column", path.display()))?;
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split(',')
                .nth(col)
                .map(|s| s.trim().to_string())
                .ok_or_else(|| format!("{}: short row {l:?}", path.display()))
        })
        .collect()
}

fn sorted_entries(dir: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

/// Scores every NAB data file under `nab/data` with a fresh detector per file and writes
/// the results under `nab/results/<name>/`.
pub(crate) fn run(nab: &Path, name: &str, cfg: &Config) -> Result<Run, String> {
    let mut out = Run {
        files: 0,
        points: 0,
        detector_time: Duration::ZERO,
        state_bytes: 0,
        saved_bytes: 0,
    };
    for cat in sorted_entries(&nab.join("data"))? {
        if !cat.is_dir() {
            continue;
        }
        let cat_name = cat
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let out_dir = nab.join("results").join(name).join(&cat_name);
        std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        for file in sorted_entries(&cat)? {
            if file.extension().is_none_or(|e| e != "csv") {
                continue;
            }
            let fname = file
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let rows = read_rows(&file)?;
            let labels = read_labels(
                &nab.join("results/null")
                    .join(&cat_name)
                    .join(format!("null_{fname}")),
            )?;
            if labels.len() != rows.len() {
                return Err(format!(
                    "{fname}: {} rows but {} labels",
                    rows.len(),
                    labels.len()
                ));
            }
            let values: Vec<f64> = rows
                .iter()
                .map(|(_, v)| v.trim().parse::<f64>().unwrap_or(f64::NAN))
                .collect();
            let mut det = Detector::new(cfg.clone());
            let t0 = Instant::now();
            let scores: Vec<f64> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| det.update(i as i64 * 300, v).unwrap_or(0.0))
                .collect();
            out.detector_time += t0.elapsed();
            out.state_bytes = out.state_bytes.max(det.state_bytes());
            out.saved_bytes = out.saved_bytes.max(det.save().len());
            if let Some(dir) = std::env::var_os("SUMI_NAB_VIEWS") {
                // Diagnostics: every view's score per row, beside the results.
                let mut det = Detector::new(cfg.clone());
                let mut csv = String::from("score,point,level,spread,pattern,gap,season\n");
                for (i, &v) in values.iter().enumerate() {
                    let s = det.update(i as i64 * 300, v).unwrap_or(0.0);
                    let w = det.views();
                    csv.push_str(&format!(
                        "{s:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4}\n",
                        w.point, w.level, w.spread, w.pattern, w.gap, w.season
                    ));
                }
                let path = Path::new(&dir).join(format!("{cat_name}_{fname}"));
                std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            let mut csv = String::with_capacity(rows.len() * 48);
            csv.push_str("timestamp,value,anomaly_score,label\n");
            for (((ts, v), s), l) in rows.iter().zip(&scores).zip(&labels) {
                csv.push_str(&format!("{ts},{v},{s:.6},{l}\n"));
            }
            let path = out_dir.join(format!("{name}_{fname}"));
            std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
            out.files += 1;
            out.points += rows.len();
        }
    }
    Ok(out)
}
