//! Ordered shutdown of a [`Running`] server, each step logged with its duration:
//! `/ready` turns 503 and systemd hears `STOPPING=1`, self-monitoring stops, then the
//! ingest listeners stop accepting and drain (every byte already read is appended),
//! the anomaly detectors' state is saved,
//! the store closes (head flushed to parts, WAL synced, manifest written), and HTTP
//! stops last, so reads keep working until the store is closed. `shutdown` returns once
//! the last reference to the store is gone (bounded), so that the data directory's lock
//! is free for the next `run` in the same process.

use std::sync::Arc;
use std::time::{Duration, Instant};

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

        // every point ingest took has been scored: save the detectors before the store
        // closes (their catch-up at the next start reads the store)
        let _ = self.anomaly_stop.send(true);
        if let Some(task) = self.anomaly_saver {
            let _ = task.await;
        }
        if let Some(engine) = self.anomaly.clone() {
            let step = Instant::now();
            match tokio::task::spawn_blocking(move || engine.save()).await {
                Ok(Ok(())) => info!(secs = step.elapsed().as_secs_f64(), "anomaly state saved"),
                Ok(Err(e)) => warn!("saving the anomaly state: {e:#}"),
                Err(e) => warn!("saving the anomaly state: {e}"),
            }
        }

        if let Some(cluster) = self.cluster {
            // what ingest handed the producer is acknowledged already; the consumer
            // applies no more and checkpoints its offsets before the store closes
            let step = Instant::now();
            let sink = cluster.sink;
            let consumer = cluster.consumer;
            let joiner = cluster.joiner;
            let gf_applier = cluster.gf_applier;
            cluster
                .join_stop
                .store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = tokio::task::spawn_blocking(move || {
                sink.flush(Duration::from_secs(10));
                // a copy stops between series; what it loaded is copied again at the
                // next start (its offset was not saved)
                if let Some(j) = joiner {
                    let _ = j.join();
                }
                // between two ops: the next start resumes at the stored offset
                if let Some(j) = gf_applier {
                    let _ = j.join();
                }
                let taken = consumer.lock().take();
                if let Some(c) = taken {
                    c.stop();
                }
            })
            .await;
            info!(secs = step.elapsed().as_secs_f64(), "cluster node stopped");
        }

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

        // The GrowthForecast writer thread lets go of the store once the HTTP state it
        // belongs to is dropped; the directory lock goes with the last reference.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&self.store) > 1 {
            if Instant::now() >= deadline {
                warn!("the store is still referenced 10 s after the shutdown; its directory lock is held until then");
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}
