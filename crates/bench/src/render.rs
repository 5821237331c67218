//! Asking graphite's `/render` whether the sampled series hold all their points.
//!
//! The answer has graphite-web's JSON shape:
//! `[{"target": "a.b", "datapoints": [[value or null, ts], ...]}, ...]`.

use serde::Deserialize;

use crate::error::BenchError;
use crate::http::encode_query_value;
use crate::procfs::truncate;

/// The `/render` path and query asking for `names` over `[from, until]` as JSON.
pub fn render_path(names: &[String], from: i64, until: i64) -> String {
    let mut path = String::from("/render?");
    for name in names {
        path.push_str("target=");
        path.push_str(&encode_query_value(name));
        path.push('&');
    }
    path.push_str(&format!("from={from}&until={until}&format=json"));
    path
}

#[derive(Deserialize)]
struct RenderSeries {
    target: String,
    datapoints: Vec<(Option<serde_json::Value>, Option<serde_json::Value>)>,
}

/// For each of `names`, the number of non-null points with a timestamp in
/// `[first_ts, last_ts]` in a `/render` JSON answer (0 for a series not in the answer).
pub fn count_points(
    body: &[u8],
    names: &[String],
    first_ts: i64,
    last_ts: i64,
) -> Result<Vec<u64>, BenchError> {
    let series: Vec<RenderSeries> =
        serde_json::from_slice(body).map_err(|e| BenchError::Parse {
            what: "render json",
            detail: format!("{e} in {:?}", truncate(&String::from_utf8_lossy(body), 200)),
        })?;
    let mut counts = vec![0u64; names.len()];
    for s in &series {
        let Some(i) = names.iter().position(|n| *n == s.target) else {
            continue;
        };
        let n = s
            .datapoints
            .iter()
            .filter(|(value, ts)| {
                let in_range = ts
                    .as_ref()
                    .and_then(serde_json::Value::as_f64)
                    .is_some_and(|t| t >= first_ts as f64 && t <= last_ts as f64);
                in_range && value.as_ref().is_some_and(|v| !v.is_null())
            })
            .count() as u64;
        counts[i] = counts[i].max(n);
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["a.b".to_string(), "c.d".to_string(), "e.f".to_string()]
    }

    #[test]
    fn the_path_repeats_target_and_encodes_names() {
        let p = render_path(&["x.y".to_string(), "a b".to_string()], 99, 200);
        assert_eq!(
            p,
            "/render?target=x.y&target=a%20b&from=99&until=200&format=json"
        );
    }

    #[test]
    fn non_null_points_in_range_are_counted_per_series() {
        let body = br#"[
            {"target": "c.d", "tags": {"name": "c.d"},
             "datapoints": [[1.5, 100], [null, 110], [3, 120], [7, 130]]},
            {"target": "a.b", "datapoints": [[0, 100], [0.0, 110], [2, 120]]},
            {"target": "other", "datapoints": [[1, 100]]}
        ]"#;
        // 130 is after the last timestamp and is not counted.
        assert_eq!(
            count_points(body, &names(), 100, 120).expect("parses"),
            vec![3, 2, 0]
        );
    }

    #[test]
    fn an_empty_answer_counts_nothing() {
        assert_eq!(
            count_points(b"[]", &names(), 0, 10).expect("parses"),
            vec![0, 0, 0]
        );
    }

    #[test]
    fn a_non_json_answer_is_an_error() {
        let err = count_points(b"<html>oops</html>", &names(), 0, 10).expect_err("not json");
        assert!(err.to_string().contains("oops"), "{err}");
        assert!(count_points(br#"{"target": "a.b"}"#, &names(), 0, 10).is_err());
    }
}
