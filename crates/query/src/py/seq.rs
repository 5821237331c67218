//! Python's sequence indexing: `seq[i]` with negative indices from the end, and the
//! clamped bounds of `seq[start:stop]`.

/// Python's `seq[start:stop]` bounds for a sequence of `len` items.
pub(crate) fn py_slice_bounds(len: usize, start: Option<i64>, stop: Option<i64>) -> (usize, usize) {
    let len_i = len as i64;
    let clamp = |i: i64| -> usize {
        let i = if i < 0 {
            (i + len_i).max(0)
        } else {
            i.min(len_i)
        };
        i as usize
    };
    let a = start.map_or(0, clamp);
    let b = stop.map_or(len, clamp);
    (a, b.max(a))
}

/// Python's `seq[start:stop]`.
pub(crate) fn py_slice<T>(mut items: Vec<T>, start: Option<i64>, stop: Option<i64>) -> Vec<T> {
    let (a, b) = py_slice_bounds(items.len(), start, stop);
    items.truncate(b);
    items.drain(..a);
    items
}

/// Python's `seq[i]` index (negative from the end); `None` where Python raises.
pub(crate) fn py_index(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}
