//! Webhooks: every event opened and every event closed is POSTed as JSON to each
//! configured URL, from one background thread, so ingest never waits on a receiver.
//!
//! - **Retried with backoff**: a connection error or a non-2xx answer is tried again
//!   after 0.5 s, 1 s, 2 s, … (doubling, at most 30 s), up to `attempts` tries per URL.
//! - **De-duplicated per event**: each notification is sent once per (event id,
//!   status) whatever happens upstream (a restored open event is not announced again);
//!   the body carries the event's `id` and the header `X-Sumi-Event-Id` too, so a
//!   receiver that sees a retry of a delivery it already took can drop it.
//! - A notification that still fails after its last attempt is counted
//!   (`sumi_anomaly_webhooks_failed_total`) and logged, and the thread goes on.
//!
//! The body:
//!
//! ```json
//! {"id": "3f1c…", "status": "open", "series": "web01.cpu", "start": 1700000000,
//!  "end": 1700000060, "peak": 0.93, "peak_ts": 1700000000, "reason": "spike",
//!  "text": "sumi: spike on web01.cpu (peak score 0.93) since 2023-11-14T22:13:20Z"}
//! ```
//!
//! `text` makes the body readable by chat webhooks (Slack, Mattermost) as it is.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use sumi_anomaly::events::Event;
use tracing::warn;

use super::Stats;

/// Notifications waiting for the thread; more are dropped and counted.
const QUEUE: usize = 10_000;
/// Delivered (id, status) pairs remembered for de-duplication.
const REMEMBER: usize = 100_000;

/// How webhooks are sent.
#[derive(Debug, Clone)]
pub(crate) struct WebhookOptions {
    pub(crate) urls: Vec<String>,
    /// Tries per URL and notification (the first one included).
    pub(crate) attempts: u32,
    /// The first retry's wait; each next one doubles, up to 30 s.
    pub(crate) backoff: Duration,
    pub(crate) timeout: Duration,
}

/// The ingest side's handle: queues a notification, never blocks.
pub(crate) struct Notifier {
    tx: SyncSender<(Event, &'static str)>,
    stats: Arc<Stats>,
}

impl Notifier {
    pub(crate) fn start(opts: WebhookOptions, stats: Arc<Stats>) -> Notifier {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let thread_stats = stats.clone();
        std::thread::Builder::new()
            .name("sumi-webhooks".into())
            .spawn(move || run(opts, rx, thread_stats))
            .expect("spawning the webhook thread");
        Notifier { tx, stats }
    }

    pub(crate) fn send(&self, event: &Event, status: &'static str) {
        match self.tx.try_send((event.clone(), status)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.stats.webhooks_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The JSON body of a notification.
pub(crate) fn body(e: &Event, status: &str) -> String {
    let since = chrono_like(e.start);
    let text = if status == "open" {
        format!(
            "sumi: {} on {} (peak score {:.2}) since {since}",
            e.reason, e.series, e.peak
        )
    } else {
        format!(
            "sumi: {} on {} ended (peak score {:.2}, {since} to {})",
            e.reason,
            e.series,
            e.peak,
            chrono_like(e.end)
        )
    };
    serde_json::json!({
        "id": e.id,
        "status": status,
        "series": e.series,
        "start": e.start,
        "end": e.end,
        "peak": e.peak,
        "peak_ts": e.peak_ts,
        "reason": e.reason,
        "text": text,
    })
    .to_string()
}

/// RFC 3339 UTC without a date library: days from the civil calendar algorithm.
fn chrono_like(ts: i64) -> String {
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn run(opts: WebhookOptions, rx: Receiver<(Event, &'static str)>, stats: Arc<Stats>) {
    let agent = ureq::AgentBuilder::new().timeout(opts.timeout).build();
    let mut seen: HashSet<(String, &'static str)> = HashSet::new();
    let mut order: VecDeque<(String, &'static str)> = VecDeque::new();
    while let Ok((event, status)) = rx.recv() {
        let key = (event.id.clone(), status);
        if seen.contains(&key) {
            stats.webhooks_deduplicated.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        seen.insert(key.clone());
        order.push_back(key);
        if order.len() > REMEMBER {
            if let Some(old) = order.pop_front() {
                seen.remove(&old);
            }
        }
        let json = body(&event, status);
        for url in &opts.urls {
            deliver(&agent, url, &event.id, &json, &opts, &stats);
        }
    }
}

fn deliver(
    agent: &ureq::Agent,
    url: &str,
    id: &str,
    json: &str,
    opts: &WebhookOptions,
    stats: &Stats,
) {
    let mut wait = opts.backoff;
    for attempt in 1..=opts.attempts.max(1) {
        let result = agent
            .post(url)
            .set("Content-Type", "application/json")
            .set("X-Sumi-Event-Id", id)
            .send_string(json);
        match result {
            Ok(_) => {
                stats.webhooks_sent.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(e) if attempt < opts.attempts => {
                stats.webhook_retries.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(url, attempt, "webhook failed, retrying: {e}");
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(30));
            }
            Err(e) => {
                stats.webhooks_failed.fetch_add(1, Ordering::Relaxed);
                warn!(
                    url,
                    event = id,
                    attempts = attempt,
                    "webhook not delivered: {e}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(chrono_like(0), "1970-01-01T00:00:00Z");
        assert_eq!(chrono_like(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(chrono_like(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn the_body_names_the_event() {
        let e = Event {
            id: "00ff".into(),
            series: "web01.cpu".into(),
            start: 1_700_000_000,
            end: 1_700_000_060,
            peak: 0.93,
            peak_ts: 1_700_000_000,
            reason: "spike".into(),
            open: true,
        };
        let v: serde_json::Value = serde_json::from_str(&body(&e, "open")).unwrap();
        assert_eq!(v["id"], "00ff");
        assert_eq!(v["status"], "open");
        assert_eq!(v["peak"], 0.93);
        assert_eq!(
            v["text"],
            "sumi: spike on web01.cpu (peak score 0.93) since 2023-11-14T22:13:20Z"
        );
    }
}
