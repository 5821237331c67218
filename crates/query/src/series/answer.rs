//! A request's series, in order, as renderers consume them.
//!
//! Targets that are plain path expressions (`host.*.cpu.*`) are most of the volume of
//! big renders and need no function: their series stay in the [`FetchedSet`] they were
//! fetched into and become [`TimeSeries`] one at a time as a renderer reads them, so a
//! render holds its answer once, compactly, rather than as a million `TimeSeries` plus
//! the output. Series that functions computed are held as they are.

use super::fetched::FetchedSet;
use super::TimeSeries;

/// The series of a request's targets, in order.
#[derive(Debug, Default)]
pub struct Answer {
    set: FetchedSet,
    /// Per path of `set`: how many lists below still read it (the last one takes its
    /// name instead of copying it).
    uses: Vec<u32>,
    items: Vec<Item>,
}

#[derive(Debug)]
enum Item {
    Series(Vec<TimeSeries>),
    /// Paths of `set`, sorted by name, read with this path expression and
    /// xFilesFactor.
    Fetched {
        paths: Vec<u32>,
        pattern: String,
        xff: f64,
    },
}

impl Answer {
    /// An answer whose plain-path series live in `set`.
    pub fn new(set: FetchedSet) -> Answer {
        Answer {
            uses: vec![0; set.len()],
            set,
            items: Vec::new(),
        }
    }

    /// Appends series computed by functions.
    pub fn push_series(&mut self, series: Vec<TimeSeries>) {
        if !series.is_empty() {
            self.items.push(Item::Series(series));
        }
    }

    /// Appends the answered paths of `paths` (indexes into the set, sorted by name)
    /// as series of `pattern` with xFilesFactor `xff`.
    pub fn push_fetched(&mut self, paths: &[u32], pattern: &str, xff: f64) {
        let paths: Vec<u32> = paths
            .iter()
            .copied()
            .filter(|&p| self.set.is_answered(p as usize))
            .collect();
        if paths.is_empty() {
            return;
        }
        for &p in &paths {
            if let Some(u) = self.uses.get_mut(p as usize) {
                *u += 1;
            }
        }
        self.items.push(Item::Fetched {
            paths,
            pattern: pattern.to_string(),
            xff,
        });
    }

    /// Number of series.
    pub fn len(&self) -> usize {
        self.items
            .iter()
            .map(|i| match i {
                Item::Series(s) => s.len(),
                Item::Fetched { paths, .. } => paths.len(),
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(start, end, number of values)` of every series, in order, without building
    /// them.
    pub fn extents(&self) -> impl Iterator<Item = (i64, i64, usize)> + '_ {
        self.items.iter().flat_map(move |i| {
            let (series, paths): (&[TimeSeries], &[u32]) = match i {
                Item::Series(s) => (s, &[]),
                Item::Fetched { paths, .. } => (&[], paths),
            };
            series
                .iter()
                .map(|s| (s.start, s.end, s.values.len()))
                .chain(paths.iter().filter_map(|&p| self.set.extent(p as usize)))
        })
    }

    /// Every series, built one at a time as the iterator is read.
    pub fn into_series(self) -> AnswerSeries {
        AnswerSeries {
            set: self.set,
            uses: self.uses,
            items: self.items.into_iter(),
            current: Current::None,
        }
    }

    /// Every series, all built.
    pub fn into_vec(self) -> Vec<TimeSeries> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.into_series());
        out
    }
}

impl From<Vec<TimeSeries>> for Answer {
    fn from(series: Vec<TimeSeries>) -> Answer {
        let mut a = Answer::default();
        a.push_series(series);
        a
    }
}

/// The series of an [`Answer`], in order (see [`Answer::into_series`]).
#[derive(Debug)]
pub struct AnswerSeries {
    set: FetchedSet,
    uses: Vec<u32>,
    items: std::vec::IntoIter<Item>,
    current: Current,
}

#[derive(Debug)]
enum Current {
    None,
    Series(std::vec::IntoIter<TimeSeries>),
    Fetched {
        paths: std::vec::IntoIter<u32>,
        pattern: String,
        xff: f64,
    },
}

impl Iterator for AnswerSeries {
    type Item = TimeSeries;

    fn next(&mut self) -> Option<TimeSeries> {
        loop {
            match &mut self.current {
                Current::Series(it) => {
                    if let Some(s) = it.next() {
                        return Some(s);
                    }
                }
                Current::Fetched {
                    paths,
                    pattern,
                    xff,
                } => {
                    for p in paths.by_ref() {
                        let i = p as usize;
                        let last = self.uses.get_mut(i).is_none_or(|u| {
                            *u = u.saturating_sub(1);
                            *u == 0
                        });
                        if let Some(s) = self.set.series(i, pattern, *xff, last) {
                            return Some(s);
                        }
                    }
                }
                Current::None => {}
            }
            self.current = match self.items.next()? {
                Item::Series(s) => Current::Series(s.into_iter()),
                Item::Fetched {
                    paths,
                    pattern,
                    xff,
                } => Current::Fetched {
                    paths: paths.into_iter(),
                    pattern,
                    xff,
                },
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FetchedRef;

    #[test]
    fn series_in_order_names_shared() {
        let mut set = FetchedSet::new(vec!["a.x".into(), "a.y".into(), "b.z".into()]);
        for (i, v) in [(0usize, 1.0), (1, 2.0)] {
            let values = [Some(v), None];
            set.put(
                i,
                FetchedRef {
                    start: 10,
                    end: 30,
                    step: 10,
                    values: &values,
                },
            );
        }
        let mut a = Answer::new(set);
        a.push_fetched(&[0, 1, 2], "a.*", 0.5);
        a.push_series(vec![TimeSeries::new("f(a)", 0, 50, 10, vec![None; 5])]);
        a.push_series(Vec::new());
        a.push_fetched(&[2], "b.*", 0.0); // unanswered: no series
        a.push_fetched(&[0], "a.x", 0.0); // a second read of a.x
        assert_eq!(a.len(), 4);
        let ext: Vec<_> = a.extents().collect();
        assert_eq!(ext, vec![(10, 30, 2), (10, 30, 2), (0, 50, 5), (10, 30, 2)]);
        let got = a.into_vec();
        let names: Vec<(&str, &str)> = got
            .iter()
            .map(|s| (s.name.as_str(), s.path_expression.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("a.x", "a.*"),
                ("a.y", "a.*"),
                ("f(a)", "f(a)"),
                ("a.x", "a.x")
            ]
        );
        assert_eq!(got[0].values, vec![Some(1.0), None]);
        assert_eq!(got[0].x_files_factor, 0.5);
        assert_eq!(got[3].values, got[0].values);
        assert!(Answer::from(Vec::new()).is_empty());
    }
}
