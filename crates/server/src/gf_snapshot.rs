//! A node's `growthforecast.db` restored from a peer when the metadata log no longer
//! holds the ops it has not applied.
//!
//! Every node's database is the metadata log applied from its first op, and the
//! metadata topic keeps every record (`sumi_cluster::meta_log::META_TOPIC_SETTINGS`).
//! Should the log start above the op a node needs next anyway — records removed by
//! hand, or expired under the broker's retention before a release that set the topic's
//! own — the node (a new one, or one whose database was lost) cannot rebuild its rows
//! from the log: applying only the later ops would number its graphs differently.
//! Before it opens its database, it then copies a peer's (`GET
//! /internal/v0/gf_snapshot`, a consistent copy that holds the log offset it covers)
//! and applies the log from that offset.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use sumi_cluster::ClusterConfig;
use sumi_http::growthforecast::db::DB_FILE;
use sumi_http::growthforecast::replicated::stored_log_offset;
use tracing::{info, warn};

/// How long a node keeps asking its peers for a copy before it gives up (and exits).
const TRY_FOR: Duration = Duration::from_secs(60);

/// Copies a peer's database into `data_dir` when the metadata log starts above the
/// op this node's database needs next. Blocking; before the database is opened.
pub(crate) fn restore_if_behind(
    cc: &ClusterConfig,
    data_dir: &Path,
    auth: Option<&str>,
) -> Result<()> {
    let mut meta = cc.clone();
    meta.topic = sumi_cluster::meta_log::meta_topic(cc);
    meta.partitions = 1;
    let start = match sumi_cluster::log_start_offsets(&meta, Duration::from_secs(10)) {
        Ok(s) => s.first().copied().unwrap_or(0),
        Err(e) => {
            warn!("reading the metadata log's start: {e:#}");
            return Ok(());
        }
    };
    let path = data_dir.join(DB_FILE);
    let next = stored_log_offset(&path).with_context(|| format!("reading {}", path.display()))?;
    if next >= start {
        return Ok(());
    }
    warn!(
        next,
        log_start = start,
        "the growthforecast metadata log no longer holds the ops this node's database \
         needs next: copying a peer's database"
    );
    let peers: Vec<&sumi_cluster::PeerConfig> = cc
        .peers
        .iter()
        .filter(|p| p.node_id != cc.node_id)
        .collect();
    if peers.is_empty() {
        bail!(
            "the growthforecast metadata log starts at {start} but this node's database \
             needs op {next}, and no peer is configured to copy one from"
        );
    }
    let deadline = Instant::now() + TRY_FOR;
    loop {
        for peer in &peers {
            match copy_from(&peer.http, auth, data_dir, start) {
                Ok(copied) => {
                    info!(
                        peer = %peer.http,
                        node = peer.node_id,
                        next = copied,
                        "growthforecast.db copied from a peer; applying the metadata log from its offset"
                    );
                    return Ok(());
                }
                Err(e) => warn!(peer = %peer.http, "copying growthforecast.db: {e:#}"),
            }
        }
        if Instant::now() >= deadline {
            bail!(
                "no peer gave a copy of growthforecast.db within {}s (the metadata log \
                 starts at {start}, this node's database needs op {next})",
                TRY_FOR.as_secs()
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Fetches a peer's copy, checks that it covers the log from `start`, and puts it in
/// place of this node's database; the copy's offset.
fn copy_from(http: &str, auth: Option<&str>, data_dir: &Path, start: i64) -> Result<i64> {
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(60))
        .build();
    let mut req = agent.get(&format!("http://{http}/internal/v0/gf_snapshot"));
    if let Some(a) = auth {
        req = req.set("Authorization", a);
    }
    let resp = req.call().map_err(|e| match e {
        ureq::Error::Status(code, r) => {
            anyhow::anyhow!("status {code}: {}", r.into_string().unwrap_or_default())
        }
        e => anyhow::anyhow!("{e}"),
    })?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut bytes)?;
    let tmp = data_dir.join(format!("{DB_FILE}.copy"));
    std::fs::create_dir_all(data_dir)?;
    write_synced(&tmp, &bytes)?;
    let next = stored_log_offset(&tmp).context("reading the copy")?;
    if next < start {
        let _ = std::fs::remove_file(&tmp);
        bail!("the copy needs op {next} too, below the log's start {start}");
    }
    // the old database's write-ahead log must not be applied to the copy
    let db = data_dir.join(DB_FILE);
    for side in ["-wal", "-shm"] {
        let f = data_dir.join(format!("{DB_FILE}{side}"));
        match std::fs::remove_file(&f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", f.display())),
        }
    }
    std::fs::rename(&tmp, &db).with_context(|| format!("renaming the copy to {}", db.display()))?;
    std::fs::File::open(data_dir)?.sync_all()?;
    Ok(next)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    std::io::Write::write_all(&mut f, bytes)?;
    f.sync_all()?;
    Ok(())
}
