//! The soak's ingest: carbon plaintext at a fixed rate over a fixed set of series, for
//! as long as the soak lasts, plus a slow trickle of series never seen before.
//!
//! Each of `connections` threads owns every `connections`-th series of the workload
//! and sends them round-robin, stamped with the current second, in writes of about a
//! tenth of a second's share of the rate, held to its share by a [`Pacer`]. Thread 0
//! also sends one point of a brand-new series (`<prefix>.soaknew.sNNNNNNN`) whenever the
//! trickle is due. Points are counted once handed to the kernel.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::BenchError;
use crate::pacer::Pacer;
use crate::rng::Rng;
use crate::send::connect_all;
use crate::workload::{host_metrics, Workload};

/// What to send.
#[derive(Clone, Debug)]
pub struct FeedPlan {
    /// Carbon plaintext `host:port`.
    pub addr: String,
    /// Parallel connections.
    pub connections: usize,
    /// Points a second over all connections.
    pub rate: u64,
    /// The fixed series (names and seed; points and timestamps are ignored).
    pub workload: Workload,
    /// New series a minute.
    pub new_per_min: u64,
}

/// The running sender threads.
pub struct Feed {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    new_series: Arc<AtomicU64>,
    threads: Vec<JoinHandle<Result<(), BenchError>>>,
}

impl Feed {
    /// Connects and starts the threads.
    pub fn start(plan: &FeedPlan) -> Result<Feed, BenchError> {
        let connections = plan.connections.max(1);
        let streams = connect_all(&plan.addr, connections)?;
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let new_series = Arc::new(AtomicU64::new(0));
        let metrics = host_metrics();
        let mut threads = Vec::with_capacity(connections);
        for (conn, stream) in streams.into_iter().enumerate() {
            let names: Vec<String> = (conn as u64..plan.workload.series)
                .step_by(connections)
                .map(|i| plan.workload.series_name(i, &metrics))
                .collect();
            let share = plan.rate / connections as u64
                + u64::from((conn as u64) < plan.rate % connections as u64);
            let worker = Worker {
                conn,
                addr: plan.addr.clone(),
                stream,
                names,
                rate: share.max(1),
                rng: Rng::new(plan.workload.seed, conn as u64),
                trickle: (conn == 0 && plan.new_per_min > 0).then(|| Trickle {
                    per_min: plan.new_per_min,
                    prefix: plan.workload.prefix.clone(),
                    made: 0,
                }),
                stop: Arc::clone(&stop),
                sent: Arc::clone(&sent),
                new_series: Arc::clone(&new_series),
            };
            let thread = std::thread::Builder::new()
                .name(format!("soak-feed-{conn}"))
                .spawn(move || worker.run())
                .map_err(|e| BenchError::io("start a soak sender thread", e))?;
            threads.push(thread);
        }
        Ok(Feed {
            stop,
            sent,
            new_series,
            threads,
        })
    }

    /// Points handed to the kernel so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// New series sent so far.
    pub fn new_series(&self) -> u64 {
        self.new_series.load(Ordering::Relaxed)
    }

    /// Whether a thread has ended before being told to (it failed: see [`Feed::stop`]).
    pub fn ended_early(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && self.threads.iter().any(|t| t.is_finished())
    }

    /// Tells the threads to finish and waits for them; the first error, if any.
    pub fn stop(self) -> Result<(), BenchError> {
        self.stop.store(true, Ordering::Relaxed);
        let mut first = None;
        for t in self.threads {
            let r = t
                .join()
                .unwrap_or_else(|_| Err(BenchError::Args("a soak sender thread panicked".into())));
            if let (Err(e), None) = (r, &first) {
                first = Some(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The new-series trickle, on thread 0.
struct Trickle {
    per_min: u64,
    prefix: String,
    made: u64,
}

impl Trickle {
    /// Names due by `elapsed` since the start and not yet made.
    fn due(&mut self, elapsed: Duration) -> Vec<String> {
        let want = (elapsed.as_secs_f64() * self.per_min as f64 / 60.0) as u64;
        let names = (self.made..want)
            .map(|i| {
                if self.prefix.is_empty() {
                    format!("soaknew.s{i:07}.value")
                } else {
                    format!("{}.soaknew.s{i:07}.value", self.prefix)
                }
            })
            .collect();
        self.made = self.made.max(want);
        names
    }
}

struct Worker {
    conn: usize,
    addr: String,
    stream: TcpStream,
    names: Vec<String>,
    rate: u64,
    rng: Rng,
    trickle: Option<Trickle>,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    new_series: Arc<AtomicU64>,
}

impl Worker {
    fn run(mut self) -> Result<(), BenchError> {
        let start = Instant::now();
        // a tenth of a second's share per write, at least one point, at most 5,000
        let batch = (self.rate / 10).clamp(1, 5_000) as usize;
        let mut pacer = Pacer::new(self.rate as f64, batch as f64, start);
        let mut buf = String::with_capacity(batch * 64);
        let mut next = 0usize;
        let mut my_sent = 0u64;
        while !self.stop.load(Ordering::Relaxed) {
            let wait = pacer.reserve(batch as u64, Instant::now());
            if !sleep_unless_stopped(wait, &self.stop) {
                break;
            }
            buf.clear();
            let ts = unix_now();
            let mut points = 0u64;
            if !self.names.is_empty() {
                for _ in 0..batch {
                    let name = &self.names[next];
                    next = (next + 1) % self.names.len();
                    let v = (self.rng.next_f64() * 10_000.0).round() / 100.0;
                    push_line(&mut buf, name, v, ts);
                    points += 1;
                }
            }
            let fresh = match &mut self.trickle {
                Some(t) => t.due(start.elapsed()),
                None => Vec::new(),
            };
            for name in &fresh {
                push_line(&mut buf, name, 1.0, ts);
                points += 1;
            }
            self.stream
                .write_all(buf.as_bytes())
                .map_err(|source| BenchError::Send {
                    conn: self.conn,
                    addr: self.addr.clone(),
                    sent_points: my_sent,
                    source,
                })?;
            my_sent += points;
            self.sent.fetch_add(points, Ordering::Relaxed);
            self.new_series
                .fetch_add(fresh.len() as u64, Ordering::Relaxed);
        }
        let _ = self.stream.flush();
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        Ok(())
    }
}

fn push_line(buf: &mut String, name: &str, v: f64, ts: i64) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = writeln!(buf, "{name} {v} {ts}");
}

/// Sleeps `d` in slices, returning false as soon as `stop` is set.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn the_trickle_makes_each_due_name_once() {
        let mut t = Trickle {
            per_min: 60,
            prefix: "bench".into(),
            made: 0,
        };
        assert!(t.due(Duration::from_millis(900)).is_empty());
        assert_eq!(
            t.due(Duration::from_millis(2500)),
            [
                "bench.soaknew.s0000000.value",
                "bench.soaknew.s0000001.value"
            ]
        );
        assert!(t.due(Duration::from_millis(2900)).is_empty());
        assert_eq!(t.due(Duration::from_secs(3)).len(), 1);
    }

    #[test]
    fn a_feed_sends_valid_lines_at_about_its_rate() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            for _ in 0..2 {
                let (mut s, _) = listener.accept().expect("accept");
                s.read_to_string(&mut text).expect("read");
            }
            text
        });
        let plan = FeedPlan {
            addr,
            connections: 2,
            rate: 2_000,
            workload: Workload {
                series: 150,
                points: 1,
                step_secs: 10,
                last_ts: 0,
                seed: 1,
                prefix: "soaktest".into(),
                tagged: 0,
            },
            new_per_min: 600,
        };
        let feed = Feed::start(&plan).expect("start");
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!feed.ended_early());
        let (sent, fresh) = (feed.sent(), feed.new_series());
        feed.stop().expect("no send error");
        let text = reader.join().expect("reader");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() as u64 >= sent, "{} < {sent}", lines.len());
        // paced: 1.5 s at 2,000/s, allowing for the first write and scheduling
        assert!((1_500..=4_500).contains(&lines.len()), "{}", lines.len());
        assert!(
            (10..=20).contains(&fresh),
            "{fresh} new series in 1.5 s at 10/s"
        );
        let now = unix_now();
        for l in &lines {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 3, "{l}");
            assert!(f[0].starts_with("soaktest."), "{l}");
            assert!(f[1].parse::<f64>().is_ok_and(f64::is_finite), "{l}");
            let ts: i64 = f[2].parse().expect("timestamp");
            assert!((now - 10..=now).contains(&ts), "{l}");
        }
        let distinct: std::collections::HashSet<&str> =
            lines.iter().filter_map(|l| l.split(' ').next()).collect();
        assert!(distinct.len() >= 150, "every fixed series is sent");
    }
}
