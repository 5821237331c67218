//! Fuzz target for the JSON bulk body: [`json_bulk`] reads the first byte as the
//! body's `Content-Encoding` (identity, or gzip of the rest made here, or the rest
//! taken as gzip as it is) and the rest as the body, parsed with small limits into a
//! batch that already holds one point.
//!
//! Accepted outcomes, anything else panics:
//! - `Ok`: the batch grew by exactly the points reported, every new name is
//!   normalized, and the body is JSON to serde_json too (the parser is no more
//!   lenient than RFC 8259, a leading byte order mark aside);
//! - `Err` with any [`BulkError`] (every variant listed below) and a message; the
//!   batch is exactly as it was; size refusals only when a size is over its limit.

use std::io::{Read, Write};

use sumi_ingest::json_bulk::{BulkError, BulkLimits};
use sumi_ingest::parse_json_bulk;
use sumi_model::name::normalize;
use sumi_model::Batch;

const LIMITS: BulkLimits = BulkLimits {
    max_body_bytes: 4096,
    max_decoded_bytes: 8192,
    max_elements: 50,
};

/// One body.
pub fn json_bulk(data: &[u8]) {
    let (&knob, rest) = data.split_first().unwrap_or((&0, &[]));
    let (body, encoding): (Vec<u8>, Option<&str>) = match knob % 4 {
        0 | 1 => (rest.to_vec(), None),
        2 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(rest).expect("in memory");
            (e.finish().expect("in memory"), Some("gzip"))
        }
        _ => (rest.to_vec(), Some("gzip")),
    };
    let mut batch = Batch::new();
    batch.push("sentinel", 1, 1.0);
    match parse_json_bulk(&body, encoding, 1_700_000_000, &mut batch, &LIMITS) {
        Ok(out) => {
            assert_eq!(batch.len(), 1 + out.points);
            for (name, p) in batch.iter().skip(1) {
                let again = normalize(name.as_bytes()).expect("accepted name normalizes");
                assert_eq!(again.path, name);
                assert!(!p.value.is_nan());
            }
            let json = match knob % 4 {
                3 => {
                    let mut plain = Vec::new();
                    flate2::read::MultiGzDecoder::new(rest)
                        .read_to_end(&mut plain)
                        .expect("accepted gzip inflates");
                    plain
                }
                _ => rest.to_vec(),
            };
            let json = json.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&json);
            // serde_json refuses numbers beyond f64 (`1e999`), which JSON allows and
            // Python reads as infinity; any other refusal is a difference.
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(json) {
                assert!(
                    e.to_string().starts_with("number out of range"),
                    "accepted a body serde_json refuses ({e}): {:?}",
                    String::from_utf8_lossy(json)
                );
            }
        }
        Err(e) => {
            assert_eq!(batch.len(), 1, "a refused body left points behind");
            assert!(!e.to_string().is_empty());
            match e {
                BulkError::BodyTooLarge { len, limit } => assert!(len > limit),
                BulkError::DecodedTooLarge { .. } => {
                    assert!(encoding.is_some() || body.len() > LIMITS.max_decoded_bytes)
                }
                BulkError::TooManyElements { limit } => assert_eq!(limit, LIMITS.max_elements),
                BulkError::UnsupportedEncoding(_) => panic!("only supported encodings are sent"),
                BulkError::Decompress { .. } => assert!(encoding.is_some()),
                BulkError::Syntax { offset, .. } => {
                    assert!(offset <= body.len() || encoding.is_some())
                }
                BulkError::Element { index, .. } => assert!(index < LIMITS.max_elements),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass() {
        json_bulk(
            &[
                b"\x00".as_slice(),
                br#"[{"hostId":"h","name":"a.b","time":1,"value":2,"tags":{"k":"v"}}]"#,
            ]
            .concat(),
        );
        json_bulk(b"\x02[{\"name\":\"a\",\"time\":1,\"value\":1e999}]");
        json_bulk(b"\x03\x1f\x8b garbage");
        json_bulk(b"\x00[1,2");
        json_bulk(b"");
    }
}
