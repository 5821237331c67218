//! The log's time a storage node's retention judges by
//! (`sumi_store::StoreOptions::log_time_retention`).
//!
//! A point's level is decided by its age at its arrival time (carried in the record),
//! so every replica places it alike; retention must not drop a partition that a point
//! still to be applied would land in. The log's time is the earliest arrival time the
//! node's partitions can still bring: for a partition it is behind with, the arrival
//! time of the last record it applied (records follow in log order, so later); for one
//! it is caught up with (its consumed offset at the partition's end, from librdkafka's
//! statistics), the clock, as records still to come are taken in from now on. The node's
//! log time is the least over its partitions, less [`MARGIN`] for the ingest nodes'
//! clocks not agreeing to the second (several ingest nodes write one partition) and for
//! the moment between a record's arrival time and its fetch. Nothing is known for a
//! partition before the node has applied a record of it or caught up with it: the log
//! time is then `i64::MIN` (nothing expires), which is what a restarted node starts
//! with — it needs nothing saved across restarts.
//!
//! Not covered: records an ingest node delivers from its spill after an outage carry
//! their old arrival times; a replica caught up before them expires by the clock.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use crate::consumer::PartitionProgress;

/// Seconds taken off the least arrival time (clock skew between ingest nodes, fetch
/// delay).
pub const MARGIN: i64 = 60;

/// The arrival time of the last record applied of each owned partition.
pub(crate) struct LogTime {
    arrivals: RefCell<BTreeMap<u32, i64>>,
}

impl LogTime {
    pub(crate) fn new(partitions: impl IntoIterator<Item = u32>) -> LogTime {
        LogTime {
            arrivals: RefCell::new(partitions.into_iter().map(|p| (p, i64::MIN)).collect()),
        }
    }

    /// Records of `partition` with this arrival time were applied.
    pub(crate) fn applied(&self, partition: u32, arrival: i64) {
        if let Some(a) = self.arrivals.borrow_mut().get_mut(&partition) {
            *a = (*a).max(arrival);
        }
    }

    /// The log's time at `now` (the clock) given each partition's progress.
    pub(crate) fn at(&self, progress: &BTreeMap<u32, PartitionProgress>, now: i64) -> i64 {
        let arrivals = self.arrivals.borrow();
        let least = arrivals
            .iter()
            .map(|(p, &arrival)| {
                let caught_up = progress.get(p).is_some_and(|pr| {
                    let high = pr.high.load(Ordering::Relaxed);
                    high >= 0 && pr.next.load(Ordering::Relaxed) >= high
                });
                if caught_up {
                    now
                } else {
                    arrival
                }
            })
            .min()
            .unwrap_or(now);
        least.min(now).saturating_sub(MARGIN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(parts: &[(u32, i64, i64)]) -> BTreeMap<u32, PartitionProgress> {
        parts
            .iter()
            .map(|&(p, next, high)| {
                let pr = PartitionProgress::default();
                pr.next.store(next, Ordering::Relaxed);
                pr.high.store(high, Ordering::Relaxed);
                (p, pr)
            })
            .collect()
    }

    #[test]
    fn the_least_over_partitions_the_clock_where_caught_up() {
        const NOW: i64 = 1_800_000_000;
        let t = LogTime::new([0, 1]);
        // nothing applied, nothing known: nothing expires
        assert_eq!(t.at(&progress(&[(0, 0, -1), (1, 0, -1)]), NOW), i64::MIN);
        // partition 0 applied up to an hour ago's arrivals, 1 unknown still
        t.applied(0, NOW - 3600);
        assert_eq!(t.at(&progress(&[(0, 5, 9), (1, 0, -1)]), NOW), i64::MIN);
        // 1 caught up (an idle partition): 0's arrival decides
        assert_eq!(
            t.at(&progress(&[(0, 5, 9), (1, 0, 0)]), NOW),
            NOW - 3600 - MARGIN
        );
        // an older arrival applied later does not move it back
        t.applied(0, NOW - 7200);
        assert_eq!(
            t.at(&progress(&[(0, 6, 9), (1, 0, 0)]), NOW),
            NOW - 3600 - MARGIN
        );
        // both caught up: the clock
        assert_eq!(t.at(&progress(&[(0, 9, 9), (1, 3, 3)]), NOW), NOW - MARGIN);
        // an arrival ahead of the clock does not lead it
        t.applied(1, NOW + 500);
        assert_eq!(t.at(&progress(&[(0, 9, 9), (1, 3, 4)]), NOW), NOW - MARGIN);
        // a partition not owned is not counted
        t.applied(7, NOW - 99_999);
        assert_eq!(t.at(&progress(&[(0, 9, 9), (1, 4, 4)]), NOW), NOW - MARGIN);
    }
}
