//! Anomaly detection on ingest (docs/anomaly.md): the series chosen by `[[anomaly]]`
//! rules each get a streaming [`Detector`] that scores every point as it arrives.
//!
//! - [`AnomalySink`] sits on the ingest → store seam in front of the store: every
//!   protocol (carbon plaintext and pickle, HTTP ingest, GrowthForecast,
//!   self-monitoring) writes through it. Once the store has taken a batch, each
//!   watched series' points go through its detector in batch order, and the scores
//!   above 0 are appended to the store as the companion series `_anomaly.<name>`
//!   (same timestamps), which `anomalyScore(seriesList)` reads back (a scored point
//!   without a stored score scored 0: see `AnomalyFeed::scored_from`).
//! - Open events of series that stopped sending close after `close_quiet`
//!   ([`Engine::close_quiet_events`]).
//! - [`Engine`] holds the detectors (by the store's series id, series → detector + event
//!   tracker), the events (open ones and the most recent closed ones), the counters of
//!   `/metrics`, and the webhook thread's handle.
//! - State survives restarts: [`sumi_anomaly::state_file`] is the format; [`Engine::save`] saves every detector (and its open event)
//!   to `<data_dir>/anomaly/state` every `save_interval` and at shutdown; at start
//!   each is restored and catches up on the points stored after its save (a crash
//!   loses no learning). A watched series without saved state (a rule added for an
//!   existing series) learns from its stored history of the last six hours, not from
//!   nothing.
//! - Late and out-of-order points: the detector ignores a point at or before the
//!   last one it took (no score, state untouched); the store still stores it.

pub(crate) mod rules;
mod slab;
pub(crate) mod webhook;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sumi_anomaly::events::{Change, Event, Tracker};
use sumi_anomaly::state_file as state;
use sumi_anomaly::Detector;
use sumi_model::{AppendOutcome, Batch, Clock, Point, Sink, SinkError, SystemClock};
use sumi_query::functions::anomaly::SCORE_PREFIX;
use sumi_store::prefetch::{prefetch, prefetch_at};
use sumi_store::Store;
use tracing::{info, warn};

use rules::Rules;
use slab::WatchedBox;
use webhook::{Notifier, WebhookOptions};

/// Shards of the series map (a power of two): few, so that a batch's points in each
/// are many (a batch of 8,192 points, about 500 a shard) and the fetches ahead of
/// them pay over a long run, rather than starting again every hundred points as at
/// 64 shards; enough that two threads scoring at once rarely want the same one (and
/// one that is busy is taken after the others).
const SHARDS: usize = 16;
/// How many points ahead of the one being scored [`Engine::score`] fetches a series'
/// slot, the first lines of its state, and the rest of what its point reads (each
/// enough for a load from memory to arrive during the points between, on a machine
/// whose memory is busy: at 32, 16 and 6 the fetch of the rest waited for the first
/// lines; docs/anomaly.md, *Ingest cost*).
const SLOT_AHEAD: usize = 96;
const AHEAD: usize = 48;
const REST_AHEAD: usize = 16;
/// How far back a series without saved state looks for history to learn from (within
/// the finest archive of the usual retentions, which whisper's archive choice reads).
const HISTORY_SECS: i64 = 6 * 3600;

/// `[anomaly_events]` and the rules, validated.
#[derive(Debug, Clone)]
pub(crate) struct AnomalyOptions {
    pub(crate) rules: Rules,
    pub(crate) webhooks: WebhookOptions,
    pub(crate) save_interval: Duration,
    /// Closed events kept for the API, the UI and Grafana (oldest dropped first).
    pub(crate) keep_events: usize,
    /// An open event whose series has sent nothing for this long is closed.
    pub(crate) close_quiet: Duration,
}

impl Default for AnomalyOptions {
    fn default() -> AnomalyOptions {
        AnomalyOptions {
            rules: Rules::default(),
            webhooks: WebhookOptions {
                urls: Vec::new(),
                attempts: 5,
                backoff: Duration::from_millis(500),
                timeout: Duration::from_secs(10),
            },
            save_interval: Duration::from_secs(300),
            keep_events: 10_000,
            close_quiet: Duration::from_secs(1800),
        }
    }
}

/// What scoring a batch gave: the scores to store, and how many points were scored.
pub(crate) struct Scored {
    scores: Batch,
    scored: u64,
    unscored: u64,
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) points_scored: AtomicU64,
    pub(crate) scores_stored: AtomicU64,
    pub(crate) points_unscored: AtomicU64,
    pub(crate) series_watched: AtomicU64,
    pub(crate) events_opened: AtomicU64,
    pub(crate) events_closed: AtomicU64,
    pub(crate) score_writes_failed: AtomicU64,
    pub(crate) history_points: AtomicU64,
    pub(crate) state_restored: AtomicU64,
    pub(crate) state_damaged: AtomicU64,
    pub(crate) state_saves: AtomicU64,
    pub(crate) state_bytes: AtomicU64,
    pub(crate) webhooks_sent: AtomicU64,
    pub(crate) webhooks_failed: AtomicU64,
    pub(crate) webhook_retries: AtomicU64,
    pub(crate) webhooks_dropped: AtomicU64,
    pub(crate) webhooks_deduplicated: AtomicU64,
}

impl Stats {
    /// Counts a batch's scoring once its scores are written (`None`: none to write),
    /// so that whoever sees `points_scored` move can read the scores.
    fn count_scored<E: std::fmt::Display>(
        &self,
        s: &Scored,
        written: Option<Result<AppendOutcome, E>>,
    ) {
        match written {
            Some(Ok(o)) => {
                self.scores_stored.fetch_add(o.accepted, Ordering::Relaxed);
            }
            Some(Err(e)) => {
                self.score_writes_failed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("scores not stored: {e}");
            }
            None => {}
        }
        self.points_scored.fetch_add(s.scored, Ordering::Relaxed);
        self.points_unscored
            .fetch_add(s.unscored, Ordering::Relaxed);
    }

    fn write_prometheus(&self, out: &mut String) {
        use std::fmt::Write as _;
        let rows: [(&str, &str, &str, &AtomicU64); 17] = [
            ("sumi_anomaly_points_scored_total", "counter", "Points of watched series given a score.", &self.points_scored),
            ("sumi_anomaly_scores_stored_total", "counter", "Scores stored as points of _anomaly.<name> series (also counted in sumi_points_stored_total).", &self.scores_stored),
            ("sumi_anomaly_points_unscored_total", "counter", "Points of watched series without a score (warm-up, late, out of order, not finite).", &self.points_unscored),
            ("sumi_anomaly_series_watched", "gauge", "Series with a detector.", &self.series_watched),
            ("sumi_anomaly_events_opened_total", "counter", "Anomaly events opened.", &self.events_opened),
            ("sumi_anomaly_events_closed_total", "counter", "Anomaly events closed.", &self.events_closed),
            ("sumi_anomaly_score_writes_failed_total", "counter", "Batches of scores the store refused.", &self.score_writes_failed),
            ("sumi_anomaly_history_points_total", "counter", "Stored points replayed into detectors at start (catch-up and learning from history).", &self.history_points),
            ("sumi_anomaly_state_restored_total", "counter", "Detectors restored from the saved state.", &self.state_restored),
            ("sumi_anomaly_state_damaged_total", "counter", "Saved detector records skipped as damaged or not matching their rule.", &self.state_damaged),
            ("sumi_anomaly_state_saves_total", "counter", "Times the detectors' state was saved.", &self.state_saves),
            ("sumi_anomaly_state_bytes", "gauge", "Size of the last saved state.", &self.state_bytes),
            ("sumi_anomaly_webhooks_sent_total", "counter", "Webhook notifications delivered (2xx).", &self.webhooks_sent),
            ("sumi_anomaly_webhooks_failed_total", "counter", "Webhook notifications given up after their last attempt.", &self.webhooks_failed),
            ("sumi_anomaly_webhook_retries_total", "counter", "Webhook attempts that failed and were retried.", &self.webhook_retries),
            ("sumi_anomaly_webhooks_dropped_total", "counter", "Webhook notifications dropped because the queue was full.", &self.webhooks_dropped),
            ("sumi_anomaly_webhooks_deduplicated_total", "counter", "Webhook notifications not sent again for an event already notified.", &self.webhooks_deduplicated),
        ];
        for (name, kind, help, v) in rows {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        }
    }
}

/// One shard of the detectors, indexed by the store's series ids: the series whose
/// `id % SHARDS` is the shard's number, at `id / SHARDS`. The store resolves every
/// name to its id on append ([`Store::append_ids`]), so a point reaches its detector
/// without a second name lookup (no hash, no key comparison).
#[derive(Default)]
struct Shard {
    slots: Vec<Slot>,
}

/// One series' entry.
#[derive(Default)]
enum Slot {
    /// No point of it seen in this process since its id's name last changed.
    #[default]
    Unseen,
    /// No rule watches it (remembered, so rules are matched once per series).
    Unwatched,
    Watched(WatchedBox),
}

///
/// `repr(C)` and cache-line aligned: what a point reads and writes (the first two
/// fields, the detector's settings pointer and, for a two-stage detector, the hot
/// part of its first stage) sits in the first two cache lines, which
/// [`Engine::score`] fetches for many series at once before it updates them one by
/// one ([`Watched::prefetch_first`]; a test checks that they fit).
#[repr(C, align(64))]
struct Watched {
    /// Restored or created in this process and not yet caught up with the store.
    needs_history: bool,
    /// `tracker.open.is_some()`, kept here so that a point of a series without an
    /// open event that scores below the alarm reads nothing of the tracker.
    open: bool,
    det: Detector,
    /// Wall-clock second of the series' last point in this process while it has an
    /// open event (set when the event opens, and by every point while it is open;
    /// its start for a restored series): an open event of a series gone quiet is
    /// closed. Not written otherwise, so that a point touches only the first lines.
    last_arrival: i64,
    /// The series' name when the detector took it on (a delete or a rename moves the
    /// detector to [`Engine::detached`] under this name, where today's name finds it).
    name: Box<str>,
    rule: usize,
    /// The event tracker, boxed (read only around an event, so that the struct is
    /// three cache lines) and made at the series' first alarm (`None`: a tracker with
    /// nothing open, as most series' stay: no allocation for them).
    tracker: Option<Box<Tracker>>,
}

/// Open events by series, and the most recent closed ones.
#[derive(Default)]
struct Book {
    open: HashMap<String, Event>,
    closed: VecDeque<Event>,
}

impl Watched {
    /// The first lines of a watched series' state, which every point reads: this
    /// struct's first fields, the detector's settings pointer and (two-stage) first
    /// stage. See [`Watched::prefetch_rest`] for the rest.
    const FIRST_BYTES: usize = 128;

    /// Starts loading [`Watched::FIRST_BYTES`], reading nothing of it.
    fn prefetch_first(&self) {
        let p = (self as *const Watched).cast::<u8>();
        for line in (0..Self::FIRST_BYTES).step_by(64) {
            prefetch(p.wrapping_add(line));
        }
    }

    /// Starts loading the rest of what the next point reads of the detector
    /// ([`Detector::hot_bytes`]: a two-stage detector's full update once a block, a
    /// single-stage detector's counters). Reads the first lines: call it once
    /// [`Watched::prefetch_first`] had time to bring them in.
    fn prefetch_rest(&self) {
        let p = (self as *const Watched).cast::<u8>();
        let end = std::mem::offset_of!(Watched, det) + self.det.hot_bytes();
        for line in (Self::FIRST_BYTES..end).step_by(64) {
            prefetch(p.wrapping_add(line));
        }
    }
}

/// The detectors of every watched series, and what they found.
pub(crate) struct Engine {
    rules: Rules,
    shards: Box<[Mutex<Shard>]>,
    /// Watched series that sit at no id: restored ones whose name the store does not
    /// hold (yet), and those whose id's name a delete or a rename changed. A series
    /// seen for the first time looks here first, so detectors follow names as they did
    /// when they were kept by name.
    detached: Mutex<HashMap<Box<str>, WatchedBox>>,
    /// The store's [`Store::name_changes`] when the slots' names were last checked.
    name_changes: AtomicU64,
    book: Mutex<Book>,
    pub(crate) stats: Arc<Stats>,
    notifier: Option<Notifier>,
    store: Arc<Store>,
    dir: PathBuf,
    keep_events: usize,
    max_future_secs: i64,
    /// The store held no series at start: nothing to learn from history.
    fresh_store: bool,
}

impl Engine {
    /// Loads the saved state of `data_dir/anomaly` (if any) for the current rules.
    pub(crate) fn open(
        opts: &AnomalyOptions,
        store: Arc<Store>,
        data_dir: &Path,
        max_future_secs: i64,
    ) -> Result<Engine> {
        for (i, r) in opts.rules.0.iter().enumerate() {
            info!(rule = i + 1, watch = %r.text, alarm = r.config.alarm, "anomaly rule");
        }
        let dir = data_dir.join("anomaly");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let stats = Arc::new(Stats::default());
        let notifier = (!opts.webhooks.urls.is_empty())
            .then(|| Notifier::start(opts.webhooks.clone(), stats.clone()));
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        let engine = Engine {
            rules: opts.rules.clone(),
            shards,
            detached: Mutex::new(HashMap::new()),
            name_changes: AtomicU64::new(store.name_changes()),
            book: Mutex::new(Book::default()),
            stats,
            notifier,
            fresh_store: store.series_count() == 0,
            store,
            dir,
            keep_events: opts.keep_events,
            max_future_secs,
        };
        engine.load()?;
        Ok(engine)
    }

    /// The shard of series `id` and the id's place in it.
    fn shard_of(&self, id: u32) -> (&Mutex<Shard>, usize) {
        let id = id as usize;
        (&self.shards[id & (SHARDS - 1)], id / SHARDS)
    }

    /// Runs `f` on the detector of the watched series `name`, if there is one.
    fn with_watched<R>(&self, name: &str, f: impl FnOnce(&mut Watched) -> R) -> Option<R> {
        if let Some(id) = self.store.series_id(name) {
            let (shard, i) = self.shard_of(id);
            let mut sh = shard.lock().expect("shard");
            if let Some(Slot::Watched(w)) = sh.slots.get_mut(i) {
                if &*w.name == name {
                    return Some(f(w));
                }
            }
        }
        let mut detached = self.detached.lock().expect("detached");
        detached.get_mut(name).map(|w| f(w))
    }

    /// Puts a watched series at its id, or among the detached ones when the store
    /// does not hold its name.
    fn place(&self, w: WatchedBox) {
        match self.store.series_id(&w.name) {
            Some(id) => {
                let (shard, i) = self.shard_of(id);
                let mut sh = shard.lock().expect("shard");
                if sh.slots.len() <= i {
                    sh.slots.resize_with(i + 1, Slot::default);
                }
                sh.slots[i] = Slot::Watched(w);
            }
            None => {
                self.detached
                    .lock()
                    .expect("detached")
                    .insert(w.name.clone(), w);
            }
        }
    }

    /// After a delete or a rename in the store: every watched series whose id no
    /// longer has its name is detached (kept under its name), and every unwatched one
    /// is matched against the rules again at its next point.
    fn check_names(&self) {
        let changes = self.store.name_changes();
        if self.name_changes.swap(changes, Ordering::AcqRel) == changes {
            return;
        }
        for (s, shard) in self.shards.iter().enumerate() {
            let mut sh = shard.lock().expect("shard");
            for (i, slot) in sh.slots.iter_mut().enumerate() {
                let id = (i * SHARDS + s) as u32;
                let keep = match slot {
                    Slot::Unseen => true,
                    Slot::Unwatched => false,
                    Slot::Watched(w) => self.store.series_name(id).as_deref() == Some(&*w.name),
                };
                if keep {
                    continue;
                }
                if let Slot::Watched(w) = std::mem::take(slot) {
                    self.detached
                        .lock()
                        .expect("detached")
                        .insert(w.name.clone(), w);
                }
            }
        }
    }

    /// The slot of a series seen for the first time (at this id): its detached
    /// detector, a new one if a rule watches it, or unwatched.
    /// Out of line: once per series, and [`Engine::sight`] stays small.
    #[cold]
    #[inline(never)]
    fn first_sight(&self, name: &str, now: i64) -> Slot {
        {
            let mut detached = self.detached.lock().expect("detached");
            // (most starts have none: no hash of the name then)
            if !detached.is_empty() {
                if let Some(w) = detached.remove(name) {
                    return Slot::Watched(w);
                }
            }
        }
        match self.rules.rule_for(name) {
            None => Slot::Unwatched,
            Some(rule) => {
                self.stats.series_watched.fetch_add(1, Ordering::Relaxed);
                Slot::Watched(WatchedBox::new(Watched {
                    name: name.into(),
                    rule,
                    det: self.rules.0[rule].fresh.clone(),
                    tracker: None,
                    open: false,
                    needs_history: !self.fresh_store,
                    last_arrival: now,
                }))
            }
        }
    }

    fn state_path(&self) -> PathBuf {
        self.dir.join("state")
    }

    fn events_path(&self) -> PathBuf {
        self.dir.join("events.json")
    }

    /// Reads the saved detectors and events; a missing file is a first start.
    fn load(&self) -> Result<()> {
        let t0 = Instant::now();
        let path = self.state_path();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let (saved, damaged) = match state::decode(&bytes) {
                    Ok(x) => x,
                    Err(e) => {
                        warn!(file = %path.display(), "anomaly state ignored: {e}; detectors learn from stored history");
                        (Vec::new(), 1)
                    }
                };
                self.stats
                    .state_damaged
                    .fetch_add(damaged, Ordering::Relaxed);
                let mut restored = 0u64;
                for s in saved {
                    let Some(rule) = self.rules.rule_for(&s.name) else {
                        continue;
                    };
                    let cfg = self.rules.0[rule].config.clone();
                    match Detector::restore(cfg, &s.detector) {
                        Ok(det) => {
                            if let Some(e) = &s.tracker.open {
                                self.book
                                    .lock()
                                    .expect("book")
                                    .open
                                    .insert(s.name.clone(), e.clone());
                            }
                            self.place(WatchedBox::new(Watched {
                                name: s.name.into_boxed_str(),
                                rule,
                                det,
                                open: s.tracker.open.is_some(),
                                tracker: (s.tracker != Tracker::default())
                                    .then(|| Box::new(s.tracker)),
                                needs_history: true,
                                last_arrival: SystemClock.now(),
                            }));
                            restored += 1;
                        }
                        Err(e) => {
                            // settings changed (window, context) or damage: learn again
                            tracing::debug!(series = %s.name, "saved detector not restored: {e}");
                            self.stats.state_damaged.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                self.stats.state_restored.store(restored, Ordering::Relaxed);
                self.stats.series_watched.store(restored, Ordering::Relaxed);
                info!(
                    series = restored,
                    damaged,
                    secs = t0.elapsed().as_secs_f64(),
                    "anomaly detectors restored"
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
        if let Ok(text) = std::fs::read_to_string(self.events_path()) {
            let mut book = self.book.lock().expect("book");
            if let Ok(serde_json::Value::Array(list)) = serde_json::from_str(&text) {
                for v in list {
                    if let Some(e) = event_from_json(&v) {
                        book.closed.push_back(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes every detector and the recent events (temporary file, then rename),
    /// one record at a time, so a large state is never all in memory.
    pub(crate) fn save(&self) -> Result<()> {
        use std::io::Write as _;
        let t0 = Instant::now();
        let path = self.state_path();
        let tmp = path.with_extension("tmp");
        let write = || -> std::io::Result<(usize, u64)> {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
            out.write_all(state::MAGIC)?;
            let (mut series, mut bytes) = (0usize, state::MAGIC.len() as u64);
            let mut record = Vec::new();
            let mut put = |w: &Watched| -> std::io::Result<()> {
                record.clear();
                let none = Tracker::default();
                let tracker = w.tracker.as_deref().unwrap_or(&none);
                state::encode_record(&mut record, &w.name, tracker, &w.det.save());
                out.write_all(&record)?;
                bytes += record.len() as u64;
                series += 1;
                Ok(())
            };
            for shard in self.shards.iter() {
                let sh = shard.lock().expect("shard");
                for slot in &sh.slots {
                    if let Slot::Watched(w) = slot {
                        put(w)?;
                    }
                }
            }
            for w in self.detached.lock().expect("detached").values() {
                put(w)?;
            }
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            Ok((series, bytes))
        };
        let (series, bytes) = write()
            .and_then(|n| std::fs::rename(&tmp, &path).map(|()| n))
            .with_context(|| format!("writing {}", path.display()))?;
        let events: Vec<serde_json::Value> = {
            let book = self.book.lock().expect("book");
            book.closed.iter().map(event_json).collect()
        };
        write_atomically(
            &self.events_path(),
            serde_json::Value::Array(events).to_string().as_bytes(),
        )?;
        self.stats.state_saves.fetch_add(1, Ordering::Relaxed);
        self.stats.state_bytes.store(bytes, Ordering::Relaxed);
        info!(
            series,
            bytes,
            secs = t0.elapsed().as_secs_f64(),
            "anomaly state saved"
        );
        Ok(())
    }

    /// Feeds the points of a batch the store took to their detectors; returns the
    /// scores as a batch of companion series, to be written and then counted
    /// ([`Stats::count_scored`]).
    /// `ids` are the points' series ids from [`Store::append_ids`] (`u32::MAX`: a
    /// series the store refused to create, not scored). `placed_at` is the time the
    /// store placed the points at: the clock on a single node, the arrival time
    /// carried in the log on a storage node (so that replicas decide alike which
    /// points are too far in the future to score, and read the same history).
    fn score(&self, batch: &Batch, ids: &[u32], placed_at: i64) -> Scored {
        self.check_names();
        let now = SystemClock.now();
        // (sized for the whole batch at once: collecting the filtered iterator grew
        // the vector by doubling, about 5 % of detection's extra CPU on `sumi bench`)
        let mut points: Vec<(&str, Point, u32)> = Vec::with_capacity(batch.len());
        for ((name, p), &id) in batch.iter().zip(ids) {
            if id != u32::MAX
                && !name.starts_with(SCORE_PREFIX)
                && p.ts <= placed_at + self.max_future_secs
            {
                points.push((name, p, id));
            }
        }
        // The points grouped by shard, in batch order within each (a series' points
        // keep their order, and which series comes first does not change its scores):
        // each shard is locked once a batch.
        let mut starts = [0usize; SHARDS + 1];
        for &(_, _, id) in &points {
            starts[id as usize % SHARDS + 1] += 1;
        }
        for s in 0..SHARDS {
            starts[s + 1] += starts[s];
        }
        let mut order = vec![0u32; points.len()];
        let mut next = starts;
        for (k, &(_, _, id)) in points.iter().enumerate() {
            let s = id as usize % SHARDS;
            order[next[s]] = k as u32;
            next[s] += 1;
        }
        let mut out = Scored {
            scores: Batch::new(),
            scored: 0,
            unscored: 0,
        };
        let mut score_name = String::new();
        let mut changes = Vec::new();
        // A shard another thread holds is left for after the others (then waited
        // for), so that two threads scoring at once rarely wait for each other.
        let (mut next, mut busy) = (0, Vec::new());
        loop {
            let (s, wait) = if next < SHARDS {
                next += 1;
                (next - 1, false)
            } else if let Some(s) = busy.pop() {
                (s, true)
            } else {
                break;
            };
            let group = &order[starts[s]..starts[s + 1]];
            if group.is_empty() {
                continue;
            }
            let shard = &self.shards[s];
            let mut sh = if wait {
                shard.lock().expect("shard")
            } else {
                match shard.try_lock() {
                    Ok(sh) => sh,
                    Err(std::sync::TryLockError::WouldBlock) => {
                        busy.push(s);
                        continue;
                    }
                    Err(std::sync::TryLockError::Poisoned(e)) => panic!("shard: {e}"),
                }
            };
            // The slots and the state of the group's series are fetched from memory
            // ahead of their points, so that their cache misses overlap with one
            // another and with the detectors' work: each series' state is touched
            // once per 100,000 points on a wide load, so nearly every line of it
            // misses. While point j goes through its detector, the slot of the point
            // `SLOT_AHEAD` places on is fetched, the first lines of the state of the
            // one `AHEAD` places on (its slot has arrived by then; a series seen for
            // the first time gets its entry here), and the rest of what the one
            // `REST_AHEAD` places on will read (its first lines have arrived).
            // (Session 8 fetched all slots, then all states, before the first
            // point: the core then waits on the prefetches, with nothing to do.)
            let top = group
                .iter()
                .map(|&k| points[k as usize].2 as usize / SHARDS)
                .max()
                .unwrap_or(0);
            if sh.slots.len() <= top {
                sh.slots.resize_with(top + 1, Slot::default);
            }
            let at = |j: usize| points[group[j] as usize];
            for j in 0..group.len().min(SLOT_AHEAD) {
                prefetch_at(&sh.slots, at(j).2 as usize / SHARDS);
            }
            for j in 0..group.len().min(AHEAD) {
                self.sight(&mut sh, at(j).0, at(j).2, now);
            }
            for j in 0..group.len().min(REST_AHEAD) {
                if let Slot::Watched(w) = &sh.slots[at(j).2 as usize / SHARDS] {
                    w.prefetch_rest();
                }
            }
            for (j, &k) in group.iter().enumerate() {
                if j + SLOT_AHEAD < group.len() {
                    prefetch_at(&sh.slots, at(j + SLOT_AHEAD).2 as usize / SHARDS);
                }
                if j + AHEAD < group.len() {
                    let (name, _, id) = at(j + AHEAD);
                    self.sight(&mut sh, name, id, now);
                }
                if j + REST_AHEAD < group.len() {
                    if let Slot::Watched(w) = &sh.slots[at(j + REST_AHEAD).2 as usize / SHARDS] {
                        w.prefetch_rest();
                    }
                }
                let (name, p, id) = points[k as usize];
                let Slot::Watched(w) = &mut sh.slots[id as usize / SHARDS] else {
                    continue;
                };
                let w: &mut Watched = w;
                if w.open {
                    w.last_arrival = now;
                }
                if w.needs_history {
                    w.needs_history = false;
                    self.catch_up(name, w, p.ts, placed_at);
                }
                // the views are read below for a series with an open event, and
                // for an alarm (which keeps them anyway)
                let Some(score) = w.det.update_explaining(p.ts, p.value, w.open) else {
                    out.unscored += 1;
                    continue;
                };
                out.scored += 1;
                // a score of 0 ("nothing unusual", below the rule's `quiet`) is not
                // stored: anomalyScore answers 0 for a scored point without a stored score
                if score > 0.0 {
                    score_name.clear();
                    score_name.push_str(SCORE_PREFIX);
                    score_name.push_str(name);
                    out.scores.push(&score_name, p.ts, score);
                }
                // the rule's settings (shared by its detectors)
                let alarm = w.det.config().alarm;
                if !w.open && score < alarm {
                    // no event to open or extend (`Tracker::observe` would do nothing)
                    continue;
                }
                let views = w.det.views();
                let tracker = w.tracker.get_or_insert_with(Box::default);
                let change = tracker.observe(name, p.ts, score, &views, alarm);
                let open = tracker.open.is_some();
                if !w.open {
                    // an event opened with this point
                    w.last_arrival = now;
                }
                w.open = open;
                if change != Change::None {
                    changes.push(change);
                }
            }
            drop(sh);
            for change in changes.drain(..) {
                self.record(change);
            }
        }
        out
    }

    /// The entry of the series `name` at `id` ([`Engine::first_sight`] when it has
    /// none yet), and a prefetch of the first lines of its state.
    fn sight(&self, sh: &mut Shard, name: &str, id: u32, now: i64) {
        let slot = &mut sh.slots[id as usize / SHARDS];
        if let Slot::Unseen = slot {
            *slot = self.first_sight(name, now);
        }
        if let Slot::Watched(w) = slot {
            w.prefetch_first();
        }
    }

    /// Before its first point in this process: a restored detector takes the stored
    /// points it has not seen (saved before a crash, or written while it was down);
    /// a new one learns from the last six hours of stored history. Scores are not written
    /// again and events not raised again for these points.
    fn catch_up(&self, name: &str, w: &mut Watched, before: i64, now: i64) {
        if self.fresh_store && w.det.seen() == 0 {
            return;
        }
        let from = before - HISTORY_SECS;
        let Some(f) = self.store.fetch(name, from, before - 1, now) else {
            return;
        };
        let mut fed = 0u64;
        for (i, v) in f.values.iter().enumerate() {
            let Some(v) = v else { continue };
            let ts = f.start + i as i64 * f.step;
            if ts >= before {
                break;
            }
            // a restored detector ignores what it saw already (ts <= its last)
            let _ = w.det.update(ts, *v);
            fed += 1;
        }
        self.stats.history_points.fetch_add(fed, Ordering::Relaxed);
    }

    fn record(&self, change: Change) {
        let mut book = self.book.lock().expect("book");
        match change {
            Change::None => {}
            Change::Opened(e) => {
                self.stats.events_opened.fetch_add(1, Ordering::Relaxed);
                if let Some(n) = &self.notifier {
                    n.send(&e, "open");
                }
                book.open.insert(e.series.clone(), e);
            }
            Change::Extended(e) => {
                book.open.insert(e.series.clone(), e);
            }
            Change::Closed(e) => {
                self.stats.events_closed.fetch_add(1, Ordering::Relaxed);
                if let Some(n) = &self.notifier {
                    n.send(&e, "closed");
                }
                book.open.remove(&e.series);
                book.closed.push_back(e);
                while book.closed.len() > self.keep_events {
                    book.closed.pop_front();
                }
            }
        }
    }

    /// Closes the open events of series that have sent no point for `quiet` (a
    /// series that stops sending would otherwise keep its event open for ever); the
    /// webhooks hear of it as of any close. Returns how many were closed.
    pub(crate) fn close_quiet_events(&self, quiet: Duration) -> usize {
        let now = SystemClock.now();
        let open: Vec<String> = self
            .book
            .lock()
            .expect("book")
            .open
            .keys()
            .cloned()
            .collect();
        let mut closed = 0;
        for name in open {
            let e = self
                .with_watched(&name, |w| {
                    if now.saturating_sub(w.last_arrival) >= quiet.as_secs() as i64 {
                        let tracker = w.tracker.as_mut()?;
                        let e = tracker.close_now();
                        w.open = tracker.open.is_some();
                        e
                    } else {
                        None
                    }
                })
                .flatten();
            if let Some(e) = e {
                info!(series = %e.series, id = %e.id, "anomaly event closed: the series sent nothing for {quiet:?}");
                self.record(Change::Closed(e));
                closed += 1;
            }
        }
        closed
    }

    /// Open events and closed ones overlapping `[from, until]`, newest start first.
    pub(crate) fn events(&self, from: i64, until: i64) -> Vec<Event> {
        let book = self.book.lock().expect("book");
        let mut out: Vec<Event> = book
            .open
            .values()
            .chain(book.closed.iter())
            .filter(|e| e.start <= until && e.end >= from)
            .cloned()
            .collect();
        out.sort_by(|a, b| b.start.cmp(&a.start).then_with(|| a.series.cmp(&b.series)));
        out
    }
}

impl sumi_http::anomaly_api::AnomalyFeed for Engine {
    fn scored_from(&self, name: &str) -> Option<i64> {
        self.with_watched(name, |w| w.det.first_scored()).flatten()
    }

    fn events(&self, from: i64, until: i64) -> Vec<Event> {
        Engine::events(self, from, until)
    }

    fn write_prometheus(&self, out: &mut String) {
        self.stats.write_prometheus(out);
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("writing {}", path.display()))
}

fn event_json(e: &Event) -> serde_json::Value {
    serde_json::json!({
        "id": e.id, "series": e.series, "start": e.start, "end": e.end,
        "peak": e.peak, "peak_ts": e.peak_ts, "reason": e.reason,
    })
}

fn event_from_json(v: &serde_json::Value) -> Option<Event> {
    Some(Event {
        id: v["id"].as_str()?.to_string(),
        series: v["series"].as_str()?.to_string(),
        start: v["start"].as_i64()?,
        end: v["end"].as_i64()?,
        peak: v["peak"].as_f64()?,
        peak_ts: v["peak_ts"].as_i64()?,
        reason: v["reason"].as_str()?.to_string(),
        open: false,
    })
}

/// The store behind a sink that scores the points of watched series once the store
/// has taken them, and stores the scores.
pub(crate) struct AnomalySink {
    pub(crate) store: Arc<Store>,
    pub(crate) engine: Arc<Engine>,
}

impl Sink for AnomalySink {
    fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
        let mut ids = Vec::new();
        let outcome = self.store.append_ids(batch, &mut ids)?;
        let s = self.engine.score(batch, &ids, SystemClock.now());
        let written = (!s.scores.is_empty()).then(|| self.store.append(&s.scores));
        self.engine.stats.count_scored(&s, written);
        Ok(outcome)
    }
}

/// A storage node's detectors on its consumer (`[cluster]` with `[[anomaly]]`): every
/// point applied from the log is scored once the engine has it, in log order, and the
/// scores are stored as of the record's arrival time, like the points. Two replicas of
/// a partition apply the same records in the same order, so their detectors see the
/// same points and give the same scores and events.
pub(crate) struct LogScorer {
    pub(crate) store: Arc<Store>,
    pub(crate) engine: Arc<Engine>,
}

impl sumi_cluster::ApplyObserver for LogScorer {
    fn applied(&self, batch: &Batch, ids: &[u32], arrival: i64) {
        let s = self.engine.score(batch, ids, arrival);
        let written = (!s.scores.is_empty()).then(|| self.store.write_at(&s.scores, arrival));
        self.engine.stats.count_scored(&s, written);
    }
}

/// Saves the state every `interval` until `stop`, and closes the events of series
/// that went quiet for `close_quiet` (checked every tenth of it, at most every minute).
pub(crate) async fn save_periodically(
    engine: Arc<Engine>,
    interval: Duration,
    close_quiet: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let tick = (close_quiet / 10).clamp(Duration::from_millis(100), Duration::from_secs(60));
    let mut next_save = tokio::time::Instant::now() + interval;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tick.min(next_save.saturating_duration_since(tokio::time::Instant::now()))) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let e = engine.clone();
        let _ = tokio::task::spawn_blocking(move || e.close_quiet_events(close_quiet)).await;
        if tokio::time::Instant::now() < next_save {
            continue;
        }
        next_save = tokio::time::Instant::now() + interval;
        let e = engine.clone();
        match tokio::task::spawn_blocking(move || e.save()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!("saving the anomaly state: {e:#}"),
            Err(e) => warn!("saving the anomaly state: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Watched;
    use sumi_anomaly::{Config, Detector};

    /// A two-stage point between block ends reads only the lines `prefetch_first`
    /// fetches; the rest (`prefetch_rest`) is fetched once a block and for a
    /// single-stage detector.
    #[test]
    fn a_two_stage_point_reads_the_first_lines_only() {
        let mut cfg = Config::default();
        cfg.set("block", "16").expect("block");
        let two = Detector::new(cfg);
        let first = std::mem::offset_of!(Watched, det) + two.hot_bytes();
        assert!(
            first <= Watched::FIRST_BYTES,
            "{first} bytes against {}",
            Watched::FIRST_BYTES
        );
        assert_eq!(std::mem::align_of::<Watched>(), 64);
        // three lines a series in the huge pages (`slab`): the detector's second stage
        // and the event tracker are boxed elsewhere
        assert_eq!(std::mem::size_of::<Watched>(), 192);
        // a block's last point: three lines (the second stage's pointer is in the
        // third, with the first stage's cold fields)
        let mut two = two;
        for i in 0..15 {
            two.update(1_700_000_000 + 10 * i, i as f64);
        }
        let block_end = std::mem::offset_of!(Watched, det) + two.hot_bytes();
        assert!(
            block_end > Watched::FIRST_BYTES && block_end <= 192,
            "{block_end} bytes"
        );
        let mut cfg = Config::default();
        cfg.set("block", "0").expect("block");
        let single = Detector::new(cfg);
        assert!(std::mem::offset_of!(Watched, det) + single.hot_bytes() > Watched::FIRST_BYTES);
    }
}
