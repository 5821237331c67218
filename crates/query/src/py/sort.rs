//! Python's list sort (`list.sort`, `sorted()`), whose order, ties and NaN included,
//! decides which series `highest`, `sortBy…` and the percentile functions return:
//! stable, comparing with `<` only, and replaying CPython's own sequence of comparisons
//! where that matters (NaN keys).

/// Sorts `items` by float `keys` exactly as Python's `list.sort(key=…, reverse=…)`
/// does: stable, comparing with `<` only (so NaN keys land where CPython puts them),
/// and `reverse` keeping equal keys in their original order.
pub(crate) fn py_sort_by_keys<T>(items: Vec<T>, keys: &[f64], reverse: bool) -> Vec<T> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    let lt = |a: &usize, b: &usize| keys[*a] < keys[*b];
    if reverse {
        order.reverse();
    }
    py_sort(&mut order, &lt);
    if reverse {
        order.reverse();
    }
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// Python's `sorted()` of floats. Without NaN, `<` is a total order up to the sign
/// of zero, and any stable sort gives Python's result (`-0.0` and `0.0` keep their
/// order); with NaN, CPython's own sequence of comparisons is replayed.
pub(crate) fn py_sort_floats(values: &mut [f64]) {
    if values.iter().any(|v| v.is_nan()) {
        let lt = |a: &f64, b: &f64| a < b;
        py_sort(values, &lt);
    } else {
        values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    }
}

/// CPython's list sort driven by `lt`. Below 64 items (CPython's smallest merge run,
/// so every list a function here sorts in practice) this is CPython's exact sequence
/// of comparisons: the natural run at the start (reversed when strictly descending),
/// then binary insertion. Longer lists are merge-sorted, stable; the two agree
/// whenever `lt` is a strict weak order (always, unless keys are NaN).
pub(crate) fn py_sort<T: Clone>(items: &mut [T], lt: &dyn Fn(&T, &T) -> bool) {
    let n = items.len();
    if n < 2 {
        return;
    }
    if n >= 64 {
        merge_sort(items, lt);
        return;
    }
    // count_run
    let mut run = 2;
    if lt(&items[1], &items[0]) {
        while run < n && lt(&items[run], &items[run - 1]) {
            run += 1;
        }
        items[..run].reverse();
    } else {
        while run < n && !lt(&items[run], &items[run - 1]) {
            run += 1;
        }
    }
    // binarysort
    for start in run..n {
        let pivot = items[start].clone();
        let (mut l, mut r) = (0, start);
        while l < r {
            let p = l + ((r - l) >> 1);
            if lt(&pivot, &items[p]) {
                r = p;
            } else {
                l = p + 1;
            }
        }
        items[l..=start].rotate_right(1);
    }
}

fn merge_sort<T: Clone>(items: &mut [T], lt: &dyn Fn(&T, &T) -> bool) {
    if items.len() < 2 {
        return;
    }
    let mid = items.len() / 2;
    merge_sort(&mut items[..mid], lt);
    merge_sort(&mut items[mid..], lt);
    let left: Vec<T> = items[..mid].to_vec();
    let right: Vec<T> = items[mid..].to_vec();
    let (mut i, mut j) = (0, 0);
    for slot in items.iter_mut() {
        // take from the right only when strictly smaller: stable
        if j < right.len() && (i == left.len() || lt(&right[j], &left[i])) {
            *slot = right[j].clone();
            j += 1;
        } else {
            *slot = left[i].clone();
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_sort_is_stable_and_reversible() {
        let items = vec!["a", "b", "c", "d", "e"];
        let keys = [2.0, 1.0, 2.0, f64::NEG_INFINITY, 1.0];
        assert_eq!(
            py_sort_by_keys(items.clone(), &keys, false),
            vec!["d", "b", "e", "a", "c"]
        );
        // reverse keeps equal keys in their original order
        assert_eq!(
            py_sort_by_keys(items, &keys, true),
            vec!["a", "c", "b", "e", "d"]
        );
        // CPython: sorted([3.0, nan, 1.0, 2.0]) == [3.0, nan, 1.0, 2.0]
        let mut v = [3.0, f64::NAN, 1.0, 2.0];
        py_sort_floats(&mut v);
        assert_eq!((v[0], v[2], v[3]), (3.0, 1.0, 2.0));
        assert!(v[1].is_nan());
        // CPython: sorted([5.0, 4.0, nan, 1.0]) == [1.0, 4.0, 5.0, nan]
        let mut v = [5.0, 4.0, f64::NAN, 1.0];
        py_sort_floats(&mut v);
        assert_eq!((v[0], v[1], v[2]), (1.0, 4.0, 5.0));
        assert!(v[3].is_nan());
        // without NaN, the sign of zero keeps its order, as in CPython
        let mut z = [0.0, -0.0, -1.0, -0.0, 0.0];
        py_sort_floats(&mut z);
        let signs: Vec<bool> = z.iter().map(|v| v.is_sign_negative()).collect();
        assert_eq!(signs, [true, false, true, true, false]);
        // the merge path agrees with a plain stable sort on ordered keys
        let mut long: Vec<f64> = (0..200).map(|i| ((i * 37) % 101) as f64).collect();
        let mut want = long.clone();
        want.sort_by(f64::total_cmp);
        py_sort(&mut long, &|a: &f64, b: &f64| a < b);
        assert_eq!(long, want);
    }
}
