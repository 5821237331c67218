//! Memory for the watched series' state ([`Watched`]): [`WatchedBox`], a `Box` whose
//! memory comes from 2 MiB blocks that the kernel is asked to back with huge pages
//! (`madvise(MADV_HUGEPAGE)`; honoured where transparent huge pages are `always` or
//! `madvise`, a no-op where they are `never`).
//!
//! Why: on a wide load each point reads the first two cache lines of its series'
//! state, one series after another, thousands of series apart, so with 4 KiB pages
//! nearly every point also misses the TLB (on a virtual machine a two-level page walk),
//! which the engine's prefetches wait for. In 2 MiB pages the 192 bytes of each of
//! 100,000 series (19 MB: the detector's first stage inline, its second stage and the
//! event tracker boxed elsewhere) take 10 TLB entries instead of 4,700. Measured
//! (docs/anomaly.md, *Ingest cost*): `perf` samples of `Engine::score` and
//! `Engine::sight` fell by about two thirds. A huge page costs its first touch (here,
//! on a virtual machine, about 5 ms to fault in 2 MiB, where 4 KiB pages the guest
//! had used before come cheaply), which is why the struct is kept small: at 768
//! bytes a series the faults ate the gain.
//!
//! One pool for the process, like an allocator: a freed slot is reused by the next
//! series, and the blocks are never given back (they hold at most the largest number
//! of series watched at once, plus one block).

use std::alloc::{alloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Mutex;

use super::Watched;

/// Bytes of one block: one huge page on x86-64 and aarch64 (4 KiB base pages).
const BLOCK_BYTES: usize = 2 << 20;

/// Slots of the blocks: addresses (`usize`, so the pool is `Send`) of free slots,
/// and the unused rest of the newest block.
struct Pool {
    free: Vec<usize>,
    next: usize,
    end: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    free: Vec::new(),
    next: 0,
    end: 0,
});

const SLOT: Layout = Layout::new::<Watched>();
const _: () = assert!(SLOT.size() <= BLOCK_BYTES && SLOT.align() <= BLOCK_BYTES);
// `WatchedBox` is `Send` and `Sync` because `Watched` is (see the impls below).
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Watched>();
};

/// Memory for one [`Watched`], uninitialised.
fn take_slot() -> NonNull<Watched> {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let at = match pool.free.pop() {
        Some(at) => at,
        None => {
            if pool.end - pool.next < SLOT.size() {
                let block =
                    Layout::from_size_align(BLOCK_BYTES, BLOCK_BYTES).expect("block layout");
                // SAFETY: the layout's size is not zero.
                let p = unsafe { alloc(block) };
                if p.is_null() {
                    handle_alloc_error(block);
                }
                advise_huge(p, BLOCK_BYTES);
                pool.next = p as usize;
                pool.end = pool.next + BLOCK_BYTES;
            }
            let at = pool.next;
            pool.next += SLOT.size();
            at
        }
    };
    // blocks are aligned to BLOCK_BYTES and slots are a multiple of their alignment
    // apart, so every slot is aligned for a `Watched`
    NonNull::new(at as *mut Watched).expect("slot address")
}

/// Asks the kernel to back `len` bytes at `p` with huge pages (a hint: failure, as
/// on a kernel without transparent huge pages, leaves ordinary pages).
fn advise_huge(p: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: `p..p + len` is memory this module just allocated and owns; the advice
    // changes how the kernel backs it, not its contents.
    unsafe {
        libc::madvise(p.cast(), len, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, len);
}

/// An owned [`Watched`] in the pool's memory; like `Box<Watched>` otherwise.
pub(super) struct WatchedBox {
    ptr: NonNull<Watched>,
}

// SAFETY: a `WatchedBox` owns its `Watched` as a `Box` does (no other pointer to the
// slot exists while it lives), and `Watched` is `Send` and `Sync`.
unsafe impl Send for WatchedBox {}
// SAFETY: as above: `&WatchedBox` only hands out `&Watched`.
unsafe impl Sync for WatchedBox {}

impl WatchedBox {
    pub(super) fn new(w: Watched) -> WatchedBox {
        let ptr = take_slot();
        // SAFETY: the slot is valid for a write of a `Watched`, aligned, and unused.
        unsafe { ptr.as_ptr().write(w) };
        WatchedBox { ptr }
    }
}

impl Deref for WatchedBox {
    type Target = Watched;
    fn deref(&self) -> &Watched {
        // SAFETY: the slot holds a live `Watched` owned by `self`.
        unsafe { self.ptr.as_ref() }
    }
}

impl DerefMut for WatchedBox {
    fn deref_mut(&mut self) -> &mut Watched {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { self.ptr.as_mut() }
    }
}

impl Drop for WatchedBox {
    fn drop(&mut self) {
        // SAFETY: the slot holds a live `Watched` owned by `self`, dropped once here;
        // the slot is handed back only afterwards.
        unsafe { std::ptr::drop_in_place(self.ptr.as_ptr()) };
        POOL.lock()
            .unwrap_or_else(|e| e.into_inner())
            .free
            .push(self.ptr.as_ptr() as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::{WatchedBox, BLOCK_BYTES};
    use crate::anomaly::Watched;
    use std::sync::Arc;
    use sumi_anomaly::{Config, Detector};

    fn watched(name: &str, cfg: &Arc<Config>) -> Watched {
        Watched {
            needs_history: false,
            open: false,
            det: Detector::new(cfg.clone()),
            last_arrival: 0,
            name: name.into(),
            rule: 0,
            tracker: None,
        }
    }

    /// Boxes are aligned, distinct and keep their values; a dropped one drops its
    /// `Watched` (the settings' count falls) and its slot is used again.
    #[test]
    fn boxes_hold_their_series_and_give_their_slots_back() {
        let cfg = Arc::new(Config::default());
        let n = 3 * BLOCK_BYTES / std::mem::size_of::<Watched>();
        let mut boxes: Vec<WatchedBox> = (0..n)
            .map(|i| WatchedBox::new(watched(&format!("s{i}"), &cfg)))
            .collect();
        assert_eq!(Arc::strong_count(&cfg), n + 1);
        let mut at: Vec<usize> = boxes
            .iter()
            .map(|b| &**b as *const Watched as usize)
            .collect();
        assert!(at.iter().all(|a| a % 64 == 0));
        at.sort_unstable();
        at.dedup();
        assert_eq!(at.len(), n, "every box its own slot");
        for (i, b) in boxes.iter_mut().enumerate() {
            b.last_arrival = i as i64;
        }
        for (i, b) in boxes.iter().enumerate() {
            assert_eq!(&*b.name, format!("s{i}"));
            assert_eq!(b.last_arrival, i as i64);
        }
        boxes.truncate(n / 2);
        assert_eq!(Arc::strong_count(&cfg), n / 2 + 1);
        // the freed slots are taken before any new block (other tests may take some
        // of them meanwhile: only addresses among the ones seen are checked)
        let again: Vec<WatchedBox> = (0..10)
            .map(|_| WatchedBox::new(watched("x", &cfg)))
            .collect();
        let reused = again
            .iter()
            .filter(|b| {
                at.binary_search(&(&***b as *const Watched as usize))
                    .is_ok()
            })
            .count();
        assert!(reused > 0, "no freed slot used again");
        drop(again);
        drop(boxes);
        assert_eq!(Arc::strong_count(&cfg), 1);
    }
}
