//! Sockets: the carbon listeners on tokio.
//!
//! - [`tcp`]: the accept loop (connection limit, shutdown) and one task per
//!   connection: read into a pooled decoder, frame, parse, batch, append. It is
//!   generic over the stream's decoder, so plaintext ([`serve_tcp`]) and pickle
//!   ([`serve_pickle`]) share every line of it.
//! - [`pickle`]: the pickle decoder: length-prefixed frames through the unpickler.
//! - [`udp`]: one task per socket; every datagram is split into whole lines.
//! - [`allow`]: the source allowlist ([`SourceAllowlist`]): networks whose clients may
//!   send; others are refused at accept (TCP) or per datagram (UDP) and counted.
//! - `batcher`: what all share: points into a reused [`sumi_model::Batch`], counts by
//!   reason, the append with back-pressure and bounded retry.
//!
//! Listeners take sockets already bound (tests bind port 0; the server may bind
//! several with `SO_REUSEPORT` and run one listener on each, sharing one
//! [`crate::IngestStats`], whose connection count the limit applies to).
//!
//! Shutdown is a `tokio::sync::watch::Receiver<bool>`: it is signalled when the value
//! becomes `true` or when every sender is dropped (so a listener never outlives its
//! owner). Then listeners stop accepting and reading, append the lines already read
//! (dropping an unfinished last line: its rest was never read), and return once every
//! connection has finished.

pub mod allow;
mod batcher;
pub mod pickle;
mod pool;
pub mod tcp;
pub mod udp;

use std::sync::Arc;

use sumi_model::Batch;
use tokio::sync::watch;

use crate::options::PlaintextOptions;
use crate::stats::IngestStats;
use sumi_model::Sink;

pub use allow::{AllowlistError, Cidr, CidrError, SourceAllowlist};
pub use pickle::serve_pickle;
pub use tcp::serve_tcp;
pub use udp::serve_udp;

/// The shutdown signal the listeners take (see the module doc).
pub type ShutdownSignal = watch::Receiver<bool>;

/// Waits until shutdown is signalled (or every sender is gone).
async fn shutdown_requested(rx: &mut ShutdownSignal) {
    // `Err` means every sender was dropped: shut down as well.
    let _ = rx.wait_for(|stop| *stop).await;
}

/// Whether shutdown has been signalled, without waiting.
fn is_shutdown(rx: &ShutdownSignal) -> bool {
    *rx.borrow() || rx.has_changed().is_err()
}

/// What every connection of one listener shares.
struct Context {
    sink: Arc<dyn Sink>,
    opts: PlaintextOptions,
    stats: Arc<IngestStats>,
    /// Batches of connections that went idle, for the next busy one (they keep their
    /// capacity). Read buffers are pooled by [`tcp`], per decoder type.
    batches: pool::Pool<Batch>,
}

impl Context {
    fn new(sink: Arc<dyn Sink>, opts: PlaintextOptions, stats: Arc<IngestStats>) -> Arc<Context> {
        Arc::new(Context {
            sink,
            opts,
            stats,
            batches: pool::Pool::new(POOLED),
        })
    }
}

/// Buffers and batches kept for reuse per listener: enough for the connections busy at
/// one moment on a few cores; memory held when all are pooled stays under ~20 MiB.
const POOLED: usize = 32;
