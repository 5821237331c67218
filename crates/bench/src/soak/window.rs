//! One sampling interval of a soak: the figures of a CSV row, and the latency
//! percentiles they summarise.
//!
//! Query threads push each answer's latency into a shared [`Latencies`]; every interval
//! the sampler takes them out ([`Latencies::take`]) and turns them, the process figures
//! and the counters' deltas into a [`Row`]. Percentiles are nearest-rank over the
//! interval's own samples, so a slow minute is not hidden by the fast ones before it.

use std::sync::Mutex;
use std::time::Duration;

/// Query latencies and errors collected since the last [`Latencies::take`].
#[derive(Debug, Default)]
pub struct Latencies {
    inner: Mutex<Collected>,
}

/// What [`Latencies::take`] hands over.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collected {
    /// Seconds each answered query took.
    pub secs: Vec<f64>,
    /// Queries that failed (transport error or a status other than 200), with the
    /// first failure's message kept for the report.
    pub errors: u64,
    /// The first failure of the interval, if any.
    pub first_error: Option<String>,
}

impl Latencies {
    /// Records one answered query.
    pub fn ok(&self, took: Duration) {
        self.lock().secs.push(took.as_secs_f64());
    }

    /// Records one failed query.
    pub fn error(&self, what: String) {
        let mut c = self.lock();
        c.errors += 1;
        if c.first_error.is_none() {
            c.first_error = Some(what);
        }
    }

    /// Everything recorded since the last call, leaving the collector empty.
    pub fn take(&self) -> Collected {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Collected> {
        // A query thread that panicked cannot leave the vector half-written: recover.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The nearest-rank `q` quantile (0 < q ≤ 1) of `sorted` (ascending), or `None` when empty.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// One CSV row: an interval of the soak.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Seconds since the soak started, at the end of the interval.
    pub elapsed_secs: f64,
    /// Length of the interval in seconds.
    pub interval_secs: f64,
    /// Server resident memory at the end of the interval, bytes (`VmRSS`).
    pub rss_bytes: Option<u64>,
    /// Server CPU over the interval, in percent of one core.
    pub cpu_percent: Option<f64>,
    /// Points handed to the kernel per second over the interval.
    pub sent_per_sec: f64,
    /// Growth of `sumi_points_stored_total` per second over the interval.
    pub stored_per_sec: Option<f64>,
    /// New series names sent in the interval.
    pub new_series: u64,
    /// Queries answered in the interval.
    pub queries: u64,
    /// Median query latency, milliseconds.
    pub p50_ms: Option<f64>,
    /// 99th percentile query latency, milliseconds.
    pub p99_ms: Option<f64>,
    /// Slowest query, milliseconds.
    pub max_ms: Option<f64>,
    /// Failed queries plus send errors in the interval.
    pub errors: u64,
}

/// The CSV header matching [`Row::to_csv`].
pub const CSV_HEADER: &str = "elapsed_s,interval_s,rss_bytes,cpu_percent,sent_points_per_s,\
stored_points_per_s,new_series,queries,query_p50_ms,query_p99_ms,query_max_ms,errors";

impl Row {
    /// Fills the latency columns from one interval's collected samples.
    pub fn with_latencies(mut self, mut c: Collected) -> Row {
        c.secs.sort_by(f64::total_cmp);
        self.queries = c.secs.len() as u64;
        self.p50_ms = quantile(&c.secs, 0.50).map(|s| s * 1e3);
        self.p99_ms = quantile(&c.secs, 0.99).map(|s| s * 1e3);
        self.max_ms = c.secs.last().map(|s| s * 1e3);
        self.errors += c.errors;
        self
    }

    /// The row as CSV (empty fields for unknown figures).
    pub fn to_csv(&self) -> String {
        fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        let r2 = |v: f64| (v * 100.0).round() / 100.0;
        let r3 = |v: f64| (v * 1000.0).round() / 1000.0;
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            r2(self.elapsed_secs),
            r2(self.interval_secs),
            opt(self.rss_bytes),
            opt(self.cpu_percent.map(r2)),
            r2(self.sent_per_sec),
            opt(self.stored_per_sec.map(r2)),
            self.new_series,
            self.queries,
            opt(self.p50_ms.map(r3)),
            opt(self.p99_ms.map(r3)),
            opt(self.max_ms.map(r3)),
            self.errors
        )
    }

    /// One human line for stdout.
    pub fn to_line(&self) -> String {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
        format!(
            "soak {:>7.0} s  rss {}  cpu {}  sent {:.0}/s  stored {}  queries {} (p50 {}, p99 {})  errors {}",
            self.elapsed_secs,
            self.rss_bytes
                .map_or("-".to_string(), |b| format!("{:.1} MiB", b as f64 / 1048576.0)),
            self.cpu_percent
                .map_or("-".to_string(), |c| format!("{c:.0}%")),
            self.sent_per_sec,
            self.stored_per_sec
                .map_or("-".to_string(), |s| format!("{s:.0}/s")),
            self.queries,
            ms(self.p50_ms),
            ms(self.p99_ms),
            self.errors
        )
    }
}

/// RSS growth over the run beyond the working set: the last row's RSS against the
/// largest RSS of the first third of the rows (the working set is built by then), in
/// percent; `None` with fewer than three rows with RSS.
pub fn rss_growth_percent(rows: &[Row]) -> Option<f64> {
    let rss: Vec<u64> = rows.iter().filter_map(|r| r.rss_bytes).collect();
    if rss.len() < 3 {
        return None;
    }
    let warm = rss[..rss.len() / 3].iter().copied().max()?;
    let last = *rss.last()?;
    (warm > 0).then(|| (last as f64 - warm as f64) * 100.0 / warm as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 1.0), Some(100.0));
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 0.5), Some(2.0));
    }

    #[test]
    fn take_empties_the_collector_and_keeps_the_first_error() {
        let l = Latencies::default();
        l.ok(Duration::from_millis(30));
        l.ok(Duration::from_millis(10));
        l.error("GET /render: status 500".into());
        l.error("later".into());
        let c = l.take();
        assert_eq!(c.secs.len(), 2);
        assert_eq!(c.errors, 2);
        assert_eq!(c.first_error.as_deref(), Some("GET /render: status 500"));
        assert_eq!(l.take(), Collected::default());
    }

    #[test]
    fn a_row_summarises_its_interval() {
        let c = Collected {
            secs: vec![0.030, 0.010, 0.020, 0.500],
            errors: 1,
            first_error: None,
        };
        let row = Row {
            elapsed_secs: 60.0,
            interval_secs: 60.0,
            rss_bytes: Some(1 << 20),
            cpu_percent: Some(12.345),
            sent_per_sec: 1000.0,
            stored_per_sec: Some(999.5),
            new_series: 3,
            errors: 2,
            ..Row::default()
        }
        .with_latencies(c);
        assert_eq!(row.queries, 4);
        assert_eq!(row.p50_ms, Some(20.0));
        assert_eq!(row.p99_ms, Some(500.0));
        assert_eq!(row.max_ms, Some(500.0));
        assert_eq!(row.errors, 3);
        assert_eq!(
            row.to_csv(),
            "60,60,1048576,12.35,1000,999.5,3,4,20,500,500,3"
        );
        assert_eq!(
            row.to_csv().split(',').count(),
            CSV_HEADER.split(',').count()
        );
        let empty = Row::default().with_latencies(Collected::default());
        assert_eq!(empty.to_csv(), "0,0,,,0,,0,0,,,,0");
        assert!(row.to_line().contains("p99 500.0 ms"), "{}", row.to_line());
    }

    #[test]
    fn rss_growth_compares_the_end_with_the_warm_working_set() {
        let rows = |rss: &[u64]| -> Vec<Row> {
            rss.iter()
                .map(|&b| Row {
                    rss_bytes: Some(b),
                    ..Row::default()
                })
                .collect()
        };
        assert_eq!(rss_growth_percent(&rows(&[100, 200])), None);
        assert_eq!(
            rss_growth_percent(&rows(&[100, 200, 150, 200, 200, 220])),
            Some(10.0)
        );
        assert_eq!(
            rss_growth_percent(&rows(&[400, 100, 100, 100, 100, 300])),
            Some(-25.0)
        );
    }
}
