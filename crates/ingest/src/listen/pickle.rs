//! Carbon pickle over TCP: length-prefixed frames through the safe unpickler, on the
//! same accept loop, connection loop, batching and back-pressure as plaintext
//! ([`super::tcp`]).
//!
//! What is counted, and under which reason (as `sumi_points_rejected_total`):
//! - each element of a good message is one received point; a bad element is refused
//!   by its own reason ([`crate::pickle::ElementError`]) and the others are kept;
//! - a message that cannot be unpickled is one received unit refused as
//!   `invalid_pickle` (its points cannot be counted);
//! - a length prefix over `max_frame_bytes` is refused as `frame_too_long` and the
//!   connection is closed after what was read before it is appended (carbon closes
//!   too: a stream whose frame is skipped cannot be trusted to be in step);
//! - a connection that ends inside a frame loses that frame, counted as
//!   `frame_truncated` (carbon drops it silently). At shutdown the unfinished frame is
//!   dropped as plaintext drops an unfinished line: its rest was never read.

use std::sync::Arc;

use tokio::net::TcpListener;

use super::batcher::Batcher;
use super::tcp::{serve_stream, Protocol, Step, StreamDecoder};
use super::{Context, ShutdownSignal};
use crate::options::PickleOptions;
use crate::pickle::{FrameReader, FrameStatus, PickleLimits, Unpickler};
use crate::stats::{IngestStats, Reason};
use sumi_model::Sink;

/// Serves carbon pickle on an already bound listener until `shutdown`; returns when
/// every connection has finished. The same shape and shutdown as
/// [`super::serve_tcp`]; listeners sharing one `stats` share its connection limit.
pub async fn serve_pickle(
    listener: TcpListener,
    sink: Arc<dyn Sink>,
    opts: PickleOptions,
    stats: Arc<IngestStats>,
    shutdown: ShutdownSignal,
) {
    let PickleOptions {
        listener: common,
        max_frame_bytes,
        limits,
    } = opts;
    let buffer = common.read_buffer_bytes;
    let ctx = Context::new(sink, common, stats);
    let proto = Protocol::new(ctx, "carbon pickle", move || {
        PickleDecoder::new(buffer, max_frame_bytes, limits.clone())
    });
    serve_stream(listener, proto, shutdown).await;
}

/// Frames, then messages, then points: one per connection, pooled when idle.
pub(super) struct PickleDecoder {
    frames: FrameReader,
    vm: Unpickler,
    /// The message being turned into points: `(next element, elements)`. Its frame
    /// stays in `frames` until every element is out (a full batch pauses it).
    current: Option<(usize, usize)>,
    max_frame_bytes: usize,
}

impl PickleDecoder {
    pub(super) fn new(
        buffer_bytes: usize,
        max_frame_bytes: usize,
        limits: PickleLimits,
    ) -> PickleDecoder {
        PickleDecoder {
            frames: FrameReader::new(buffer_bytes, max_frame_bytes),
            vm: Unpickler::new(limits),
            current: None,
            max_frame_bytes,
        }
    }
}

impl StreamDecoder for PickleDecoder {
    fn read_space(&mut self) -> &mut [u8] {
        self.frames.read_space()
    }

    fn commit(&mut self, n: usize) {
        self.frames.commit(n);
    }

    fn decode(&mut self, out: &mut Batcher, now: i64) -> Step {
        loop {
            if let Some((next, count)) = self.current.as_mut() {
                let msg = self.frames.frame();
                while *next < *count {
                    let i = *next;
                    *next += 1;
                    match self.vm.point(msg, i, now) {
                        Ok(p) => out.accept(&p),
                        Err(e) => {
                            let sample = self.vm.element_name(msg, i).unwrap_or_default();
                            out.refuse(e.rejection(), sample, &e);
                        }
                    }
                    if out.is_full() {
                        return Step::Full;
                    }
                }
                self.current = None;
                self.frames.consume();
            }
            match self.frames.status() {
                FrameStatus::NeedMore => return Step::NeedInput,
                FrameStatus::TooLong(len) => {
                    let limit = self.max_frame_bytes;
                    out.refuse(
                        Reason::FrameTooLong,
                        &[],
                        &format_args!(
                            "pickle message of {len} bytes is over the limit of {limit}; closing the connection"
                        ),
                    );
                    return Step::Close;
                }
                FrameStatus::Ready => match self.vm.load(self.frames.frame()) {
                    Ok(count) => self.current = Some((0, count)),
                    Err(e) => {
                        out.refuse(e.rejection(), self.frames.frame(), &e);
                        self.frames.consume();
                    }
                },
            }
        }
    }

    fn finish(&mut self, out: &mut Batcher, _now: i64) {
        let pending = self.frames.pending_bytes();
        if pending > 0 {
            out.refuse(
                Reason::FrameTruncated,
                &[],
                &format_args!("connection closed {pending} bytes into a pickle frame"),
            );
            self.frames.reset();
        }
    }

    fn is_idle(&self) -> bool {
        self.current.is_none() && self.frames.is_idle()
    }

    fn pending_bytes(&self) -> usize {
        self.frames.pending_bytes()
    }

    fn reset(&mut self) {
        self.frames.reset();
        self.vm.release();
        self.current = None;
    }
}
