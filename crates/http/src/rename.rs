//! `POST /api/v1/series/rename` on a cluster node (`docs/cluster.md`, "Series
//! administration"): the new name of a series hashes to another partition, usually
//! stored by other nodes, so its data moves through the log.
//!
//! The node that takes the rename:
//!
//! 1. lists the series at `from` and below it over the whole cluster (the fan-out's
//!    `match`), and the series at and below `to`; refused (409) when a new name is
//!    taken anywhere, 503 when a partition had no caught-up replica to ask;
//! 2. reads the data topic's end offsets, then each series' stored archives from one
//!    replica of its partition (`/internal/v0/history`, answered once that replica's
//!    consumer has passed the ends, so every point acknowledged before the rename is
//!    in what is read);
//! 3. appends each history to the data topic under the new name, as `POST
//!    /api/v0/import` does (finest archive first, a coarser one only where no finer
//!    reaches; arrival time now; the storage nodes' schema rebuilds the coarse levels);
//! 4. writes a delete marker of the old names into each old name's own partition
//!    (`acks=all`), then `Op::DeleteSeries { marked: true }` on the metadata log, which
//!    answers once this node's consumer has passed the markers, as a cluster delete
//!    does;
//!
//! and answers the JSON a single node answers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sumi_store::Store;

use crate::fanout::{Fanout, Gaps};
use crate::import_api::{encode_values, ImportArchive, ImportSeries};

/// How long a replica waits for its consumer to reach the ends a history request
/// carries before it answers 503 (the asker then asks another replica).
const CATCH_UP_WAIT: Duration = Duration::from_secs(30);

/// Most names in one delete marker (a record: well below Kafka's message size).
const NAMES_PER_MARKER: usize = 1_000;

/// Most series asked of the fan-out in one history request.
const SERIES_PER_READ: usize = 256;

/// The body of `/internal/v0/history`.
#[derive(Serialize, Deserialize)]
pub(crate) struct HistoryReq {
    pub names: Vec<String>,
    /// The data topic's end offsets to wait for, per partition.
    #[serde(default)]
    pub ends: BTreeMap<u32, i64>,
    #[serde(default)]
    pub partitions: Option<Vec<u32>>,
}

/// This node's stored history of `names` (of partitions it serves): each series'
/// archives (finest first) as its fetch shows them now, rollups included, with its
/// method and xFilesFactor. Waits first until the consumer has applied each of those
/// partitions up to its end in `ends`; an error when it does not in time.
pub(crate) fn local_history(
    store: &Store,
    placement: &Fanout,
    names: &[String],
    ends: &BTreeMap<u32, i64>,
) -> Result<Vec<ImportSeries>, String> {
    let partitions: BTreeSet<u32> = names.iter().map(|n| placement.partition_of(n)).collect();
    let deadline = Instant::now() + CATCH_UP_WAIT;
    for p in partitions {
        let Some(&end) = ends.get(&p) else { continue };
        loop {
            match placement.states().next_offset(p) {
                Some(next) if next >= end => break,
                _ if Instant::now() > deadline => {
                    return Err(format!(
                        "partition {p}: this node has not applied the data topic up to {end} within {} s",
                        CATCH_UP_WAIT.as_secs()
                    ))
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
    let now = crate::unix_now();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        // a series deleted meanwhile is left out
        let Some(d) = store.direct_writes(name) else {
            continue;
        };
        let mut archives = Vec::new();
        for a in d.config.retention.archives() {
            // whisper's fetch reads the finest archive that reaches `from`: this one
            let Some(f) = store.fetch(name, now - a.retention_secs(), now, now) else {
                continue;
            };
            if f.step != i64::from(a.step_secs) {
                continue;
            }
            archives.push(ImportArchive {
                step: a.step_secs,
                points: a.points,
                start: f.start,
                values: encode_values(&f.values),
            });
        }
        out.push(ImportSeries {
            name: name.clone(),
            aggregation_method: d.config.method.name().to_string(),
            x_files_factor: d.config.xff,
            archives,
        });
    }
    Ok(out)
}

/// One series' move.
#[derive(Clone, Debug)]
pub(crate) struct Move {
    pub from: String,
    pub to: String,
}

/// Why a cluster rename did not happen: the status and the message.
pub(crate) type Refusal = (axum::http::StatusCode, String);

fn tree_path(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(|n| !n.is_empty())
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', ']', '{', '}'])
}

fn unavailable(what: &str, gaps: &Gaps) -> Refusal {
    (
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "{what}: partitions {:?} have no caught-up replica to ask (retry later)",
            gaps.missing.union(&gaps.stale).collect::<Vec<_>>()
        ),
    )
}

/// The moves of a rename of `from` to `to` over the cluster, as a single node plans
/// them (`sumi_store::Store::rename_series`), or why not.
pub(crate) fn plan(
    fanout: &Fanout,
    from: &str,
    to: &str,
    auth: Option<&str>,
) -> Result<Vec<Move>, Refusal> {
    use axum::http::StatusCode;
    let conflict = |m: String| Err((StatusCode::CONFLICT, m));
    if from == to {
        return conflict(format!("rename {from:?} onto itself does nothing"));
    }
    let tagged = from.contains(';') || to.contains(';');
    if tagged {
        if !to.contains(';') && !tree_path(to) {
            return conflict(format!(
                "rename {from:?} to {to:?}: not a valid series name"
            ));
        }
    } else {
        if !tree_path(from) || !tree_path(to) {
            return conflict(format!(
                "rename {from:?} to {to:?}: a path needs non-empty dot-separated nodes"
            ));
        }
        if to == from || to.starts_with(&format!("{from}.")) {
            return conflict(format!(
                "rename {from:?} to {to:?}: cannot move a subtree into itself"
            ));
        }
    }
    if has_glob(from) || has_glob(to) {
        return Err((
            StatusCode::BAD_REQUEST,
            format!("rename {from:?} to {to:?}: a cluster rename takes no glob characters"),
        ));
    }
    let globs = |p: &str| {
        if tagged {
            vec![p.to_string()]
        } else {
            vec![p.to_string(), format!("{p}.**")]
        }
    };
    let bad_gateway = |e: sumi_query::source::SourceError| (StatusCode::BAD_GATEWAY, e.to_string());
    let (old, gaps) = fanout
        .match_series(&globs(from), auth)
        .map_err(bad_gateway)?;
    if !gaps.is_empty() {
        return Err(unavailable("listing the series to rename", &gaps));
    }
    let moves: Vec<Move> = old
        .into_iter()
        .filter(|n| n == from || (!tagged && n.starts_with(&format!("{from}."))))
        .map(|n| Move {
            to: format!("{to}{}", n.get(from.len()..).unwrap_or_default()),
            from: n,
        })
        .collect();
    if moves.is_empty() {
        return Err((
            StatusCode::NOT_FOUND,
            format!("no series named {from:?} or below it"),
        ));
    }
    if let Some(m) = moves.iter().find(|m| has_glob(&m.from)) {
        return Err((
            StatusCode::BAD_REQUEST,
            format!(
                "rename {from:?} to {to:?}: series {:?} has a glob character in its name, which a cluster rename cannot delete exactly",
                m.from
            ),
        ));
    }
    let (taken, gaps) = fanout.match_series(&globs(to), auth).map_err(bad_gateway)?;
    if !gaps.is_empty() {
        return Err(unavailable("listing the new names", &gaps));
    }
    let taken: BTreeSet<String> = taken.into_iter().collect();
    if let Some(m) = moves.iter().find(|m| taken.contains(&m.to)) {
        return conflict(format!(
            "rename {from:?} to {to:?} refused: series {:?} already exists (delete it first)",
            m.to
        ));
    }
    Ok(moves)
}

/// Moves the series' data (steps 2 and 3 of the module doc) and writes the delete
/// markers of the old names (step 4's first half; false when the log has no data
/// topic to put them in); blocking. The op that waits for the markers is the
/// caller's.
pub(crate) fn move_data(
    state: &crate::AppState,
    fanout: &Fanout,
    moves: &[Move],
    auth: Option<&str>,
) -> Result<bool, Refusal> {
    use axum::http::StatusCode;
    let Some(log) = state.gf.log.as_deref() else {
        return Err((StatusCode::BAD_REQUEST, "not a cluster node".into()));
    };
    let gateway = |m: String| (StatusCode::BAD_GATEWAY, m);
    let ends = log
        .data_ends()
        .map_err(|e| gateway(format!("reading the data topic's end: {e}")))?
        .unwrap_or_default();
    let new_name: BTreeMap<&str, &str> = moves
        .iter()
        .map(|m| (m.from.as_str(), m.to.as_str()))
        .collect();
    for chunk in moves.chunks(SERIES_PER_READ) {
        let names: Vec<String> = chunk.iter().map(|m| m.from.clone()).collect();
        let (history, gaps) = fanout
            .history(&names, &ends, auth)
            .map_err(|e| gateway(format!("reading the series' history: {e}")))?;
        if !gaps.is_empty() {
            return Err(unavailable("reading the series' history", &gaps));
        }
        for s in &history {
            let Some(to) = new_name.get(s.name.as_str()) else {
                continue;
            };
            crate::import_api::append_series_as(state.sink.as_ref(), s, to)
                .map_err(|e| gateway(format!("appending {to:?} to the log: {e}")))?;
        }
    }
    // each old name's marker into its own partition only
    let mut by_partition: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for m in moves {
        by_partition
            .entry(fanout.partition_of(&m.from))
            .or_default()
            .push(m.from.clone());
    }
    let markers: Vec<(u32, Vec<String>)> = by_partition
        .into_iter()
        .flat_map(|(p, names)| {
            names
                .chunks(NAMES_PER_MARKER)
                .map(|c| (p, c.to_vec()))
                .collect::<Vec<_>>()
        })
        .collect();
    log.named_delete_markers(&markers)
        .map_err(|e| gateway(format!("writing the delete markers: {e}")))
}
