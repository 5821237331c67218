//! What the user sees while the bench runs: progress bars on a terminal, or a status line
//! every 10 s on stderr (`--no-progress`, or stderr not a terminal), so CI logs stay short.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::report::group;

/// How often the plain mode prints a status line.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

const TEMPLATE: &str =
    "{prefix:>9} {wide_bar} {human_pos}/{human_len} {rate:>12} eta {eta:>4} {msg}";

/// Progress reporting for one run.
pub struct Progress {
    multi: Option<MultiProgress>,
    sent: Option<ProgressBar>,
    stored: Option<ProgressBar>,
    queryable: Option<ProgressBar>,
    started: Instant,
    last_line: Option<Instant>,
}

impl Progress {
    /// Bars when `bars` is asked and stderr is a terminal, plain status lines otherwise.
    pub fn new(bars: bool) -> Progress {
        let multi = (bars && std::io::stderr().is_terminal())
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Progress {
            multi,
            sent: None,
            stored: None,
            queryable: None,
            started: Instant::now(),
            last_line: None,
        }
    }

    /// Prints a line about the run (above the bars when there are bars).
    pub fn say(&self, line: &str) {
        match &self.multi {
            Some(m) => {
                if m.println(line).is_err() {
                    eprintln!("{line}");
                }
            }
            None => eprintln!("{line}"),
        }
    }

    fn bar(&self, name: &str, len: u64) -> Option<ProgressBar> {
        let multi = self.multi.as_ref()?;
        // The template is a constant; the fallback only guards against a future indicatif
        // refusing it.
        let style = ProgressStyle::with_template(TEMPLATE)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key(
                "rate",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}/s", group(state.per_sec().max(0.0).round() as u64));
                },
            );
        Some(
            multi.add(
                ProgressBar::new(len)
                    .with_style(style)
                    .with_prefix(name.to_string()),
            ),
        )
    }

    /// Shows points sent and stored out of `total`.
    pub fn ingest(&mut self, sent: u64, stored: u64, total: u64) {
        if self.multi.is_some() {
            if self.sent.is_none() {
                self.sent = self.bar("sent", total);
                self.stored = self.bar("stored", total);
            }
            if let Some(b) = &self.sent {
                b.set_position(sent);
            }
            if let Some(b) = &self.stored {
                b.set_position(stored);
            }
        } else if self.due() {
            self.say(&format!(
                "  {:>6.1} s  sent {} / {}, stored {} / {}",
                self.started.elapsed().as_secs_f64(),
                group(sent),
                group(total),
                group(stored),
                group(total)
            ));
        }
    }

    /// Shows non-null points seen through /render out of `target`.
    pub fn query(&mut self, seen: u64, target: u64) {
        if self.multi.is_some() {
            if self.queryable.is_none() {
                self.finish_ingest();
                self.queryable = self.bar("queryable", target);
            }
            if let Some(b) = &self.queryable {
                b.set_position(seen);
            }
        } else if self.due() {
            self.say(&format!(
                "  {:>6.1} s  sampled series show {} / {} points",
                self.started.elapsed().as_secs_f64(),
                group(seen),
                group(target)
            ));
        }
    }

    /// Stops the ingest bars where they are.
    pub fn finish_ingest(&mut self) {
        for b in [self.sent.take(), self.stored.take()].into_iter().flatten() {
            b.abandon();
        }
    }

    /// Stops every bar where it is.
    pub fn finish(&mut self) {
        self.finish_ingest();
        if let Some(b) = self.queryable.take() {
            b.abandon();
        }
    }

    /// Whether a plain status line is due (the first one after 10 s).
    fn due(&mut self) -> bool {
        let now = Instant::now();
        let last = *self.last_line.get_or_insert(self.started);
        if now.duration_since(last) >= PLAIN_EVERY {
            self.last_line = Some(now);
            true
        } else {
            false
        }
    }
}
