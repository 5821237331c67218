//! The import job: files read in parallel, each file's series handed to a [`Target`]
//! (the store opened directly, or a running server), a state file recording finished
//! files so that a rerun skips them, progress on stderr, and a [`Summary`].
//!
//! The job knows no store and no network: `sumi import` (crates/server) supplies the
//! target. A file's series are written with whisper-fill semantics by the target, so a
//! file interrupted half way is simply imported again by the next run.
//!
//! Damaged files and series the target refuses are counted skips, reported with the
//! file's path (and the byte offset, for a damaged file); the rest goes on. An error
//! the target calls fatal (the store is closed or failing, the server unreachable)
//! stops the job.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sumi_model::SeriesConfig;

/// One series read from a source file: its name, the config it is created with, and
/// the `(time, value)` points of each of its archives, finest first.
#[derive(Clone, Debug)]
pub struct SeriesData {
    pub name: String,
    pub config: SeriesConfig,
    pub archives: Vec<Vec<(i64, f64)>>,
}

impl SeriesData {
    pub fn points(&self) -> u64 {
        self.archives.iter().map(|a| a.len() as u64).sum()
    }
}

/// What a target did with one series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub created: bool,
    /// Points written into empty slots.
    pub written: u64,
    /// Points left out because their slot already held a value.
    pub present: u64,
    /// Points beyond their archive's retention (or too far in the future).
    pub out_of_range: u64,
    /// Points of a coarser archive whose time a finer archive covers, not sent (into a
    /// cluster, whose storage nodes roll them up from the finer points).
    pub covered: u64,
}

/// Why a target did not take a series.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// This series only (an invalid name, a config the target refuses): skipped.
    #[error("{0}")]
    Series(String),
    /// The target cannot go on (store closed or failing, server unreachable): the job
    /// stops.
    #[error("{0}")]
    Fatal(String),
}

/// Where imported series go. Called from several threads at once.
pub trait Target: Sync {
    fn import(&self, series: &SeriesData) -> Result<Written, TargetError>;
}

/// Why a file was skipped, as reported.
#[derive(Clone, Debug)]
pub struct Skip {
    pub path: PathBuf,
    pub reason: String,
}

/// How the job runs.
#[derive(Clone, Debug)]
pub struct JobOptions {
    /// Worker threads reading files and writing to the target.
    pub threads: usize,
    /// The state file (`None`: not resumable).
    pub state: Option<PathBuf>,
    /// A progress bar on stderr when it is a terminal, else a log line every this
    /// often. `None`: no progress output.
    pub progress_every: Option<Duration>,
}

impl Default for JobOptions {
    fn default() -> JobOptions {
        JobOptions {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            state: None,
            progress_every: Some(Duration::from_secs(10)),
        }
    }
}

/// The outcome of a job.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Files found under the source.
    pub files: u64,
    /// Files imported by this run.
    pub imported_files: u64,
    /// Files the state file listed as done by an earlier run.
    pub resumed_files: u64,
    /// Series imported (created or merged).
    pub series: u64,
    /// Series created by this run.
    pub created: u64,
    /// Points read from the sources.
    pub points: u64,
    /// Points written into empty slots.
    pub written: u64,
    /// Points left out because the slot held a value.
    pub present: u64,
    /// Points beyond retention or too far in the future.
    pub out_of_range: u64,
    /// Points of coarser archives covered by finer ones, not sent (into a cluster).
    pub covered: u64,
    /// Damaged files, unnamed series, series the target refused.
    pub skipped: Vec<Skip>,
    pub seconds: f64,
}

impl Summary {
    /// The closing report, one line per number.
    pub fn to_text(&self) -> String {
        let rate = if self.seconds > 0.0 {
            self.points as f64 / self.seconds
        } else {
            0.0
        };
        // into a cluster, the coarser archives' points that finer ones cover are rolled
        // up by the storage nodes instead of sent: said where there are any
        let covered = if self.covered > 0 {
            format!(
                ", {} covered by a finer archive (rolled up from it)",
                self.covered
            )
        } else {
            String::new()
        };
        let mut s = format!(
            "files: {} ({} imported, {} done by an earlier run, {} skipped)\n\
             series: {} ({} created)\n\
             points: {} read, {} written, {} already present, {} beyond retention{}\n\
             seconds: {:.1} ({:.0} points/s)\n",
            self.files,
            self.imported_files,
            self.resumed_files,
            self.skipped.len(),
            self.series,
            self.created,
            self.points,
            self.written,
            self.present,
            self.out_of_range,
            covered,
            self.seconds,
            rate
        );
        for sk in &self.skipped {
            s.push_str(&format!("skipped {}: {}\n", sk.path.display(), sk.reason));
        }
        s
    }
}

/// Why a job could not run or stopped.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state file {} records an import of {recorded:?}, not {asked:?}: remove it or name another with --state", path.display())]
    StateMismatch {
        path: PathBuf,
        recorded: String,
        asked: String,
    },
    #[error("import stopped: {0}")]
    Fatal(String),
}

/// Every file under `root` (followed into subdirectories, not through symlinked
/// directories) whose name ends in `.{ext}`, relative to `root`, sorted.
pub fn list_files(root: &Path, ext: &str) -> Result<Vec<PathBuf>, JobError> {
    let io = |path: &Path, source| JobError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(root).map_err(|e| io(root, e))?;
    if meta.is_file() {
        return Ok(vec![PathBuf::new()]);
    }
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    let suffix = format!(".{ext}");
    while let Some(rel) = dirs.pop() {
        let dir = root.join(&rel);
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let entry = entry.map_err(|e| io(&dir, e))?;
            let ft = entry.file_type().map_err(|e| io(&entry.path(), e))?;
            let name = entry.file_name();
            let child = rel.join(&name);
            if ft.is_dir() {
                dirs.push(child);
            } else if name.to_string_lossy().ends_with(&suffix) {
                out.push(child);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The state of a resumable job: a text file whose first line names the job, then
/// one finished file per line (relative to the source root).
struct State {
    file: Option<Mutex<File>>,
    done: HashSet<PathBuf>,
}

impl State {
    fn open(path: Option<&Path>, job: &str) -> Result<State, JobError> {
        let Some(path) = path else {
            return Ok(State {
                file: None,
                done: HashSet::new(),
            });
        };
        let io = |source| JobError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut done = HashSet::new();
        let header = format!("# sumi import {job}");
        match File::open(path) {
            Ok(f) => {
                let mut lines = BufReader::new(f).lines();
                let first = lines.next().transpose().map_err(io)?.unwrap_or_default();
                if !first.is_empty() && first != header {
                    return Err(JobError::StateMismatch {
                        path: path.to_path_buf(),
                        recorded: first.trim_start_matches("# sumi import ").to_string(),
                        asked: job.to_string(),
                    });
                }
                for line in lines {
                    let line = line.map_err(io)?;
                    // a line cut by a crash has no newline: it is read whole or not
                    // at all only if complete, so a torn last line names a file that
                    // is simply imported again
                    if !line.is_empty() {
                        done.insert(PathBuf::from(line));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        if f.metadata().map_err(io)?.len() == 0 {
            writeln!(f, "{header}").map_err(io)?;
        } else {
            // end a torn last line so the next record starts on its own line
            writeln!(f).map_err(io)?;
        }
        Ok(State {
            file: Some(Mutex::new(f)),
            done,
        })
    }

    fn finished(&self, rel: &Path) {
        if let Some(f) = &self.file {
            let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
            // best effort: a lost line means the file is imported again, harmlessly
            let _ = writeln!(f, "{}", rel.display());
        }
    }
}

struct Counters {
    files_done: AtomicU64,
    points: AtomicU64,
}

/// Imports the files `files` (relative to `root`): each is read by `read` (the
/// series it holds, or the reason it is skipped) and its series are handed to
/// `target`. `job` names the job in the state file (the kind and the absolute root),
/// so that a state file is not applied to another source.
pub fn run<R>(
    root: &Path,
    files: &[PathBuf],
    job: &str,
    read: R,
    target: &dyn Target,
    opts: &JobOptions,
) -> Result<Summary, JobError>
where
    R: Fn(&Path, &Path) -> Result<Vec<SeriesData>, String> + Sync,
{
    let t0 = Instant::now();
    let state = State::open(opts.state.as_deref(), job)?;
    let todo: Vec<&PathBuf> = files.iter().filter(|f| !state.done.contains(*f)).collect();
    let summary = Mutex::new(Summary {
        files: files.len() as u64,
        resumed_files: (files.len() - todo.len()) as u64,
        ..Summary::default()
    });
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let fatal: Mutex<Option<String>> = Mutex::new(None);
    let counters = Counters {
        files_done: AtomicU64::new(0),
        points: AtomicU64::new(0),
    };
    let finished = AtomicBool::new(false);
    let threads = opts.threads.max(1);
    std::thread::scope(|s| {
        let progress = opts.progress_every.map(|every| {
            let (counters, finished) = (&counters, &finished);
            let total = todo.len() as u64;
            s.spawn(move || show_progress(total, counters, finished, every))
        });
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(rel) = todo.get(i) else { return };
                    let path = root.join(rel);
                    let mut local = Summary::default();
                    match read(&path, rel) {
                        Err(reason) => local.skipped.push(Skip { path, reason }),
                        Ok(series) => {
                            let mut ok = true;
                            for sd in &series {
                                local.points += sd.points();
                                match target.import(sd) {
                                    Ok(w) => {
                                        local.series += 1;
                                        local.created += u64::from(w.created);
                                        local.written += w.written;
                                        local.present += w.present;
                                        local.out_of_range += w.out_of_range;
                                        local.covered += w.covered;
                                    }
                                    Err(TargetError::Series(reason)) => {
                                        ok = false;
                                        local.skipped.push(Skip {
                                            path: path.clone(),
                                            reason: format!("series {:?}: {reason}", sd.name),
                                        });
                                    }
                                    Err(TargetError::Fatal(reason)) => {
                                        *fatal.lock().unwrap_or_else(|e| e.into_inner()) =
                                            Some(format!("{}: {reason}", path.display()));
                                        stop.store(true, Ordering::Relaxed);
                                        return;
                                    }
                                }
                            }
                            if ok {
                                local.imported_files = 1;
                                state.finished(rel);
                            }
                        }
                    }
                    counters.files_done.fetch_add(1, Ordering::Relaxed);
                    counters.points.fetch_add(local.points, Ordering::Relaxed);
                    let mut sum = summary.lock().unwrap_or_else(|e| e.into_inner());
                    sum.imported_files += local.imported_files;
                    sum.series += local.series;
                    sum.created += local.created;
                    sum.points += local.points;
                    sum.written += local.written;
                    sum.present += local.present;
                    sum.out_of_range += local.out_of_range;
                    sum.covered += local.covered;
                    sum.skipped.extend(local.skipped);
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        finished.store(true, Ordering::Relaxed);
        if let Some(p) = progress {
            let _ = p.join();
        }
    });
    if let Some(f) = &state.file {
        let f = f.lock().unwrap_or_else(|e| e.into_inner());
        let _ = f.sync_all();
    }
    if let Some(reason) = fatal.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(JobError::Fatal(reason));
    }
    let mut summary = summary.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    summary.seconds = t0.elapsed().as_secs_f64();
    Ok(summary)
}

/// An `indicatif` bar (files, points/s, ETA) when stderr is a terminal, else a line
/// every `every`.
fn show_progress(total: u64, c: &Counters, finished: &AtomicBool, every: Duration) {
    let t0 = Instant::now();
    let tick = Duration::from_millis(200);
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(total);
        let style = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {pos}/{len} files, {msg}, ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        while !finished.load(Ordering::Relaxed) {
            std::thread::sleep(tick);
            bar.set_position(c.files_done.load(Ordering::Relaxed));
            let secs = t0.elapsed().as_secs_f64().max(1e-3);
            let pts = c.points.load(Ordering::Relaxed);
            bar.set_message(format!("{pts} points, {:.0} points/s", pts as f64 / secs));
        }
        bar.finish_and_clear();
        return;
    }
    let mut last = Instant::now();
    while !finished.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        if last.elapsed() < every {
            continue;
        }
        last = Instant::now();
        let done = c.files_done.load(Ordering::Relaxed);
        let secs = t0.elapsed().as_secs_f64().max(1e-3);
        let pts = c.points.load(Ordering::Relaxed);
        let eta = if done > 0 {
            secs / done as f64 * total.saturating_sub(done) as f64
        } else {
            f64::NAN
        };
        eprintln!(
            "sumi import: {done}/{total} files, {pts} points, {:.0} points/s, ETA {eta:.0} s",
            pts as f64 / secs
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("sumi-import-job-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    #[test]
    fn files_are_listed_sorted_and_relative() {
        let d = temp("list");
        for f in ["b/x.wsp", "a/y.wsp", "a/z.txt", "c/d/e.wsp"] {
            let p = d.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        }
        let got = list_files(&d, "wsp").unwrap();
        let want: Vec<PathBuf> = ["a/y.wsp", "b/x.wsp", "c/d/e.wsp"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(got, want);
        // one file: itself
        assert_eq!(
            list_files(&d.join("a/y.wsp"), "wsp").unwrap(),
            vec![PathBuf::new()]
        );
        assert!(matches!(
            list_files(&d.join("none"), "wsp"),
            Err(JobError::Io { .. })
        ));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn state_files_record_and_refuse_another_job() {
        let d = temp("state");
        let p = d.join("state");
        let s = State::open(Some(&p), "whisper /a").unwrap();
        s.finished(Path::new("x/y.wsp"));
        s.finished(Path::new("x/z.wsp"));
        drop(s);
        // a torn last line names no file
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"x/w.w")
            .unwrap();
        let s = State::open(Some(&p), "whisper /a").unwrap();
        assert!(s.done.contains(Path::new("x/y.wsp")));
        assert!(s.done.contains(Path::new("x/z.wsp")));
        assert!(!s.done.contains(Path::new("x/w.wsp")));
        s.finished(Path::new("x/w.wsp"));
        drop(s);
        let s = State::open(Some(&p), "whisper /a").unwrap();
        assert!(s.done.contains(Path::new("x/w.wsp")));
        drop(s);
        let e = State::open(Some(&p), "rrd /b").err().unwrap();
        assert!(e.to_string().contains("whisper /a"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
