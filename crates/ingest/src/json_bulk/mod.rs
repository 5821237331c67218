//! The JSON bulk API body, `POST /api/v0/tsdb` as Mackerel defines it: a JSON array
//! of `{"name": "...", "time": <epoch seconds>, "value": <number>}`, each with an
//! optional `"hostId"` (which becomes the first path node, `<hostId>.<name>`) and
//! optional `"tags": {"k": "v"}` (which become Graphite tags, `name;k=v`, validated
//! and ordered as carbon does: [`sumi_model::tagged`]).
//!
//! A pure parser ([`parse_json_bulk`]): the body (gzip or deflate allowed, with a cap
//! on the decompressed size) in, points appended to a [`Batch`] out. All or nothing:
//! any invalid element refuses the whole body with an error that names the element
//! and what is wrong with it, and nothing is appended; the HTTP layer answers 400 (or
//! [`BulkError::status`]) with that message, and 2xx only once the batch is in the
//! WAL.
//!
//! Rules, per element:
//! - `name`: a non-empty string; may itself carry `;tag=value` segments;
//! - `hostId`: optional string (null = absent); non-empty, no `;`;
//! - `time`: a number; fractions are cut (carbon's `int(float(t))`), `-1` is now;
//! - `value`: a number (`1e999` is infinity, stored as carbon would); JSON has no NaN;
//! - `tags`: optional object of string values (null = absent); the tag `name` is
//!   refused (carbon reserves it for the metric);
//! - other fields are ignored; a known field given twice is refused;
//! - the full name then goes through [`sumi_model::name::normalize`] like every name.

mod decode;
mod scan;

use std::borrow::Cow;

use sumi_model::name::{normalize, NameError};
use sumi_model::Batch;

use crate::plaintext::truncate_seconds;
use crate::stats::LocalCounts;
use scan::{Scanner, SyntaxError};
use sumi_model::tagged::{canonicalize, TagError};

pub use decode::{decode_body, Encoding};

/// Bounds on one request, each with the reason for its default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkLimits {
    /// Bytes of the body as sent. Default 16 MiB: an agent posting every minute sends
    /// a few KiB; a backfill of 100,000 points is about 8 MiB of plain JSON.
    pub max_body_bytes: usize,
    /// Bytes after decompression (a gzip bomb stops here). Default 64 MiB.
    pub max_decoded_bytes: usize,
    /// Elements in one body. Default 1,000,000.
    pub max_elements: usize,
}

impl Default for BulkLimits {
    fn default() -> Self {
        BulkLimits {
            max_body_bytes: 16 << 20,
            max_decoded_bytes: 64 << 20,
            max_elements: 1_000_000,
        }
    }
}

/// What an accepted body gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkOutcome {
    /// Points appended to the batch (every element).
    pub points: usize,
    /// Of those, names that lost empty nodes (`a..b` stored as `a.b`).
    pub renamed: usize,
}

impl BulkOutcome {
    /// Adds the outcome to a connection's counters (received, renamed).
    pub fn count_into(&self, counts: &mut LocalCounts) {
        counts.received += self.points as u64;
        counts.renamed += self.renamed as u64;
    }
}

/// What is wrong with one element.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ElementProblem {
    /// The element is not an object.
    #[error("is {0}, expected an object")]
    NotAnObject(&'static str),
    /// A required field is absent.
    #[error("has no {0:?}")]
    Missing(&'static str),
    /// A field of the wrong JSON type.
    #[error("{field:?} is {got}, expected {expected}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        got: &'static str,
    },
    /// A known field given twice.
    #[error("has {0:?} twice")]
    Duplicate(&'static str),
    /// `hostId` is empty or holds `;`.
    #[error("\"hostId\" {0:?} is not a path node (empty or holding ';')")]
    HostId(String),
    /// A tag called `name`.
    #[error("tag \"name\" is reserved for the metric name")]
    ReservedTag,
    /// A tag or the name's `;tag=value` segments break carbon's rules.
    #[error("tags: {0}")]
    Tags(#[from] TagError),
    /// The name was refused by [`sumi_model::name::normalize`].
    #[error("name: {0}")]
    Name(#[from] NameError),
    /// `time` is beyond 64-bit seconds.
    #[error("\"time\" {0:?} does not fit in 64-bit seconds")]
    TimeOutOfRange(f64),
}

/// Why a body was refused. Nothing of it was appended.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BulkError {
    /// The body is over [`BulkLimits::max_body_bytes`].
    #[error("body of {len} bytes is over the limit of {limit}")]
    BodyTooLarge { len: usize, limit: usize },
    /// A `Content-Encoding` other than gzip, deflate or identity.
    #[error("unsupported Content-Encoding {0:?} (gzip, deflate and identity are)")]
    UnsupportedEncoding(String),
    /// The body does not decompress.
    #[error("body is not valid {encoding}: {detail}")]
    Decompress {
        encoding: &'static str,
        detail: String,
    },
    /// The decompressed body is over [`BulkLimits::max_decoded_bytes`].
    #[error("decompressed body is over the limit of {limit} bytes")]
    DecodedTooLarge { limit: usize },
    /// Not JSON, or not the expected shape, at a place in the body.
    #[error("{}invalid JSON at line {line} column {column}: {what}", element_prefix(*index))]
    Syntax {
        /// The element being read, when inside the array.
        index: Option<usize>,
        offset: usize,
        line: usize,
        column: usize,
        what: &'static str,
    },
    /// More elements than [`BulkLimits::max_elements`].
    #[error("more than {limit} elements")]
    TooManyElements { limit: usize },
    /// One element is invalid.
    #[error("element {index} {problem}")]
    Element {
        index: usize,
        problem: ElementProblem,
    },
}

fn element_prefix(index: Option<usize>) -> String {
    index.map_or_else(String::new, |i| format!("element {i}: "))
}

impl BulkError {
    /// The HTTP status to answer with: 413 for size limits, 415 for an unknown
    /// encoding, 400 otherwise.
    pub fn status(&self) -> u16 {
        match self {
            BulkError::BodyTooLarge { .. }
            | BulkError::DecodedTooLarge { .. }
            | BulkError::TooManyElements { .. } => 413,
            BulkError::UnsupportedEncoding(_) => 415,
            _ => 400,
        }
    }
}

/// Parses a bulk body (`content_encoding` as the request's header says) and appends
/// every point to `batch`, or refuses it whole and leaves `batch` as it was. `now`
/// replaces a time of `-1`.
pub fn parse_json_bulk(
    body: &[u8],
    content_encoding: Option<&str>,
    now: i64,
    batch: &mut Batch,
    limits: &BulkLimits,
) -> Result<BulkOutcome, BulkError> {
    let json = decode_body(body, content_encoding, limits)?;
    let mark = batch.len();
    let result = Parser {
        s: Scanner::new(&json),
        now,
        limits,
        scratch: Scratch::default(),
    }
    .parse(batch);
    if result.is_err() {
        batch.truncate(mark);
    }
    result
}

/// Buffers reused from one element to the next.
#[derive(Default)]
struct Scratch {
    full: String,
    canon: String,
}

struct Parser<'a, 'l> {
    s: Scanner<'a>,
    now: i64,
    limits: &'l BulkLimits,
    scratch: Scratch,
}

/// One element's fields, as read.
#[derive(Default)]
struct Fields<'a> {
    name: Option<Cow<'a, str>>,
    host: Option<Cow<'a, str>>,
    time: Option<f64>,
    value: Option<f64>,
    tags: Option<Tags<'a>>,
}

/// `tags` as read: (tag, value), borrowed from the body unless escaped.
type Tags<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

/// An element's failure: its own problem, or a syntax error inside it.
enum Fail {
    Problem(ElementProblem),
    Syntax(SyntaxError),
}

impl From<SyntaxError> for Fail {
    fn from(e: SyntaxError) -> Fail {
        Fail::Syntax(e)
    }
}

impl From<ElementProblem> for Fail {
    fn from(e: ElementProblem) -> Fail {
        Fail::Problem(e)
    }
}

impl<'a> Parser<'a, '_> {
    fn syntax(&self, e: SyntaxError, index: Option<usize>) -> BulkError {
        let (line, column) = self.s.line_col(e.offset);
        BulkError::Syntax {
            index,
            offset: e.offset,
            line,
            column,
            what: e.what,
        }
    }

    fn parse(mut self, batch: &mut Batch) -> Result<BulkOutcome, BulkError> {
        let mut out = BulkOutcome::default();
        if self.s.peek() != Some(b'[') {
            let e = SyntaxError {
                offset: self.s.pos,
                what: "the body must be a JSON array of {\"name\", \"time\", \"value\"}",
            };
            return Err(self.syntax(e, None));
        }
        self.s.pos += 1;
        let mut index = 0;
        if !self.s.eat(b']') {
            loop {
                if index >= self.limits.max_elements {
                    return Err(BulkError::TooManyElements {
                        limit: self.limits.max_elements,
                    });
                }
                match self.element(batch) {
                    Ok(renamed) => {
                        out.points += 1;
                        out.renamed += usize::from(renamed);
                    }
                    Err(Fail::Problem(problem)) => {
                        return Err(BulkError::Element { index, problem })
                    }
                    Err(Fail::Syntax(e)) => return Err(self.syntax(e, Some(index))),
                }
                index += 1;
                if self.s.eat(b',') {
                    continue;
                }
                if let Err(e) = self.s.expect(b']', "expected ',' or ']' after an element") {
                    return Err(self.syntax(e, None));
                }
                break;
            }
        }
        if self.s.peek().is_some() {
            let e = SyntaxError {
                offset: self.s.pos,
                what: "text after the array",
            };
            return Err(self.syntax(e, None));
        }
        Ok(out)
    }

    /// Reads one element and pushes its point; `Ok(true)` when its name was renamed.
    fn element(&mut self, batch: &mut Batch) -> Result<bool, Fail> {
        if self.s.peek() != Some(b'{') {
            return Err(ElementProblem::NotAnObject(self.s.kind()).into());
        }
        self.s.pos += 1;
        let mut f = Fields::default();
        if !self.s.eat(b'}') {
            loop {
                let key = self.s.string()?;
                self.s.expect(b':', "expected ':' after a field name")?;
                self.field(&key, &mut f)?;
                if self.s.eat(b',') {
                    continue;
                }
                self.s.expect(b'}', "expected ',' or '}' in an element")?;
                break;
            }
        }
        self.point(f, batch)
    }

    /// Reads the value of field `key` into `f`.
    fn field(&mut self, key: &str, f: &mut Fields<'a>) -> Result<(), Fail> {
        match key {
            "name" => set(&mut f.name, "name", self.string_field("name")?),
            "hostId" => {
                if self.s.eat_null() {
                    return Ok(());
                }
                set(&mut f.host, "hostId", self.string_field("hostId")?)
            }
            "time" => set(&mut f.time, "time", self.number_field("time")?),
            "value" => set(&mut f.value, "value", self.number_field("value")?),
            "tags" => {
                if self.s.eat_null() {
                    return Ok(());
                }
                let tags = self.tags()?;
                set(&mut f.tags, "tags", tags)
            }
            _ => Ok(self.s.skip_value()?),
        }
    }

    fn string_field(&mut self, field: &'static str) -> Result<Cow<'a, str>, Fail> {
        if self.s.peek() != Some(b'"') {
            return Err(wrong(field, "a string", self.s.kind()));
        }
        Ok(self.s.string()?)
    }

    fn number_field(&mut self, field: &'static str) -> Result<f64, Fail> {
        if !matches!(self.s.peek(), Some(b'-' | b'0'..=b'9')) {
            return Err(wrong(field, "a number", self.s.kind()));
        }
        Ok(self.s.number()?)
    }

    fn tags(&mut self) -> Result<Tags<'a>, Fail> {
        if self.s.peek() != Some(b'{') {
            return Err(wrong("tags", "an object", self.s.kind()));
        }
        self.s.pos += 1;
        let mut tags = Vec::new();
        if self.s.eat(b'}') {
            return Ok(tags);
        }
        loop {
            let k = self.s.string()?;
            self.s.expect(b':', "expected ':' after a tag")?;
            if self.s.peek() != Some(b'"') {
                return Err(wrong("tags", "an object of strings", self.s.kind()));
            }
            let v = self.s.string()?;
            if k == "name" {
                return Err(ElementProblem::ReservedTag.into());
            }
            tags.push((k, v));
            if self.s.eat(b',') {
                continue;
            }
            self.s.expect(b'}', "expected ',' or '}' in tags")?;
            return Ok(tags);
        }
    }

    /// Builds the point of a complete element.
    fn point(&mut self, f: Fields<'a>, batch: &mut Batch) -> Result<bool, Fail> {
        let name = f.name.ok_or(ElementProblem::Missing("name"))?;
        let time = f.time.ok_or(ElementProblem::Missing("time"))?;
        let value = f.value.ok_or(ElementProblem::Missing("value"))?;
        let ts = match truncate_seconds(time) {
            Ok(-1) => self.now,
            Ok(t) => t,
            Err(_) => return Err(ElementProblem::TimeOutOfRange(time).into()),
        };
        let Scratch { full, canon } = &mut self.scratch;
        let mut path: &str = &name;
        if let Some(host) = &f.host {
            if host.is_empty() || host.contains(';') {
                return Err(ElementProblem::HostId(host.to_string()).into());
            }
            full.clear();
            full.push_str(host);
            full.push('.');
            full.push_str(&name);
            path = full;
        }
        let tags = f.tags.as_deref().unwrap_or_default();
        if !tags.is_empty() || path.contains(';') {
            let mut refs = Vec::with_capacity(tags.len());
            canonicalize(
                path,
                tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref())),
                &mut refs,
                canon,
            )
            .map_err(ElementProblem::Tags)?;
            path = canon;
        }
        let n = normalize(path.as_bytes()).map_err(ElementProblem::Name)?;
        batch.push(&n.path, ts, value);
        Ok(n.dropped_empty_nodes)
    }
}

fn set<T>(slot: &mut Option<T>, field: &'static str, v: T) -> Result<(), Fail> {
    if slot.is_some() {
        return Err(ElementProblem::Duplicate(field).into());
    }
    *slot = Some(v);
    Ok(())
}

fn wrong(field: &'static str, expected: &'static str, got: &'static str) -> Fail {
    Fail::Problem(ElementProblem::WrongType {
        field,
        expected,
        got,
    })
}

#[cfg(test)]
mod tests;
