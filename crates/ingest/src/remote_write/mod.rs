//! Prometheus remote write 1.0 (`POST /api/v1/write`): a snappy-compressed (block
//! format) protobuf `prometheus.WriteRequest`, as Prometheus, Grafana Agent/Alloy,
//! vmagent and OpenTelemetry collectors send it, decoded into points.
//!
//! - [`proto`]: a small protobuf reader (no generated code); unknown fields are
//!   skipped, as protobuf requires, so newer senders' additions are harmless.
//! - [`labels`]: labels to a Graphite tagged name, with a documented escape for what
//!   carbon refuses.
//!
//! The messages read (`prompb/remote.proto`, `prompb/types.proto`):
//!
//! ```text
//! WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
//! TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
//!                repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
//! Label        { string name = 1; string value = 2; }
//! Sample       { double value = 1; int64 timestamp = 2; }   // timestamp in ms
//! ```
//!
//! Points: each sample of a series is `(name, timestamp / 1000 truncated toward zero,
//! value)`. Staleness markers (the NaN `0x7ff0000000000002` Prometheus writes when a
//! series disappears) are not values: dropped, counted as `stale_marker`. Any other
//! NaN is dropped like carbon drops it (`nan_value`). Native histograms have no
//! Graphite form: each is counted as `histogram_sample`. Exemplars and metadata are
//! ignored.
//!
//! Errors come at two levels. A body that is not snappy, not a `WriteRequest`, over a
//! limit, or a remote-write 2.0 request is refused whole ([`WriteError`]; the HTTP
//! layer answers [`WriteError::status`], a 4xx, which Prometheus does not retry) and
//! nothing is appended. A series whose labels give no name (no `__name__`, invalid
//! UTF-8) loses its samples, counted by reason in [`WriteOutcome::counts`], and the
//! others are kept: refusing the request would make the sender drop every good series
//! with it.

mod labels;
mod proto;

use std::borrow::Cow;

use sumi_model::name::normalize;
use sumi_model::Batch;

use crate::stats::{LocalCounts, Reason};
use proto::{ProtoError, Reader, FIXED64, LEN, VARINT};

pub use labels::LabelError;

/// The NaN Prometheus writes as a staleness marker (`value.StaleNaN`).
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Bounds on one request, each with the reason for its default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteLimits {
    /// Bytes of the compressed body. Default 16 MiB: Prometheus sends at most
    /// `max_samples_per_send` (2,000 by default) samples per request, well under 1 MiB.
    pub max_body_bytes: usize,
    /// Bytes of the decompressed message, checked against snappy's header before
    /// anything is allocated. Default 64 MiB.
    pub max_decoded_bytes: usize,
}

impl Default for WriteLimits {
    fn default() -> Self {
        WriteLimits {
            max_body_bytes: 16 << 20,
            max_decoded_bytes: 64 << 20,
        }
    }
}

/// What an accepted request gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Points appended to the batch.
    pub points: usize,
    /// Series read (with or without points).
    pub series: usize,
    /// Samples seen (`received`), samples refused by reason, names renamed (empty
    /// nodes dropped): add them to the shared counters with
    /// [`crate::IngestStats::absorb`].
    pub counts: LocalCounts,
}

/// Why a request was refused whole. Nothing of it was appended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The body is over [`WriteLimits::max_body_bytes`].
    #[error("body of {len} bytes is over the limit of {limit}")]
    BodyTooLarge { len: usize, limit: usize },
    /// Snappy's header announces more than [`WriteLimits::max_decoded_bytes`].
    #[error("decompressed body of {len} bytes would be over the limit of {limit}")]
    DecodedTooLarge { len: usize, limit: usize },
    /// Not a snappy block.
    #[error("body is not snappy-compressed (block format): {0}")]
    Snappy(String),
    /// Not a `WriteRequest`.
    #[error("malformed WriteRequest at byte {offset}: {what}")]
    Protobuf { offset: usize, what: &'static str },
    /// A remote-write 2.0 `io.prometheus.write.v2.Request`.
    #[error("remote write 2.0 requests are not supported; send remote write 1.0 (prometheus.WriteRequest)")]
    Version2,
}

impl From<ProtoError> for WriteError {
    fn from(e: ProtoError) -> WriteError {
        WriteError::Protobuf {
            offset: e.offset,
            what: e.what,
        }
    }
}

impl WriteError {
    /// The HTTP status to answer with: 413 for size limits, 415 for version 2, 400
    /// otherwise. Prometheus retries only 5xx (and 429), so none of these is retried.
    pub fn status(&self) -> u16 {
        match self {
            WriteError::BodyTooLarge { .. } | WriteError::DecodedTooLarge { .. } => 413,
            WriteError::Version2 => 415,
            _ => 400,
        }
    }
}

/// Decodes a snappy-compressed `WriteRequest` and appends its points to `batch`, or
/// refuses it whole and leaves `batch` as it was.
pub fn decode_remote_write(
    body: &[u8],
    batch: &mut Batch,
    limits: &WriteLimits,
) -> Result<WriteOutcome, WriteError> {
    if body.len() > limits.max_body_bytes {
        return Err(WriteError::BodyTooLarge {
            len: body.len(),
            limit: limits.max_body_bytes,
        });
    }
    let len = snap::raw::decompress_len(body).map_err(|e| WriteError::Snappy(e.to_string()))?;
    if len > limits.max_decoded_bytes {
        return Err(WriteError::DecodedTooLarge {
            len,
            limit: limits.max_decoded_bytes,
        });
    }
    let msg = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| WriteError::Snappy(e.to_string()))?;
    decode_write_request(&msg, batch)
}

/// Decodes an uncompressed `WriteRequest` (see [`decode_remote_write`]).
pub fn decode_write_request(msg: &[u8], batch: &mut Batch) -> Result<WriteOutcome, WriteError> {
    let mark = batch.len();
    let mut d = Decoder::default();
    let result = d.request(msg, batch);
    if result.is_err() {
        batch.truncate(mark);
    }
    result.map(|()| d.out)
}

/// One series' parts, reused between series.
#[derive(Default)]
struct Decoder<'a> {
    labels: Vec<(&'a [u8], &'a [u8])>,
    samples: Vec<(f64, i64)>,
    tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    name: String,
    out: WriteOutcome,
}

impl<'a> Decoder<'a> {
    fn request(&mut self, msg: &'a [u8], batch: &mut Batch) -> Result<(), WriteError> {
        let mut r = Reader::new(msg, 0);
        while let Some((field, wire)) = r.key()? {
            match field {
                1 => {
                    r.want(wire, LEN)?;
                    let (series, at) = r.bytes()?;
                    self.series(series, at, batch)?;
                }
                // v2's `symbols` (4) and `timeseries` (5): a v1 reader would skip them
                // and lose every point without a word.
                4 | 5 => return Err(WriteError::Version2),
                _ => r.skip(wire)?,
            }
        }
        Ok(())
    }

    fn series(&mut self, msg: &'a [u8], base: usize, batch: &mut Batch) -> Result<(), WriteError> {
        self.labels.clear();
        self.samples.clear();
        self.out.series += 1;
        let mut histograms: u64 = 0;
        let mut r = Reader::new(msg, base);
        while let Some((field, wire)) = r.key()? {
            match field {
                1 => {
                    r.want(wire, LEN)?;
                    let (label, at) = r.bytes()?;
                    self.labels.push(label_pair(label, at)?);
                }
                2 => {
                    r.want(wire, LEN)?;
                    let (sample, at) = r.bytes()?;
                    self.samples.push(sample_pair(sample, at)?);
                }
                4 => {
                    r.want(wire, LEN)?;
                    r.bytes()?;
                    histograms += 1;
                }
                _ => r.skip(wire)?,
            }
        }
        let counts = &mut self.out.counts;
        counts.received += histograms;
        counts.reject_many(Reason::HistogramSample, histograms);
        if self.samples.is_empty() {
            return Ok(());
        }
        counts.received += self.samples.len() as u64;
        let n = self.samples.len() as u64;
        let reason = match labels::graphite_name(&self.labels, &mut self.tags, &mut self.name) {
            Ok(()) => match normalize(self.name.as_bytes()) {
                Ok(norm) => {
                    for &(value, ms) in &self.samples {
                        if value.is_nan() {
                            let r = if value.to_bits() == STALE_NAN_BITS {
                                Reason::StaleMarker
                            } else {
                                Reason::NanValue
                            };
                            counts.reject(r);
                            continue;
                        }
                        batch.push(&norm.path, ms / 1000, value);
                        self.out.points += 1;
                        if norm.dropped_empty_nodes {
                            counts.renamed += 1;
                        }
                    }
                    return Ok(());
                }
                Err(e) => Reason::for_name(&e),
            },
            Err(LabelError::InvalidUtf8) => Reason::InvalidUtf8,
            Err(LabelError::NoName | LabelError::EmptyLabelName) => Reason::InvalidElement,
        };
        counts.reject_many(reason, n);
        Ok(())
    }
}

/// A `Label`'s name and value (absent fields are empty, as in proto3).
fn label_pair(msg: &[u8], base: usize) -> Result<(&[u8], &[u8]), ProtoError> {
    let (mut name, mut value): (&[u8], &[u8]) = (&[], &[]);
    let mut r = Reader::new(msg, base);
    while let Some((field, wire)) = r.key()? {
        match field {
            1 | 2 => {
                r.want(wire, LEN)?;
                let (s, _) = r.bytes()?;
                if field == 1 {
                    name = s;
                } else {
                    value = s;
                }
            }
            _ => r.skip(wire)?,
        }
    }
    Ok((name, value))
}

/// A `Sample`'s value and timestamp (ms); absent fields are 0, as in proto3.
fn sample_pair(msg: &[u8], base: usize) -> Result<(f64, i64), ProtoError> {
    let (mut value, mut ts) = (0.0, 0i64);
    let mut r = Reader::new(msg, base);
    while let Some((field, wire)) = r.key()? {
        match field {
            1 => {
                r.want(wire, FIXED64)?;
                value = f64::from_bits(r.fixed64()?);
            }
            2 => {
                r.want(wire, VARINT)?;
                // int64 is the varint of its two's complement
                ts = r.varint()? as i64;
            }
            _ => r.skip(wire)?,
        }
    }
    Ok((value, ts))
}

#[cfg(test)]
mod tests;
