//! The free-space guard: writes are refused while the data directory's file system
//! has less than `min_free_bytes` free, and accepted again, by themselves, once space
//! returns. Refusing at the door (before the WAL or the head see the batch) keeps the
//! reserve for flushes and compactions and keeps ENOSPC away from the WAL (which
//! survives it — a failed write is cut back and its appenders told to retry — but
//! only the guard makes the episode clean: one log line, no failing flushes). The ingest listeners hold a refused batch and stop
//! reading the connection: clients see TCP back-pressure, HTTP writers a 503.
//!
//! Writes resume once free space is back above 1.5 × `min_free_bytes` (hysteresis).
//!
//! The file system is asked (`statvfs`, about a microsecond) at most every
//! [`CHECK_EVERY`], so the cost per append is one clock read.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::metrics::Metrics;
use crate::StoreError;

/// How stale the free-space figure may be.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(50);

pub(crate) struct DiskGuard {
    dir: PathBuf,
    min_free: u64,
    base: Instant,
    /// Nanoseconds since `base` of the next check.
    next_check: AtomicU64,
    full: AtomicBool,
    /// Bytes free at the last check.
    free: AtomicU64,
}

/// Bytes available to unprivileged writers on the file system holding `dir`.
pub(crate) fn free_bytes(dir: &Path) -> Result<u64, StoreError> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        StoreError::io(
            "statvfs",
            dir,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "path contains NUL"),
        )
    })?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if r != 0 {
        return Err(StoreError::io(
            "statvfs",
            dir,
            std::io::Error::last_os_error(),
        ));
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

impl DiskGuard {
    pub(crate) fn new(dir: &Path, min_free: u64) -> DiskGuard {
        DiskGuard {
            dir: dir.to_path_buf(),
            min_free,
            base: Instant::now(),
            next_check: AtomicU64::new(0),
            full: AtomicBool::new(false),
            free: AtomicU64::new(u64::MAX),
        }
    }

    /// `Err(Backpressure)` while the disk is below the reserve. Logs once when an
    /// episode starts and once when it ends.
    pub(crate) fn check(&self, metrics: &Metrics) -> Result<(), StoreError> {
        if self.min_free == 0 {
            return Ok(());
        }
        let now = self.base.elapsed().as_nanos() as u64;
        if now >= self.next_check.load(Ordering::Relaxed) {
            self.next_check
                .store(now + CHECK_EVERY.as_nanos() as u64, Ordering::Relaxed);
            match free_bytes(&self.dir) {
                Ok(free) => self.update(free, metrics),
                // cannot tell: keep the last verdict rather than refusing on a hiccup
                Err(e) => tracing::warn!(error = %e, "cannot read the free space of the data disk"),
            }
        }
        if self.full.load(Ordering::Relaxed) {
            metrics.disk_full_refusals.fetch_add(1, Ordering::Relaxed);
            return Err(StoreError::Backpressure(format!(
                "disk full: {} bytes free in {}, below min_free_bytes {}; writes resume when space is freed",
                self.free.load(Ordering::Relaxed),
                self.dir.display(),
                self.min_free
            )));
        }
        Ok(())
    }

    fn update(&self, free: u64, metrics: &Metrics) {
        self.free.store(free, Ordering::Relaxed);
        let was = self.full.load(Ordering::Relaxed);
        // hysteresis: resume only with half the reserve again on top, so that the few
        // megabytes a flush frees by deleting WAL segments do not flap the state
        let full = if was {
            free < self.min_free.saturating_add(self.min_free / 2)
        } else {
            free < self.min_free
        };
        self.full.store(full, Ordering::Relaxed);
        metrics.disk_full.store(u64::from(full), Ordering::Relaxed);
        if full && !was {
            metrics.disk_full_episodes.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                dir = %self.dir.display(),
                free_bytes = free,
                min_free_bytes = self.min_free,
                "data disk full: refusing writes (clients are held back) until space is freed; reads go on"
            );
        } else if was && !full {
            tracing::warn!(
                dir = %self.dir.display(),
                free_bytes = free,
                "data disk has space again: accepting writes"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    #[test]
    fn episodes_start_and_end_with_the_free_space() {
        let d = TempDir::new("diskguard");
        let m = Metrics::default();
        let g = DiskGuard::new(d.path(), 1000);
        assert!(free_bytes(d.path()).unwrap() > 0);
        g.next_check.store(u64::MAX, Ordering::Relaxed); // no real statvfs below
        g.update(10, &m);
        g.update(20, &m);
        let err = g.check(&m).unwrap_err().to_string();
        assert!(err.contains("disk full: 20 bytes free"), "{err}");
        assert_eq!(m.disk_full_refusals.load(Ordering::Relaxed), 1);
        assert_eq!(
            m.disk_full_episodes.load(Ordering::Relaxed),
            1,
            "one episode"
        );
        assert_eq!(m.disk_full.load(Ordering::Relaxed), 1);
        g.update(1200, &m);
        assert_eq!(
            m.disk_full.load(Ordering::Relaxed),
            1,
            "hysteresis: 1.5x to resume"
        );
        g.update(1500, &m);
        assert_eq!(m.disk_full.load(Ordering::Relaxed), 0);
        g.update(1, &m);
        assert_eq!(m.disk_full_episodes.load(Ordering::Relaxed), 2);
        let off = DiskGuard::new(d.path(), 0);
        assert!(off.check(&m).is_ok(), "0 disables the guard");
    }
}
