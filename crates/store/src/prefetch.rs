//! A hint to the CPU to start loading a cache line that a later step reads: the write
//! path looks up a batch's names in passes, and each pass fetches the lines of every
//! name in the batch before the next pass reads them, so that the cache misses of many
//! names overlap instead of following one another (at millions of series nearly every
//! name's table slot, bytes and settings miss the cache). The server's anomaly engine
//! does the same for the detectors' state of a batch's series.

/// Starts loading the cache line holding `*p` into the cache. Never faults, whatever
/// `p` points at; does nothing on targets without a prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and never faults,
    // whatever the address. Measured: see `SeriesIndex::prefetch_slot` and the write
    // path's passes in append.rs.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`prefetch`] of `s[i]`, nothing when `i` is out of range.
#[inline(always)]
pub fn prefetch_at<T>(s: &[T], i: usize) {
    if i < s.len() {
        prefetch(s.as_ptr().wrapping_add(i));
    }
}
