//! Ordered shutdown of a [`Running`] server, each step logged with its duration:
//! `/ready` turns 503 and systemd hears `STOPPING=1`, self-monitoring stops, then the
//! ingest listeners stop accepting and drain (every byte already read is appended),
//! the store closes (head flushed to parts, WAL synced, manifest written), and HTTP
//! stops last, so reads keep working until the store is closed.

use std::time::Instant;

use anyhow::{Context, Result};
use tracing::{info, warn};

use crate::notify;
use crate::wire::Running;

impl Running {
    /// Stops every stage in order; an error is the store's failure to close.
    pub(crate) async fn shutdown(self) -> Result<()> {
        self.readiness.set_stopping();
        notify::notify("STOPPING=1");
        let _ = self.selfmon_stop.send(true);
        if let Some(task) = self.selfmon {
            if let Err(e) = task.await {
                warn!("self-monitoring task failed: {e}");
            }
        }

        let step = Instant::now();
        let _ = self.ingest_stop.send(true);
        for task in self.ingest {
            if let Err(e) = task.await {
                warn!("ingest listener task failed: {e}");
            }
        }
        info!(secs = step.elapsed().as_secs_f64(), "ingest drained");

        let step = Instant::now();
        let closing = self.store.clone();
        tokio::task::spawn_blocking(move || closing.close())
            .await
            .context("closing the store")?
            .context("closing the store")?;
        info!(secs = step.elapsed().as_secs_f64(), "store closed");

        let step = Instant::now();
        let _ = self.http_stop.send(true);
        match self.http.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!("http server ended with an error: {e}"),
            Err(e) => warn!("http task failed: {e}"),
        }
        info!(secs = step.elapsed().as_secs_f64(), "http stopped");
        Ok(())
    }
}
