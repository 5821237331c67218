//! Lines into batches, batches into the sink, with back-pressure.
//!
//! A connection parses every complete line it has read into its batch and hands the
//! batch on when it is full or the socket has nothing more to read. While the sink is
//! unavailable the connection keeps its batch and stops reading, retrying with a
//! doubling wait (bounded by `retry_max`), or after the wait a throttled sink names
//! (`SinkError::Throttled`): its client sees TCP back-pressure, other
//! connections are untouched, and nothing is dropped, except after shutdown once
//! `shutdown_grace` has passed (counted as `sink_unavailable`).

use std::net::SocketAddr;
use std::sync::Arc;

use sumi_model::Batch;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::time::Instant;

use super::{is_shutdown, shutdown_requested, Context, ShutdownSignal};
use crate::frame::Frame;
use crate::options::AppendMode;
use crate::plaintext::{parse_line, LineError, ParsedLine};
use crate::stats::{LocalCounts, Reason};
use sumi_model::{AppendOutcome, SinkError};

pub(super) struct Batcher {
    ctx: Arc<Context>,
    /// Taken from the pool when the first point arrives, returned when idle.
    batch: Option<Batch>,
    pub(super) counts: LocalCounts,
    /// The client, for log lines.
    pub(super) peer: Option<SocketAddr>,
}

impl Batcher {
    pub(super) fn new(ctx: Arc<Context>, peer: Option<SocketAddr>) -> Batcher {
        Batcher {
            ctx,
            batch: None,
            counts: LocalCounts::default(),
            peer,
        }
    }

    /// Handles one framed line. `now` replaces timestamps of `-1`.
    pub(super) fn frame(&mut self, frame: Frame<'_>, now: i64) {
        match frame {
            Frame::Line(line) => self.line(line, now),
            Frame::TooLong(sample) => {
                let err = LineError::LineTooLong(self.ctx.opts.max_line_bytes);
                self.refuse(Reason::LineTooLong, sample, &err);
            }
        }
    }

    fn line(&mut self, line: &[u8], now: i64) {
        match parse_line(line, now) {
            Ok(p) => self.accept(&p),
            Err(e) => {
                if let Some(reason) = e.rejection() {
                    self.refuse(reason, line, &e);
                }
            }
        }
    }

    /// Counts a point as received and adds it to the batch.
    pub(super) fn accept(&mut self, p: &ParsedLine<'_>) {
        self.counts.received += 1;
        if p.name_changed {
            self.counts.renamed += 1;
        }
        let ctx = &self.ctx;
        self.batch
            .get_or_insert_with(|| ctx.batches.take().unwrap_or_default())
            .push(&p.name, p.ts, p.value);
    }

    /// Counts one received unit (a line, an element, a whole message) as refused for
    /// `reason`, and logs it under the rate limit with `sample` (the offending bytes).
    pub(super) fn refuse(&mut self, reason: Reason, sample: &[u8], detail: &dyn std::fmt::Display) {
        self.counts.received += 1;
        self.counts.reject(reason);
        self.ctx
            .stats
            .log_rejection(reason, self.peer, sample, detail);
    }

    pub(super) fn is_full(&self) -> bool {
        self.batch
            .as_ref()
            .is_some_and(|b| b.len() >= self.ctx.opts.max_batch_points)
    }

    /// Appends the batch (waiting while the sink is unavailable) and publishes the
    /// counts. Returns with an empty batch.
    pub(super) async fn flush(&mut self, shutdown: &mut ShutdownSignal) {
        if let Some(batch) = self.batch.as_mut().filter(|b| !b.is_empty()) {
            let opts = &self.ctx.opts;
            let mut wait = opts.retry_initial;
            let mut give_up_at: Option<Instant> = None;
            loop {
                match append(&self.ctx, batch) {
                    Ok(_) => break,
                    Err(err) => {
                        let why = err.reason();
                        // a throttled batch goes again when the sink says it will pass;
                        // otherwise the wait doubles
                        let (pause, next) = match &err {
                            SinkError::Throttled { retry_after, .. } => {
                                ((*retry_after).max(opts.retry_initial), wait)
                            }
                            SinkError::Unavailable(_) | SinkError::Closed(_) => {
                                (wait, (wait * 2).min(opts.retry_max))
                            }
                        };
                        let peer = self.peer.map_or_else(|| "-".to_string(), |p| p.to_string());
                        let msg = format!(
                            "sink unavailable, holding {} points from {peer} and retrying in {pause:?}: {why}",
                            batch.len()
                        );
                        self.ctx.stats.log_event(Reason::SinkUnavailable, &msg);
                        if is_shutdown(shutdown) {
                            let deadline = *give_up_at
                                .get_or_insert_with(|| Instant::now() + opts.shutdown_grace);
                            if Instant::now() >= deadline {
                                tracing::error!(
                                    points = batch.len(),
                                    %peer,
                                    "dropping a batch at shutdown: the sink stayed unavailable: {why}"
                                );
                                let lost = u64::try_from(batch.len()).unwrap_or(u64::MAX);
                                self.counts.reject_many(Reason::SinkUnavailable, lost);
                                break;
                            }
                            tokio::time::sleep(
                                pause.min(deadline.saturating_duration_since(Instant::now())),
                            )
                            .await;
                        } else {
                            tokio::select! {
                                () = tokio::time::sleep(pause) => {}
                                () = shutdown_requested(shutdown) => {}
                            }
                        }
                        wait = next;
                    }
                }
            }
            batch.clear();
        }
        self.ctx.stats.absorb(&mut self.counts);
    }

    /// Gives the (flushed) batch back to the pool while the connection is idle.
    pub(super) fn release(&mut self) {
        if let Some(mut b) = self.batch.take() {
            b.clear();
            self.ctx.batches.give(b);
        }
    }
}

/// Calls the synchronous sink as [`AppendMode`] says.
fn append(ctx: &Context, batch: &Batch) -> Result<AppendOutcome, SinkError> {
    let multi_thread =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    match ctx.opts.append_mode {
        AppendMode::BlockInPlace if multi_thread => {
            tokio::task::block_in_place(|| ctx.sink.append(batch))
        }
        _ => ctx.sink.append(batch),
    }
}
