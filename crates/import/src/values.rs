//! The text form of an archive's values in `POST /api/v0/import` (the body is
//! described in `sumi_http::import_api`): comma-separated, an empty field for none,
//! each value the shortest decimal that reads back as the same double (Rust's and
//! Python's printing; `NaN`, `inf`, `-inf`). Text, not JSON numbers, so that values
//! cross bit for bit whatever JSON parser either side uses.

/// The `values` field of an archive: the shortest round-trip decimal of each value,
/// empty for none, comma-separated.
pub fn encode_values(values: &[Option<f64>]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(values.len() * 8);
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        if let Some(v) = v {
            let _ = write!(s, "{v}");
        }
    }
    s
}

/// The `(time, value)` points of an archive's `values` from `start` on.
pub fn decode_values(start: i64, step: i64, values: &str) -> Result<Vec<(i64, f64)>, String> {
    let mut out = Vec::new();
    if values.is_empty() {
        return Ok(out);
    }
    for (i, field) in values.split(',').enumerate() {
        let field = field.trim();
        if field.is_empty() {
            continue;
        }
        let v: f64 = field
            .parse()
            .map_err(|_| format!("value {} ({field:?}) is not a number", i + 1))?;
        let t = (i as i64)
            .checked_mul(step)
            .and_then(|d| start.checked_add(d))
            .ok_or_else(|| format!("value {} lies beyond the time range", i + 1))?;
        out.push((t, v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_bit_for_bit() {
        let vals = [
            Some(-1138.57),
            None,
            Some(0.1 + 0.2),
            Some(f64::MIN_POSITIVE / 3.0),
            Some(-0.0),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
            None,
            Some(1e300),
        ];
        let text = encode_values(&vals);
        let back = decode_values(100, 10, &text).unwrap();
        let want: Vec<(i64, f64)> = vals
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((100 + 10 * i as i64, (*v)?)))
            .collect();
        assert_eq!(back.len(), want.len());
        for ((ta, a), (tb, b)) in back.iter().zip(&want) {
            assert_eq!((ta, a.to_bits()), (tb, b.to_bits()));
        }
        let nan = decode_values(0, 1, &encode_values(&[Some(f64::NAN)])).unwrap();
        assert!(nan[0].1.is_nan());
        assert!(decode_values(0, 1, "1,x").is_err());
        assert!(decode_values(i64::MAX, 10, "1,2").is_err());
        assert_eq!(decode_values(0, 1, "").unwrap(), vec![]);
    }
}
