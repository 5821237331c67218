//! Fuzz target for what `sumi import growthforecast` reads besides RRD files
//! (`sumi_import::growthforecast`): the `meta` JSON of GrowthForecast's rows, and the
//! counter it rebuilds from a `DERIVE` graph's rates, and a `mysqldump` of its MySQL
//! database.
//!
//! The first byte picks, the rest is the input. Accepted outcomes, anything else
//! panics:
//! - 0: a graph's `meta` (lossy UTF-8) to `graph_meta`: accepted only for blank text
//!   or a JSON object, and then `adjust`, `adjustval` and `unit` are the object's
//!   values (or `*`, `1` and empty when absent); refused with a message otherwise;
//! - 1: a complex graph's `meta` to `complex_meta`: accepted only for a JSON object,
//!   with one item more than `path-2` lists, the first never stacked;
//! - 2: a step (1 to 65536 seconds), a last value and `(time, rate)` pairs at
//!   increasing times to `counter_from_rates`: times strictly increasing, one point
//!   per rate plus one before each rate whose previous row is missing, each rate
//!   times the step the counter's change to its row (to rounding), the last value
//!   the one asked for (to rounding);
//! - 3: a `mysqldump` file to `sumi_import::mysqldump::parse_dump`: never a panic; a
//!   table's rows are as long as its columns when they are known; a problem is at a
//!   byte inside the text, and reading the text cut there gives the same tables
//!   without a problem.

use sumi_import::growthforecast::{complex_meta, counter_from_rates, graph_meta};
use sumi_import::mysqldump::parse_dump;

use crate::Input;

fn object(text: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// One input.
pub fn gf_meta(data: &[u8]) {
    let mut input = Input(data);
    match input.byte() % 4 {
        0 => {
            let text = String::from_utf8_lossy(input.0);
            match graph_meta(&text) {
                Ok((adjust, adjustval, unit)) => {
                    if text.trim().is_empty() {
                        assert_eq!(
                            (adjust.as_str(), adjustval.as_str(), unit.as_str()),
                            ("*", "1", "")
                        );
                        return;
                    }
                    let m = object(&text).expect("accepted meta is an object");
                    if let Some(serde_json::Value::String(a)) = m.get("adjust") {
                        assert_eq!(&adjust, a);
                    }
                    if m.get("unit").is_none() {
                        assert_eq!(unit, "");
                    }
                }
                Err(e) => {
                    assert!(!e.is_empty());
                    assert!(!text.trim().is_empty());
                }
            }
        }
        1 => {
            let text = String::from_utf8_lossy(input.0);
            match complex_meta(&text) {
                Ok((_, items)) => {
                    let m = object(&text).expect("accepted meta is an object");
                    let more = match m.get("path-2") {
                        None | Some(serde_json::Value::Null) => 0,
                        Some(serde_json::Value::Array(a)) => a.len(),
                        Some(_) => 1,
                    };
                    assert_eq!(items.len(), more + 1);
                    assert!(!items[0].stack);
                }
                Err(e) => assert!(!e.is_empty()),
            }
        }
        3 => {
            let d = parse_dump(input.0);
            for t in d.tables.values() {
                if !t.columns.is_empty() {
                    assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
                }
            }
            if let Some((at, why)) = &d.problem {
                assert!(*at < input.0.len(), "a problem past the end");
                assert!(!why.is_empty());
                let before = parse_dump(&input.0[..*at]);
                assert!(
                    before.problem.is_none(),
                    "the text before a problem reads cleanly"
                );
                assert_eq!(before.tables, d.tables);
            }
        }
        _ => {
            let step = i64::from(input.byte()) << 8 | i64::from(input.byte());
            let step = step + 1;
            let last = f64::from(input.u32() as i32);
            let mut t = i64::from(input.u32());
            let mut rates = Vec::new();
            while !input.is_empty() && rates.len() < 4096 {
                t += step * (1 + i64::from(input.byte() % 3));
                rates.push((t, f64::from(input.u32() as i32) / 64.0));
            }
            let c = counter_from_rates(step, &rates, last);
            assert!(c.windows(2).all(|w| w[0].0 < w[1].0));
            let gaps = rates
                .iter()
                .enumerate()
                .filter(|(i, (t, _))| *i == 0 || rates[i - 1].0 != t - step)
                .count();
            assert_eq!(c.len(), rates.len() + gaps);
            let Some(&(_, end)) = c.last() else {
                assert!(rates.is_empty());
                return;
            };
            let scale = c
                .iter()
                .map(|p| p.1.abs())
                .fold(last.abs(), f64::max)
                .max(1.0);
            assert!(
                (end - last).abs() <= 1e-9 * scale,
                "ends at {end}, not {last}"
            );
            let at: std::collections::HashMap<i64, f64> = c.iter().copied().collect();
            for &(t, r) in &rates {
                let d = at[&t] - at[&(t - step)];
                assert!(
                    (d - r * step as f64).abs() <= 1e-9 * scale,
                    "rate {r} at {t}"
                );
            }
        }
    }
}
