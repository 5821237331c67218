//! `sumi cluster status`: the cluster as one node's configuration describes it — each
//! storage node's health, and for every partition its log end in Kafka, and each owner's
//! consumed offset and lag.
//!
//! Output, one fact a line, made to be read and to be grepped:
//!
//! ```text
//! topic sumi-points at 127.0.0.1:9092: 6 partitions
//! node 1 127.0.0.1:8081 up partitions 0,2,3,5
//! node 2 127.0.0.1:8082 down partitions 0,1,3,4
//! partition 0 end 5120 node 1 offset 5120 lag 0 node 2 offset - lag - down
//! partition 1 end 4410 node 2 offset 4410 lag 0 node 4 offset 3900 lag 510 catching-up
//! ```
//!
//! An owner still joining (copying the partition from a peer, or catching up with the
//! log from the copy's offset: `copying`, `catching-up`) is shown but not counted as a
//! live replica.
//!
//! Exit status: 0 every node up and caught up to what it was asked; 1 a node down or a
//! partition without a live owner; 2 the status could not be read (configuration,
//! Kafka).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::config::{Config, ServeFlags};

/// Flags of `sumi cluster status`.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusFlags {
    /// A cluster node's sumi.toml: its `[cluster]` section names Kafka and the peers.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// How long to wait for Kafka and for each node (ms).
    #[arg(long, default_value_t = 5000)]
    pub timeout_ms: u64,
}

/// Prints the status; answers the exit status.
pub fn run(flags: &StatusFlags) -> i32 {
    match status(flags) {
        Ok((text, healthy)) => {
            print!("{text}");
            if healthy {
                0
            } else {
                1
            }
        }
        Err(e) => {
            eprintln!("sumi cluster status: {e:#}");
            2
        }
    }
}

/// What one node said.
struct NodeState {
    up: bool,
    /// Next offset to apply, per partition it consumes.
    offsets: BTreeMap<u32, i64>,
    /// Partitions it owns but does not count as a replica of yet, with the phase.
    joining: BTreeMap<u32, String>,
}

fn ask_node(http: &str, timeout: Duration) -> NodeState {
    let agent = ureq::AgentBuilder::new().timeout(timeout).build();
    let up = agent
        .get(&format!("http://{http}/health"))
        .call()
        .is_ok_and(|r| r.status() == 200);
    let mut offsets = BTreeMap::new();
    let mut joining = BTreeMap::new();
    if up {
        let text = agent
            .get(&format!("http://{http}/metrics"))
            .call()
            .ok()
            .and_then(|r| r.into_string().ok());
        if let Some(text) = text {
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("sumi_cluster_partition_joining{partition=\"")
                {
                    if let Some((p, rest)) = rest.split_once('"') {
                        let phase = rest
                            .strip_prefix(",phase=\"")
                            .and_then(|r| r.split_once('"'))
                            .map_or("joining", |(ph, _)| ph);
                        if let Ok(p) = p.parse::<u32>() {
                            joining.insert(p, phase.to_string());
                        }
                    }
                    continue;
                }
                let Some(rest) = line.strip_prefix("sumi_cluster_consume_next_offset{partition=\"")
                else {
                    continue;
                };
                let Some((p, v)) = rest.split_once("\"} ") else {
                    continue;
                };
                if let (Ok(p), Ok(v)) = (p.parse::<u32>(), v.trim().parse::<f64>()) {
                    offsets.insert(p, v as i64);
                }
            }
        }
    }
    NodeState {
        up,
        offsets,
        joining,
    }
}

fn status(flags: &StatusFlags) -> Result<(String, bool)> {
    let config = Config::load(&ServeFlags::files(Some(flags.config.clone()), None))
        .with_context(|| format!("reading {}", flags.config.display()))?;
    let Some(cc) = config.cluster else {
        bail!(
            "{} has no [cluster] section: not a cluster node",
            flags.config.display()
        );
    };
    if cc.peers.is_empty() {
        bail!(
            "{} lists no [[cluster.peers]]: the status needs every storage node",
            flags.config.display()
        );
    }
    let timeout = Duration::from_millis(flags.timeout_ms.max(1));
    let ends = sumi_cluster::log_end_offsets(&cc, timeout)?;
    // the nodes are asked in parallel: a dead one costs one timeout, not one each
    let states: Vec<NodeState> = std::thread::scope(|s| {
        let handles: Vec<_> = cc
            .peers
            .iter()
            .map(|p| s.spawn(move || ask_node(&p.http, timeout)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or(NodeState {
                    up: false,
                    offsets: BTreeMap::new(),
                    joining: BTreeMap::new(),
                })
            })
            .collect()
    });

    let mut out = String::new();
    let mut healthy = true;
    let _ = writeln!(
        out,
        "topic {} at {}: {} partitions",
        cc.topic, cc.brokers, cc.partitions
    );
    for (peer, st) in cc.peers.iter().zip(&states) {
        healthy &= st.up;
        let parts: Vec<String> = peer.partitions.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "node {} {} {} partitions {}",
            peer.node_id,
            peer.http,
            if st.up { "up" } else { "down" },
            parts.join(",")
        );
    }
    for (p, end) in ends.iter().enumerate() {
        let p = p as u32;
        let mut line = format!("partition {p} end {end}");
        let mut live = 0;
        for (peer, st) in cc.peers.iter().zip(&states) {
            if !peer.partitions.contains(&p) {
                continue;
            }
            let joining = st.joining.get(&p);
            match (st.up, st.offsets.get(&p)) {
                (true, Some(&off)) if joining.is_some() => {
                    let _ = write!(
                        line,
                        " node {} offset {off} lag {} {}",
                        peer.node_id,
                        (end - off).max(0),
                        joining.map_or("joining", String::as_str)
                    );
                }
                (true, None) if joining.is_some() => {
                    let _ = write!(
                        line,
                        " node {} offset - lag - {}",
                        peer.node_id,
                        joining.map_or("joining", String::as_str)
                    );
                }
                (true, Some(&off)) => {
                    live += 1;
                    let _ = write!(
                        line,
                        " node {} offset {off} lag {}",
                        peer.node_id,
                        (end - off).max(0)
                    );
                }
                (true, None) => {
                    live += 1;
                    let _ = write!(line, " node {} offset ? lag ? not-consuming", peer.node_id);
                }
                (false, _) => {
                    let _ = write!(line, " node {} offset - lag - down", peer.node_id);
                }
            }
        }
        if live == 0 {
            healthy = false;
            line.push_str(" no-live-owner");
        }
        out.push_str(&line);
        out.push('\n');
    }
    Ok((out, healthy))
}
