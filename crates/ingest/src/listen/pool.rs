//! A small free list, so that idle connections hold no buffers and busy ones do not
//! allocate them afresh on every wake-up.

use parking_lot::Mutex;

/// At most `max` spare values; values beyond that are freed.
pub(super) struct Pool<T> {
    free: Mutex<Vec<T>>,
    max: usize,
}

impl<T> Pool<T> {
    pub(super) fn new(max: usize) -> Pool<T> {
        Pool {
            free: Mutex::new(Vec::new()),
            max,
        }
    }

    pub(super) fn take(&self) -> Option<T> {
        self.free.lock().pop()
    }

    pub(super) fn give(&self, value: T) {
        let mut free = self.free.lock();
        if free.len() < self.max {
            free.push(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_max() {
        let p = Pool::new(2);
        p.give(1);
        p.give(2);
        p.give(3);
        let mut got = vec![p.take(), p.take(), p.take()];
        got.sort();
        assert_eq!(got, vec![None, Some(1), Some(2)]);
    }
}
