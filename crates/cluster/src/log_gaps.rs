//! Records a storage node never applied because Kafka's retention removed them first.
//!
//! A partition's offsets are contiguous (an idempotent producer, no transactions, no
//! compaction), so a record polled past the offset expected next means the records in
//! between are gone from the log: the node was behind by more than the topic's
//! retention (down that long, or lagging), and librdkafka moved it to the log's start.
//! Its copy of the partition now lacks points its replicas hold. The consumer counts
//! and logs the gap and lists the partition in `<data_dir>/cluster/gaps`; at its next
//! start the node drops its series of a listed partition and copies the partition
//! from a replica (docs/cluster.md, "A node behind the log's retention").
//!
//! The gaps file: one line a partition, `TOPIC PARTITION`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The consumer's watch: the offset it expects next of each owned partition.
pub(crate) struct GapWatch {
    expect: RefCell<BTreeMap<u32, i64>>,
    path: PathBuf,
    topic: String,
}

impl GapWatch {
    /// Expecting `start` (the consumed offsets it starts from; 0 where none) of each
    /// partition; the gaps file is `path`.
    pub(crate) fn new(start: BTreeMap<u32, i64>, path: PathBuf, topic: &str) -> GapWatch {
        GapWatch {
            expect: RefCell::new(start),
            path,
            topic: topic.to_string(),
        }
    }

    /// A record of `partition` at `offset` was polled: the records it skipped (0
    /// normally), after listing the partition in the gaps file when there were any.
    pub(crate) fn polled(&self, partition: u32, offset: i64) -> u64 {
        let mut expect = self.expect.borrow_mut();
        let Some(next) = expect.get_mut(&partition) else {
            return 0;
        };
        let skipped = offset.saturating_sub(*next).max(0) as u64;
        // a record below the expected one (polled again after a rewind) moves nothing
        *next = (*next).max(offset + 1);
        if skipped > 0 {
            tracing::error!(
                partition,
                from = offset - skipped as i64,
                to = offset,
                skipped,
                "records of this partition were removed by Kafka's retention before this \
                 node applied them: its copy of the partition lacks their points; restart \
                 the node to copy the partition from a replica"
            );
            if let Err(e) = add_gap(&self.path, &self.topic, partition) {
                tracing::error!(error = %e, path = %self.path.display(), "listing the partition in the gaps file");
            }
        }
        skipped
    }
}

/// The partitions listed in the gaps file (none when there is no file).
pub fn read_gaps(path: &Path, topic: &str) -> Result<BTreeSet<u32>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let parsed = match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            [t, p] => p.parse::<u32>().ok().map(|p| (*t, p)),
            _ => None,
        };
        let Some((t, p)) = parsed else {
            bail!(
                "{} line {}: not `TOPIC PARTITION`: {line:?}",
                path.display(),
                i + 1
            );
        };
        if t == topic {
            out.insert(p);
        }
    }
    Ok(out)
}

/// Lists `partition` in the gaps file.
pub fn add_gap(path: &Path, topic: &str, partition: u32) -> Result<()> {
    let mut gaps = read_gaps(path, topic)?;
    if gaps.insert(partition) {
        write_gaps(path, topic, &gaps)?;
    }
    Ok(())
}

/// Takes `partition` off the gaps file (once its copy is complete).
pub fn clear_gap(path: &Path, topic: &str, partition: u32) -> Result<()> {
    let mut gaps = read_gaps(path, topic)?;
    if gaps.remove(&partition) {
        write_gaps(path, topic, &gaps)?;
    }
    Ok(())
}

/// Writes the gaps file durably (lines of other topics are not kept: a node stores one
/// topic).
fn write_gaps(path: &Path, topic: &str, gaps: &BTreeSet<u32>) -> Result<()> {
    let text: String = gaps.iter().map(|p| format!("{topic} {p}\n")).collect();
    crate::consumer::replace_durably(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_offset_is_counted_and_listed_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gaps");
        let watch = GapWatch::new([(0, 5), (1, 0)].into_iter().collect(), path.clone(), "t");
        assert_eq!(watch.polled(0, 5), 0);
        assert_eq!(watch.polled(0, 6), 0);
        // polled again after a rewind: nothing skipped, nothing moved back
        assert_eq!(watch.polled(0, 3), 0);
        assert_eq!(watch.polled(0, 7), 0);
        assert!(read_gaps(&path, "t").unwrap().is_empty());
        // partition 1 starts at 40: 40 records removed before this node applied them
        assert_eq!(watch.polled(1, 40), 40);
        assert_eq!(watch.polled(1, 41), 0);
        // a partition not owned is not watched
        assert_eq!(watch.polled(9, 100), 0);
        assert_eq!(read_gaps(&path, "t").unwrap(), BTreeSet::from([1]));
        assert!(read_gaps(&path, "other").unwrap().is_empty());
        assert_eq!(watch.polled(0, 10), 2);
        assert_eq!(read_gaps(&path, "t").unwrap(), BTreeSet::from([0, 1]));
        clear_gap(&path, "t", 1).unwrap();
        assert_eq!(read_gaps(&path, "t").unwrap(), BTreeSet::from([0]));
    }

    #[test]
    fn a_bad_gaps_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gaps");
        std::fs::write(&path, "t x\n").unwrap();
        let e = read_gaps(&path, "t").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
