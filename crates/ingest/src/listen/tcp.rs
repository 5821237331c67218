//! Carbon over TCP: the accept loop and the per-connection reader, generic over the
//! [`StreamDecoder`] that turns a connection's bytes into points (plaintext lines
//! here, pickle frames in [`super::pickle`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::batcher::Batcher;
use super::pool::Pool;
use super::{shutdown_requested, Context, ShutdownSignal, POOLED};
use crate::frame::LineReader;
use crate::options::PlaintextOptions;
use crate::stats::IngestStats;
use sumi_model::Sink;

/// What a connection's bytes go through: framing, then parsing into a [`Batcher`].
/// The connection reads straight into the decoder's buffer.
pub(super) trait StreamDecoder: Send + 'static {
    /// Where to read next. Empty only when the decoder cannot take more without
    /// consuming (which the read loop treats as a fault and closes the connection).
    fn read_space(&mut self) -> &mut [u8];
    /// Records that `n` bytes were read into [`StreamDecoder::read_space`].
    fn commit(&mut self, n: usize);
    /// Decodes what is complete into `out`, stopping as soon as `out` is full.
    fn decode(&mut self, out: &mut Batcher, now: i64) -> Step;
    /// At a clean end of stream: whatever the held bytes still give.
    fn finish(&mut self, out: &mut Batcher, now: i64);
    /// Nothing is held: the decoder can go back to the pool.
    fn is_idle(&self) -> bool;
    /// Bytes of an unfinished unit held (what a shutdown drops).
    fn pending_bytes(&self) -> usize;
    /// Forgets everything, for reuse by another connection.
    fn reset(&mut self);
}

/// What [`StreamDecoder::decode`] stopped on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Everything complete was decoded: read more.
    NeedInput,
    /// The batch is full: flush it, then call `decode` again.
    Full,
    /// The stream cannot go on (a frame over the limit): close the connection.
    Close,
}

/// One TCP protocol of one listener: what its connections share.
pub(super) struct Protocol<D> {
    ctx: Arc<Context>,
    /// Decoders (with their read buffers) of connections that went idle.
    decoders: Pool<D>,
    new_decoder: Box<dyn Fn() -> D + Send + Sync>,
    /// For log lines: "carbon plaintext", "carbon pickle".
    name: &'static str,
}

impl<D: StreamDecoder> Protocol<D> {
    pub(super) fn new(
        ctx: Arc<Context>,
        name: &'static str,
        new_decoder: impl Fn() -> D + Send + Sync + 'static,
    ) -> Arc<Protocol<D>> {
        Arc::new(Protocol {
            ctx,
            decoders: Pool::new(POOLED),
            new_decoder: Box::new(new_decoder),
            name,
        })
    }

    fn take_decoder(&self) -> D {
        self.decoders.take().unwrap_or_else(|| (self.new_decoder)())
    }

    fn give_decoder(&self, mut d: D) {
        d.reset();
        self.decoders.give(d);
    }
}

/// Carbon plaintext: lines.
impl StreamDecoder for LineReader {
    fn read_space(&mut self) -> &mut [u8] {
        LineReader::read_space(self)
    }

    fn commit(&mut self, n: usize) {
        LineReader::commit(self, n);
    }

    fn decode(&mut self, out: &mut Batcher, now: i64) -> Step {
        while let Some(frame) = self.next_frame() {
            out.frame(frame, now);
            if out.is_full() {
                return Step::Full;
            }
        }
        Step::NeedInput
    }

    fn finish(&mut self, out: &mut Batcher, now: i64) {
        if let Some(frame) = LineReader::finish(self) {
            out.frame(frame, now);
        }
    }

    fn is_idle(&self) -> bool {
        LineReader::is_idle(self)
    }

    fn pending_bytes(&self) -> usize {
        LineReader::pending_bytes(self)
    }

    fn reset(&mut self) {
        LineReader::reset(self);
    }
}

/// Serves carbon plaintext on an already bound listener until `shutdown` (see the
/// [module doc](super)); returns when every connection has finished.
///
/// Accept errors (out of file descriptors, ...) are logged and retried after a pause;
/// connections over `opts.max_connections`, or from a source outside `opts.allow`, are
/// closed at once and counted.
pub async fn serve_tcp(
    listener: TcpListener,
    sink: Arc<dyn Sink>,
    opts: PlaintextOptions,
    stats: Arc<IngestStats>,
    shutdown: ShutdownSignal,
) {
    let (buffer, max_line) = (opts.read_buffer_bytes, opts.max_line_bytes);
    let ctx = Context::new(sink, opts, stats);
    let proto = Protocol::new(ctx, "carbon plaintext", move || {
        LineReader::new(buffer, max_line)
    });
    serve_stream(listener, proto, shutdown).await;
}

/// The accept loop of every TCP protocol.
pub(super) async fn serve_stream<D: StreamDecoder>(
    listener: TcpListener,
    proto: Arc<Protocol<D>>,
    mut shutdown: ShutdownSignal,
) {
    let ctx = Arc::clone(&proto.ctx);
    let name = proto.name;
    let local = listener.local_addr().ok();
    tracing::info!(addr = ?local, "{name} listening on TCP");
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            () = shutdown_requested(&mut shutdown) => break,
            Some(done) = conns.join_next(), if !conns.is_empty() => {
                if let Err(e) = done {
                    tracing::error!("{name} connection task failed: {e}");
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if ctx.opts.allow.as_ref().is_some_and(|a| !a.permits(peer.ip())) {
                        ctx.stats.refuse_connection_source(peer, name);
                        drop(stream);
                        continue;
                    }
                    let limit = ctx.opts.max_connections;
                    if !ctx.stats.try_open_connection(limit) {
                        ctx.stats.log_refused_connection(peer, limit);
                        drop(stream);
                        continue;
                    }
                    let open = OpenConnection(Arc::clone(&ctx.stats));
                    conns.spawn(connection(stream, peer, Arc::clone(&proto), shutdown.clone(), open));
                }
                Err(e) => {
                    let msg = format!("{name} TCP accept failed (retrying in 100 ms): {e}");
                    ctx.stats.log_listener_error(&msg);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    drop(listener);
    let started = std::time::Instant::now();
    let draining = conns.len();
    while let Some(done) = conns.join_next().await {
        if let Err(e) = done {
            tracing::error!("{name} connection task failed: {e}");
        }
    }
    tracing::info!(addr = ?local, connections = draining, elapsed = ?started.elapsed(), "{name} TCP listener stopped");
}

/// Counts the connection as closed however its task ends.
struct OpenConnection(Arc<IngestStats>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.close_connection();
    }
}

/// How a connection's read loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Still open.
    Open,
    /// The client closed its side: a last line without `\n` counts; a partial frame
    /// is counted as lost.
    Eof,
    /// Shutdown: an unfinished last unit is dropped (its rest was never read).
    Shutdown,
    /// A read error: the connection is gone; what was read is kept.
    Failed,
    /// The decoder refused the stream (a frame over the limit): closed by us.
    Refused,
}

async fn connection<D: StreamDecoder>(
    stream: TcpStream,
    peer: SocketAddr,
    proto: Arc<Protocol<D>>,
    mut shutdown: ShutdownSignal,
    _open: OpenConnection,
) {
    let ctx = Arc::clone(&proto.ctx);
    let name = proto.name;
    let opts: &PlaintextOptions = &ctx.opts;
    let mut decoder: Option<D> = None;
    let mut batcher = Batcher::new(Arc::clone(&ctx), Some(peer));
    let mut end = End::Open;
    while end == End::Open {
        tokio::select! {
            biased;
            () = shutdown_requested(&mut shutdown) => {
                end = End::Shutdown;
                break;
            }
            ready = stream.readable() => if let Err(e) = ready {
                tracing::debug!(%peer, "{name} connection failed: {e}");
                end = End::Failed;
                break;
            }
        }
        // Held only while the connection has bytes to read or an unfinished unit.
        let d = decoder.get_or_insert_with(|| proto.take_decoder());
        let now = opts.clock.now();
        'reads: for _ in 0..opts.reads_per_wake.max(1) {
            let space = d.read_space();
            if space.is_empty() {
                // Unreachable while every unit is drained before reading; a zero-byte
                // read would look like end of stream, so stop instead.
                tracing::error!(%peer, "{name} read buffer full; closing the connection");
                end = End::Failed;
                break;
            }
            match stream.try_read(space) {
                Ok(0) => {
                    end = End::Eof;
                    break;
                }
                Ok(n) => {
                    d.commit(n);
                    batcher.counts.bytes += n as u64;
                    loop {
                        match d.decode(&mut batcher, now) {
                            Step::NeedInput => break,
                            Step::Full => batcher.flush(&mut shutdown).await,
                            Step::Close => {
                                end = End::Refused;
                                break 'reads;
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(%peer, "{name} connection read failed: {e}");
                    end = End::Failed;
                    break;
                }
            }
        }
        if end == End::Eof {
            d.finish(&mut batcher, now);
        }
        batcher.flush(&mut shutdown).await;
        if d.is_idle() {
            if let Some(idle) = decoder.take() {
                proto.give_decoder(idle);
            }
            batcher.release();
        }
    }
    if let Some(d) = decoder.take() {
        if end == End::Shutdown && d.pending_bytes() > 0 {
            tracing::debug!(%peer, bytes = d.pending_bytes(), "dropping an unfinished {name} unit at shutdown");
        }
        proto.give_decoder(d);
    }
    batcher.flush(&mut shutdown).await;
    batcher.release();
}
