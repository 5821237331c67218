//! Reading one counter out of a Prometheus text exposition (`GET /metrics`).
//!
//! Only what the benchmark needs: the sum of every sample of one metric name over all
//! its label sets (a server may count stored points per shard or per listener).

use crate::error::BenchError;
use crate::procfs::truncate;

/// The sum of every sample named exactly `metric` in `text`, or `None` when there is no
/// such sample (a server may expose a labelled counter only once it has counted).
pub fn sum_metric(text: &str, metric: &str) -> Result<Option<f64>, BenchError> {
    let mut sum = None;
    for (number, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| c == '{' || c.is_ascii_whitespace())
            .unwrap_or(line.len());
        if &line[..name_end] != metric {
            continue;
        }
        let bad = |detail: &str| BenchError::Parse {
            what: "prometheus text",
            detail: format!("line {}: {detail}: {:?}", number + 1, truncate(line, 160)),
        };
        let mut rest = &line[name_end..];
        if rest.starts_with('{') {
            let close = labels_end(rest).ok_or_else(|| bad("unterminated label set"))?;
            rest = &rest[close + 1..];
        }
        let value = rest
            .split_ascii_whitespace()
            .next()
            .ok_or_else(|| bad("no value"))?;
        let v: f64 = value.parse().map_err(|_| bad("value is not a number"))?;
        if !v.is_finite() {
            return Err(bad("value is not finite"));
        }
        sum = Some(sum.unwrap_or(0.0) + v);
    }
    Ok(sum)
}

/// The byte index of the `}` closing the label set that `s` starts with, skipping braces
/// inside quoted (and backslash-escaped) label values.
fn labels_end(s: &str) -> Option<usize> {
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' => in_quotes = !in_quotes,
            '}' if !in_quotes => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "sumi_points_stored_total";

    #[test]
    fn a_plain_counter() {
        let text = "# HELP sumi_points_stored_total Points stored.\n\
                    # TYPE sumi_points_stored_total counter\n\
                    sumi_points_stored_total 6000000\n";
        assert_eq!(sum_metric(text, M).expect("parses"), Some(6_000_000.0));
    }

    #[test]
    fn labelled_samples_are_summed_and_timestamps_ignored() {
        let text = "sumi_points_stored_total{shard=\"0\"} 10 1700000000000\n\
                    sumi_points_stored_total{shard=\"1\",note=\"a}b \\\"c\\\"\"} 2.5e1\n\
                    sumi_points_stored_totalx 1000\n\
                    sumi_points_received_total 99\n";
        assert_eq!(sum_metric(text, M).expect("parses"), Some(35.0));
    }

    #[test]
    fn an_absent_counter_is_none() {
        let text = "# TYPE sumi_points_stored_total counter\nother_metric 3\n\n";
        assert_eq!(sum_metric(text, M).expect("parses"), None);
        assert_eq!(sum_metric("", M).expect("parses"), None);
    }

    #[test]
    fn malformed_samples_are_errors_with_the_line() {
        let err = sum_metric("a 1\nsumi_points_stored_total abc\n", M)
            .expect_err("bad value")
            .to_string();
        assert!(err.contains("line 2") && err.contains("abc"), "{err}");
        assert!(sum_metric("sumi_points_stored_total{shard=\"0\" 5\n", M).is_err());
        assert!(sum_metric("sumi_points_stored_total\n", M).is_err());
        assert!(sum_metric("sumi_points_stored_total NaN\n", M).is_err());
    }
}
