//! Fuzz target for Prometheus remote write: [`remote_write`] reads the first byte as
//! the mode: the rest as an uncompressed `WriteRequest`, the rest snappy-compressed
//! here (so the protobuf decoder sees the fuzzer's bytes), or the rest as the
//! snappy body as it is. The batch already holds one point.
//!
//! Accepted outcomes, anything else panics:
//! - `Ok`: the batch grew by exactly the points reported; every new name is
//!   normalized and no value is NaN; samples seen are at least the points plus the
//!   samples refused;
//! - `Err` with any [`WriteError`] (every variant listed below) and a message; the
//!   batch is exactly as it was; snappy errors only when the input was not compressed
//!   here; size refusals only over the limits.

use sumi_ingest::decode_remote_write;
use sumi_ingest::remote_write::{decode_write_request, WriteError, WriteLimits};
use sumi_model::name::normalize;
use sumi_model::Batch;

const LIMITS: WriteLimits = WriteLimits {
    max_body_bytes: 1 << 16,
    max_decoded_bytes: 1 << 16,
};

/// One request.
pub fn remote_write(data: &[u8]) {
    let (&knob, rest) = data.split_first().unwrap_or((&0, &[]));
    let mut batch = Batch::new();
    batch.push("sentinel", 1, 1.0);
    let mode = knob % 3;
    let result = match mode {
        0 => decode_write_request(rest, &mut batch),
        1 => {
            let body = snap::raw::Encoder::new()
                .compress_vec(rest)
                .expect("in memory");
            decode_remote_write(&body, &mut batch, &LIMITS)
        }
        _ => decode_remote_write(rest, &mut batch, &LIMITS),
    };
    match result {
        Ok(out) => {
            assert_eq!(batch.len(), 1 + out.points);
            let refused: u64 = out.counts.rejected.iter().sum();
            assert_eq!(out.counts.received, out.points as u64 + refused);
            for (name, p) in batch.iter().skip(1) {
                let again = normalize(name.as_bytes()).expect("accepted name normalizes");
                assert_eq!(again.path, name);
                assert!(!p.value.is_nan());
            }
        }
        Err(e) => {
            assert_eq!(batch.len(), 1, "a refused request left points behind");
            assert!(!e.to_string().is_empty());
            match e {
                WriteError::BodyTooLarge { len, limit } => assert!(len > limit),
                WriteError::DecodedTooLarge { len, limit } => assert!(len > limit),
                WriteError::Snappy(_) => assert_eq!(mode, 2, "our own snappy refused"),
                WriteError::Protobuf { offset, .. } => assert!(offset <= rest.len() || mode == 2),
                WriteError::Version2 => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass() {
        remote_write(b"\x00\x0a\x18\x0a\x12\x0a\x08__name__\x12\x02up\x12\x02\x10\x01");
        remote_write(b"\x01\x0a\x05\x12\x03\x09\x00");
        remote_write(b"\x02\xff\xff\xff\x7f");
        remote_write(b"");
    }
}
