//! A point, and the batch that crosses the ingest → store seam.

/// One value of one series at one second. Timestamps are Unix seconds; sub-second
/// parts are cut off on the way in, as carbon's `int(timestamp)` does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub ts: i64,
    pub value: f64,
}

/// Points of many series, as a parser produces them: names packed into one buffer so
/// that filling a batch allocates nothing per point once it has grown.
///
/// Names in a batch are already normalized ([`crate::name::normalize`]).
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// A `String`, so that reading a name back checks two char boundaries instead of
    /// validating its UTF-8 again (the store reads every name two or three times).
    names: String,
    entries: Vec<Entry>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    name_start: u32,
    name_len: u32,
    point: Point,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    pub fn with_capacity(points: usize, name_bytes: usize) -> Batch {
        Batch {
            names: String::with_capacity(name_bytes),
            entries: Vec::with_capacity(points),
        }
    }

    /// Adds a point. When `name` equals the previous point's name it is not copied again.
    pub fn push(&mut self, name: &str, ts: i64, value: f64) {
        let (name_start, name_len) = match self.entries.last() {
            Some(last) if self.name_at(last) == name => (last.name_start, last.name_len),
            _ => {
                let start = self.names.len() as u32;
                self.names.push_str(name);
                (start, name.len() as u32)
            }
        };
        self.entries.push(Entry {
            name_start,
            name_len,
            point: Point { ts, value },
        });
    }

    /// Adds a point whose name the caller knows differs from the previous point's (a
    /// decoder that reads names as changes from the one before): [`push`](Self::push)
    /// without its comparison. Were the names equal after all, the name is only
    /// stored twice.
    pub fn push_distinct(&mut self, name: &str, ts: i64, value: f64) {
        let start = self.names.len() as u32;
        self.names.push_str(name);
        self.entries.push(Entry {
            name_start: start,
            name_len: name.len() as u32,
            point: Point { ts, value },
        });
    }

    /// Adds a point with the previous point's name; false (nothing added) when the
    /// batch is empty.
    pub fn push_repeat(&mut self, ts: i64, value: f64) -> bool {
        let Some(last) = self.entries.last() else {
            return false;
        };
        let (name_start, name_len) = (last.name_start, last.name_len);
        self.entries.push(Entry {
            name_start,
            name_len,
            point: Point { ts, value },
        });
        true
    }

    fn name_at(&self, e: &Entry) -> &str {
        let start = e.name_start as usize;
        // each entry spans a name pushed whole, so its ends are char boundaries
        self.names
            .get(start..start + e.name_len as usize)
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes held by names and points, to decide when a batch is big enough to hand on.
    pub fn byte_size(&self) -> usize {
        self.names.len() + self.entries.len() * std::mem::size_of::<Entry>()
    }

    pub fn clear(&mut self) {
        self.names.clear();
        self.entries.clear();
    }

    /// Keeps the first `len` points and drops the rest (nothing when `len >= len()`),
    /// so a parser that refuses a whole request can take back what it pushed.
    pub fn truncate(&mut self, len: usize) {
        self.entries.truncate(len);
        // Names are appended in push order and only the previous name is shared, so
        // the last kept point's name ends the names still in use.
        let names_end = self
            .entries
            .last()
            .map_or(0, |e| e.name_start as usize + e.name_len as usize);
        self.names.truncate(names_end);
    }

    /// The points in the order they were pushed.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, Point)> + '_ {
        self.entries.iter().map(move |e| (self.name_at(e), e.point))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_and_repeated_pushes_are_pushes() {
        let mut a = Batch::new();
        let mut b = Batch::new();
        assert!(!b.push_repeat(1, 1.0), "nothing to repeat");
        assert!(b.is_empty());
        for (name, ts) in [("x.y", 1), ("x.y", 2), ("x.z", 3), ("x.y", 4)] {
            a.push(name, ts, ts as f64);
        }
        b.push("x.y", 1, 1.0);
        assert!(b.push_repeat(2, 2.0));
        b.push_distinct("x.z", 3, 3.0);
        b.push_distinct("x.y", 4, 4.0);
        let points = |b: &Batch| -> Vec<(String, i64, f64)> {
            b.iter()
                .map(|(n, p)| (n.to_string(), p.ts, p.value))
                .collect()
        };
        assert_eq!(points(&a), points(&b));
        // the repeated name is stored once, as `push` stores it
        assert_eq!(a.byte_size(), b.byte_size());
    }

    #[test]
    fn push_and_iterate() {
        let mut b = Batch::new();
        b.push("a.b", 10, 1.0);
        b.push("a.b", 20, 2.0);
        b.push("c", 10, 3.5);
        assert_eq!(b.len(), 3);
        let got: Vec<_> = b
            .iter()
            .map(|(n, p)| (n.to_string(), p.ts, p.value))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a.b".into(), 10, 1.0),
                ("a.b".into(), 20, 2.0),
                ("c".into(), 10, 3.5)
            ]
        );
        // the repeated name was stored once
        assert_eq!(b.names.len(), 4);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn truncate_takes_back_points_and_their_names() {
        let mut b = Batch::new();
        b.push("a.b", 10, 1.0);
        b.push("a.b", 20, 2.0);
        b.push("c", 10, 3.5);
        b.truncate(5);
        assert_eq!(b.len(), 3);
        b.truncate(2);
        assert_eq!(b.len(), 2);
        assert_eq!(b.names.len(), 3);
        b.push("d", 30, 4.0);
        let got: Vec<_> = b.iter().map(|(n, p)| (n.to_string(), p.ts)).collect();
        assert_eq!(
            got,
            vec![("a.b".into(), 10), ("a.b".into(), 20), ("d".into(), 30)]
        );
        b.truncate(0);
        assert!(b.is_empty());
        assert!(b.names.is_empty());
    }
}
