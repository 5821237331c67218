//! Series fetched in bulk, held compactly until they are read.
//!
//! A render of a glob over a million names holds a million answers between the fetch
//! and the output. As [`TimeSeries`] that is about 600 bytes a series before its
//! values (the struct, its name, path expression, tags and value vector, each its own
//! allocation) and 16 bytes a value. Here it is the name, one 40-byte span, and for
//! each value 8 bytes plus one bit saying whether it is known; series become
//! `TimeSeries` one at a time, when they are read.

use super::TimeSeries;
use crate::source::FetchedRef;

/// Where one path's answer sits in the shared buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: i64,
    end: i64,
    step: i64,
    /// First value in `values`; `NONE` for a path without an answer.
    at: usize,
    len: usize,
}

const NONE: usize = usize::MAX;

/// The answers to one bulk fetch, by path index.
#[derive(Debug, Default)]
pub struct FetchedSet {
    names: Vec<String>,
    cols: Columns,
}

/// Everything but the names, so that a fetch can read the names while answers are
/// written.
#[derive(Debug, Default)]
struct Columns {
    spans: Vec<Span>,
    values: Vec<f64>,
    /// Bit `i` set when `values[i]` is known (`Some`).
    known: Vec<u64>,
}

impl FetchedSet {
    /// A set for these paths, none answered yet.
    pub fn new(names: Vec<String>) -> FetchedSet {
        let unanswered = Span {
            start: 0,
            end: 0,
            step: 0,
            at: NONE,
            len: 0,
        };
        FetchedSet {
            cols: Columns {
                spans: vec![unanswered; names.len()],
                values: Vec::new(),
                known: Vec::new(),
            },
            names,
        }
    }

    /// Paths in the set (answered or not).
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of path `i`.
    pub fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }

    /// Whether path `i` has an answer.
    pub fn is_answered(&self, i: usize) -> bool {
        self.cols.spans.get(i).is_some_and(|s| s.at != NONE)
    }

    /// `(start, end, number of values)` of path `i`'s answer.
    pub fn extent(&self, i: usize) -> Option<(i64, i64, usize)> {
        self.cols
            .spans
            .get(i)
            .filter(|s| s.at != NONE)
            .map(|s| (s.start, s.end, s.len))
    }

    /// Values held, over all answers.
    pub fn points(&self) -> usize {
        self.cols.values.len()
    }

    /// Records an answer for path `i`. A second answer for the same path replaces
    /// the first only when it has fewer missing values and is not empty: of two
    /// answers for one name graphite-web (`_merge_results`) keeps the more complete.
    pub fn put(&mut self, i: usize, f: FetchedRef<'_>) {
        self.cols.put(i, f);
    }

    /// Runs `fetch` with the set's paths and a callback that records answers
    /// ([`put`](Self::put)); returns what `fetch` returns.
    pub fn fill<E>(
        &mut self,
        fetch: impl FnOnce(&[&str], &mut dyn FnMut(usize, FetchedRef<'_>)) -> Result<(), E>,
    ) -> Result<(), E> {
        let paths: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let cols = &mut self.cols;
        fetch(&paths, &mut |i, f| cols.put(i, f))
    }

    /// Path `i` as a series with `pattern` as its path expression and `xff` as its
    /// xFilesFactor (graphite-web's defaults otherwise); `None` when it has no
    /// answer. With `take`, the name is moved out (the set keeps an empty one): pass
    /// it for the last read of a path.
    pub fn series(&mut self, i: usize, pattern: &str, xff: f64, take: bool) -> Option<TimeSeries> {
        let span = self.cols.spans.get(i).copied().filter(|s| s.at != NONE)?;
        let name = match self.names.get_mut(i) {
            Some(n) if take => std::mem::take(n),
            Some(n) => n.clone(),
            None => return None,
        };
        let values = self.cols.values_of(span);
        let mut s = TimeSeries::new(name, span.start, span.end, span.step, values);
        s.path_expression = pattern.to_string();
        s.x_files_factor = xff;
        Some(s)
    }
}

/// Of two answers for one path graphite-web (`_merge_results`) keeps the more
/// complete: a second one, `new`, replaces the first (with `old_missing` values
/// missing) only when it has fewer missing values and is not empty.
pub(crate) fn replaces(old_missing: usize, new: &[Option<f64>]) -> bool {
    !new.is_empty() && new.iter().filter(|v| v.is_none()).count() < old_missing
}

impl Columns {
    fn put(&mut self, i: usize, f: FetchedRef<'_>) {
        let Some(span) = self.spans.get(i).copied() else {
            return;
        };
        if span.at != NONE && !replaces(self.missing(span), f.values) {
            return;
        }
        let at = self.values.len();
        self.values.reserve(f.values.len());
        self.known.resize((at + f.values.len()).div_ceil(64), 0);
        for (k, v) in f.values.iter().enumerate() {
            self.values.push(v.unwrap_or(0.0));
            if v.is_some() {
                let bit = at + k;
                if let Some(word) = self.known.get_mut(bit / 64) {
                    *word |= 1 << (bit % 64);
                }
            }
        }
        if let Some(s) = self.spans.get_mut(i) {
            *s = Span {
                start: f.start,
                end: f.end,
                step: f.step,
                at,
                len: f.values.len(),
            };
        }
    }

    fn is_known(&self, bit: usize) -> bool {
        self.known
            .get(bit / 64)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    fn missing(&self, span: Span) -> usize {
        (span.at..span.at + span.len)
            .filter(|&b| !self.is_known(b))
            .count()
    }

    fn values_of(&self, span: Span) -> Vec<Option<f64>> {
        let vals = self.values.get(span.at..span.at + span.len).unwrap_or(&[]);
        vals.iter()
            .enumerate()
            .map(|(k, &v)| self.is_known(span.at + k).then_some(v))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(start: i64, values: &[Option<f64>]) -> FetchedRef<'_> {
        FetchedRef {
            start,
            end: start + 10 * values.len() as i64,
            step: 10,
            values,
        }
    }

    #[test]
    fn answers_come_back_as_series() {
        let mut set = FetchedSet::new(vec!["a.b".into(), "a.c".into(), "a.d".into()]);
        let nan = f64::from_bits(0x7ff8_0000_0000_0001);
        // answered out of order, one path never
        set.put(2, answer(100, &[None, Some(-0.0), Some(nan)]));
        set.put(0, answer(200, &[Some(1.5); 70]));
        assert_eq!(set.len(), 3);
        assert!(set.is_answered(0) && !set.is_answered(1) && set.is_answered(2));
        assert_eq!(set.extent(2), Some((100, 130, 3)));
        assert_eq!(set.points(), 73);
        assert!(set.series(1, "a.*", 0.0, true).is_none());
        let d = set.series(2, "a.*", 0.25, false).unwrap();
        assert_eq!(
            (d.name.as_str(), d.start, d.end, d.step),
            ("a.d", 100, 130, 10)
        );
        assert_eq!(d.path_expression, "a.*");
        assert_eq!(d.x_files_factor, 0.25);
        assert_eq!(d.tags.get("name"), Some("a.d"));
        assert_eq!(d.values.len(), 3);
        assert_eq!(d.values[0], None);
        assert_eq!(d.values[1].map(f64::to_bits), Some((-0.0f64).to_bits()));
        assert_eq!(d.values[2].map(f64::to_bits), Some(nan.to_bits()));
        // taking the name leaves an empty one behind; reading again still works
        let d2 = set.series(2, "x", 0.0, true).unwrap();
        assert_eq!(d2.name, "a.d");
        assert_eq!(set.name(2), Some(""));
        let b = set.series(0, "a.*", 0.0, true).unwrap();
        assert_eq!(b.values, vec![Some(1.5); 70]);
    }

    #[test]
    fn a_second_answer_wins_only_when_more_complete() {
        let mut set = FetchedSet::new(vec!["a".into()]);
        set.put(0, answer(0, &[Some(1.0), None, None]));
        set.put(0, answer(0, &[Some(2.0), Some(2.0), None]));
        assert_eq!(set.series(0, "a", 0.0, false).unwrap().values[0], Some(2.0));
        // as complete, or empty: the first stays
        set.put(0, answer(0, &[Some(3.0), Some(3.0), None]));
        set.put(0, answer(0, &[]));
        assert_eq!(set.series(0, "a", 0.0, false).unwrap().values[0], Some(2.0));
        // out of range indexes are ignored
        set.put(5, answer(0, &[Some(1.0)]));
        assert!(set.series(5, "a", 0.0, false).is_none());
    }
}
