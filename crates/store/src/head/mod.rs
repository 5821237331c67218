//! The in-memory head: the active shard buffers, the frozen generations waiting to
//! become parts, their row counts, and the append state that orders writes into them.
//!
//! - [`buf`]: one shard's rows (`HeadBuf`) and a frozen generation (`FrozenGen`).
//!
//! The append lock is the head's: an appender enqueues its WAL record under it, so WAL
//! order is the order of appends, and it guards the master copy of the roll state, which
//! appends mark dirty. The rows reach the shards later, once the record is written, in
//! WAL order (during the record's [`Turn`]). See [`crate::store::Inner`] for the lock
//! order.

mod buf;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

pub(crate) use buf::{key_level, key_slot, FrozenGen, HeadBuf, Row};

use crate::metrics::Gauges;
use crate::version::RollState;
use crate::wal::record::WalPoint;
use crate::wal::Turn;

/// Points whose rows [`Head::push`] loads ahead before pushing them.
const PUSH_CHUNK: usize = 128;

/// State changed only under the append lock.
pub(crate) struct AppendState {
    /// The master copy of the roll state (horizons, dirty partitions); readers get
    /// clones through `PartSet::roll`.
    pub(crate) roll: RollState,
    next_gen: u64,
    pub(crate) last_freeze: Instant,
}

pub(crate) struct Head {
    append: Mutex<AppendState>,
    shards: Vec<RwLock<HeadBuf>>,
    frozen: RwLock<Vec<Arc<FrozenGen>>>,
    /// Rows in the active head (all shards), to decide when to flush.
    rows: AtomicUsize,
    /// Rows in frozen generations not yet flushed.
    frozen_rows: AtomicUsize,
}

impl Head {
    /// A head holding `shards` (replayed from the WAL) and no frozen generation.
    pub(crate) fn new(shards: Vec<HeadBuf>, roll: RollState) -> Head {
        let rows = shards.iter().map(HeadBuf::len).sum();
        Head {
            append: Mutex::new(AppendState {
                roll,
                next_gen: 1,
                last_freeze: Instant::now(),
            }),
            shards: shards.into_iter().map(RwLock::new).collect(),
            frozen: RwLock::new(Vec::new()),
            rows: AtomicUsize::new(rows),
            frozen_rows: AtomicUsize::new(0),
        }
    }

    /// Takes the append lock.
    #[inline]
    pub(crate) fn lock_append(&self) -> MutexGuard<'_, AppendState> {
        self.append.lock()
    }

    #[inline]
    pub(crate) fn shard_of(&self, id: u32) -> &RwLock<HeadBuf> {
        let n = self.shards.len().max(1);
        &self.shards[id as usize % n]
    }

    /// Applies accepted points whose WAL record is written (the caller holds the
    /// record's turn, so rows arrive in WAL order); `classes[i]` is the class of
    /// `points[i]`.
    #[inline]
    pub(crate) fn push(&self, _turn: &Turn<'_>, points: &[WalPoint], classes: &[u16]) {
        let n = self.shards.len().max(1);
        for (s, shard) in self.shards.iter().enumerate() {
            let mut h = None;
            // in chunks: first every series' link to its newest row is loaded (at
            // millions of series each is a cache miss, and they overlap), then the
            // rows are pushed
            for (chunk, cls) in points.chunks(PUSH_CHUNK).zip(classes.chunks(PUSH_CHUNK)) {
                let mine = |p: &WalPoint| n == 1 || p.series as usize % n == s;
                if !chunk.iter().any(mine) {
                    continue;
                }
                let h = h.get_or_insert_with(|| shard.write());
                for p in chunk.iter().filter(|p| mine(p)) {
                    h.prefetch(p.series);
                }
                for (p, &c) in chunk.iter().zip(cls) {
                    if mine(p) {
                        h.push(p.series, c, p.level, p.slot, p.value);
                    }
                }
            }
        }
        self.rows.fetch_add(points.len(), Ordering::Relaxed);
    }

    /// Rows in the active head.
    #[inline]
    pub(crate) fn rows(&self) -> usize {
        self.rows.load(Ordering::Relaxed)
    }

    /// Bytes of rows in the active head.
    #[inline]
    pub(crate) fn active_bytes(&self) -> usize {
        self.rows() * std::mem::size_of::<Row>()
    }

    /// Bytes of rows in the active head and the frozen generations together.
    #[inline]
    pub(crate) fn held_bytes(&self) -> usize {
        (self.rows() + self.frozen_rows.load(Ordering::Relaxed)) * std::mem::size_of::<Row>()
    }

    /// True when no shard holds a row (the caller holds the append lock).
    pub(crate) fn is_empty(&self, _ap: &AppendState) -> bool {
        self.rows() == 0 && self.shards.iter().all(|s| s.read().is_empty())
    }

    /// Swaps every shard's buffer for an empty one and appends the full ones as a
    /// frozen generation that WAL replay covers from segment `replay_from` (the caller
    /// holds the append lock and has rotated the WAL to that segment).
    pub(crate) fn freeze(&self, ap: &mut AppendState, replay_from: u64) {
        let n = self.shards.len() as u32;
        let mut guards: Vec<_> = self.shards.iter().map(|s| s.write()).collect();
        let bufs: Vec<HeadBuf> = guards
            .iter_mut()
            .map(|g| {
                let cap = g.series_capacity();
                std::mem::replace(&mut **g, HeadBuf::new(n, cap))
            })
            .collect();
        let gen = Arc::new(FrozenGen {
            bufs,
            replay_from,
            id: ap.next_gen,
        });
        ap.next_gen += 1;
        self.frozen_rows.fetch_add(gen.rows(), Ordering::Relaxed);
        self.frozen.write().push(gen);
        self.rows.store(0, Ordering::Relaxed);
        drop(guards);
    }

    /// The frozen generations, oldest first.
    pub(crate) fn frozen(&self) -> Vec<Arc<FrozenGen>> {
        self.frozen.read().clone()
    }

    /// The frozen generations under their read lock, for a reader that compares them
    /// with what it holds before cloning.
    pub(crate) fn frozen_guard(&self) -> RwLockReadGuard<'_, Vec<Arc<FrozenGen>>> {
        self.frozen.read()
    }

    /// The oldest frozen generation.
    pub(crate) fn oldest_frozen(&self) -> Option<Arc<FrozenGen>> {
        self.frozen.read().first().cloned()
    }

    /// Drops a generation now in parts.
    pub(crate) fn remove_frozen(&self, gen: &FrozenGen) {
        self.frozen.write().retain(|g| g.id != gen.id);
        self.frozen_rows.fetch_sub(gen.rows(), Ordering::Relaxed);
    }

    /// The smallest slot of `(class, level)` held by the active shards or by `frozen`
    /// (a snapshot the caller took).
    pub(crate) fn min_slot(
        &self,
        frozen: &[Arc<FrozenGen>],
        class: u16,
        level: usize,
    ) -> Option<i64> {
        self.shards
            .iter()
            .filter_map(|s| s.read().min_slot(class, level))
            .chain(frozen.iter().filter_map(|f| f.min_slot(class, level)))
            .min()
    }

    /// Adds the head's rows, bytes and generations to `g`.
    pub(crate) fn gauges(&self, g: &mut Gauges) {
        for s in &self.shards {
            let s = s.read();
            g.head_rows += s.len() as u64;
            g.head_bytes += s.bytes() as u64;
        }
        let frozen = self.frozen();
        g.frozen_generations = frozen.len() as u64;
        for f in &frozen {
            g.head_rows += f.rows() as u64;
            g.head_bytes += f.bytes() as u64;
        }
    }
}
