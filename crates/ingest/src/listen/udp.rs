//! Carbon plaintext over UDP: every datagram holds whole lines.

use std::io;
use std::sync::Arc;

use tokio::net::UdpSocket;

use super::batcher::Batcher;
use super::{shutdown_requested, Context, ShutdownSignal};
use crate::frame::{datagram_lines, Frame};
use crate::options::PlaintextOptions;
use crate::stats::IngestStats;
use sumi_model::Sink;

/// The largest UDP payload (IPv6 without jumbograms: 65,535 - 8); a bigger buffer
/// guarantees no datagram is silently cut.
const MAX_DATAGRAM: usize = 65_536;

/// Datagrams per wake-up before the task goes back through the scheduler.
const DATAGRAMS_PER_WAKE: usize = 256;

/// Serves carbon plaintext on an already bound UDP socket until `shutdown`, then
/// appends what was read and returns.
///
/// Lines are split as carbon's `splitlines()` does ([`datagram_lines`]); lines longer
/// than `opts.max_line_bytes` are refused as `line_too_long`, like on TCP. Datagrams
/// from sources outside `opts.allow` are dropped and counted.
pub async fn serve_udp(
    socket: UdpSocket,
    sink: Arc<dyn Sink>,
    opts: PlaintextOptions,
    stats: Arc<IngestStats>,
    mut shutdown: ShutdownSignal,
) {
    let ctx = Context::new(sink, opts, stats);
    let local = socket.local_addr().ok();
    tracing::info!(addr = ?local, "carbon plaintext listening on UDP");
    let max_line = ctx.opts.max_line_bytes;
    let allow = ctx.opts.allow.clone();
    let allow = allow.as_deref();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut batcher = Batcher::new(Arc::clone(&ctx), None);
    loop {
        tokio::select! {
            biased;
            () = shutdown_requested(&mut shutdown) => break,
            ready = socket.readable() => if let Err(e) = ready {
                tracing::error!(addr = ?local, "carbon UDP socket failed: {e}");
                break;
            }
        }
        let now = ctx.opts.clock.now();
        for _ in 0..DATAGRAMS_PER_WAKE {
            match socket.try_recv_from(&mut buf) {
                Ok((_, peer)) if allow.is_some_and(|a| !a.permits(peer.ip())) => {
                    ctx.stats.refuse_datagram_source(peer);
                }
                Ok((n, peer)) => {
                    batcher.peer = Some(peer);
                    batcher.counts.bytes += n as u64;
                    batcher.counts.datagrams += 1;
                    for line in datagram_lines(buf.get(..n).unwrap_or_default()) {
                        let frame = if line.len() > max_line {
                            Frame::TooLong(line.get(..400).unwrap_or(line))
                        } else {
                            Frame::Line(line)
                        };
                        batcher.frame(frame, now);
                        if batcher.is_full() {
                            batcher.flush(&mut shutdown).await;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // e.g. an ICMP error queued on the socket: nothing to do but go on.
                    ctx.stats
                        .log_listener_error(&format_args!("carbon UDP receive failed: {e}"));
                    break;
                }
            }
        }
        batcher.flush(&mut shutdown).await;
        batcher.release();
    }
    batcher.flush(&mut shutdown).await;
    tracing::info!(addr = ?local, "carbon UDP listener stopped");
}
