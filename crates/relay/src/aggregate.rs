//! carbon-aggregator's `aggregation-rules.conf` and its buffers, as carbon 1.1.10
//! does them (`carbon/aggregator/rules.py`, `buffers.py`, `processor.py`):
//!
//! - a rule is `output_template (frequency) = method input_pattern`; the input is
//!   split on `.` and each part becomes a regex part: `<<f>>` captures `.+?` (dots
//!   included), `<f>` captures `[^.]+?`, a lone `*` is `[^.]+`, any other `*` is
//!   `[^.]*`, everything else is regex text as written; parts are joined by `\.`,
//!   matched from the start and to the end of the name;
//! - the output template's `<f>` are replaced by the captures;
//! - every rule that matches puts the point in the buffer of its output metric; a
//!   buffer takes the frequency and method of the first rule that created it;
//! - a point lands in the interval `ts - ts % frequency`; every `frequency` seconds
//!   after the buffer was created, each interval that received points since the last
//!   time is computed over *all* its values and sent, and intervals older than
//!   `MAX_AGGREGATION_INTERVALS` (5) frequencies are forgotten;
//! - methods: `sum` (left to right, as Python's `sum`), `avg`, `min`, `max`,
//!   `count`, and the percentiles `p50 p75 p80 p90 p95 p99 p999` (linear between
//!   ranks, as carbon computes them);
//! - the input point is forwarded too unless its own name is one of the outputs it
//!   fed (`FORWARD_ALL`).
//!
//! The differential test `tests/carbon_diff.rs` runs carbon's own processor and
//! buffers on the same rules and points.

use std::collections::{BTreeMap, HashMap};

use regex::Regex;

/// carbon's `MAX_AGGREGATION_INTERVALS`.
pub const MAX_AGGREGATION_INTERVALS: i64 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Sum,
    Avg,
    Min,
    Max,
    Count,
    Percentile(u32),
}

impl Method {
    fn parse(s: &str) -> Option<Method> {
        Some(match s {
            "sum" => Method::Sum,
            "avg" => Method::Avg,
            "min" => Method::Min,
            "max" => Method::Max,
            "count" => Method::Count,
            "p50" => Method::Percentile(500),
            "p75" => Method::Percentile(750),
            "p80" => Method::Percentile(800),
            "p90" => Method::Percentile(900),
            "p95" => Method::Percentile(950),
            "p99" => Method::Percentile(990),
            "p999" => Method::Percentile(999),
            _ => return None,
        })
    }

    /// The aggregate of a non-empty list, as carbon's function computes it.
    pub fn apply(self, values: &[f64]) -> f64 {
        match self {
            Method::Sum => values.iter().fold(0.0, |a, &v| a + v),
            Method::Avg => values.iter().fold(0.0, |a, &v| a + v) / values.len() as f64,
            // Python's min/max keep the first of equals and never pick a NaN over a
            // number that came first; no NaN reaches here (refused at parse).
            Method::Min => values
                .iter()
                .copied()
                .fold(f64::INFINITY, |a, v| if v < a { v } else { a }),
            Method::Max => {
                values
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, |a, v| if v > a { v } else { a })
            }
            Method::Count => values.len() as f64,
            Method::Percentile(per_mille) => {
                let mut v = values.to_vec();
                v.sort_by(|a, b| a.total_cmp(b));
                let factor = f64::from(per_mille) / 1000.0;
                let rank = factor * (v.len() - 1) as f64;
                let (l, r) = (rank.floor() as usize, rank.ceil() as usize);
                if l == r {
                    v[l]
                } else {
                    v[l] * (r as f64 - rank) + v[r] * (rank - l as f64)
                }
            }
        }
    }
}

/// One line of `aggregation-rules.conf`.
#[derive(Clone, Debug)]
pub struct AggregationRule {
    pub input_pattern: String,
    pub output_pattern: String,
    pub method: Method,
    pub frequency: i64,
    regex: Regex,
}

/// Reads `aggregation-rules.conf` (blank lines and `#` comments skipped).
pub fn parse_aggregation_rules(text: &str) -> Result<Vec<AggregationRule>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(parse_rule(line).map_err(|e| format!("line {}: {e}: {line:?}", n + 1))?);
    }
    Ok(out)
}

fn parse_rule(line: &str) -> Result<AggregationRule, String> {
    let (left, right) = line.split_once('=').ok_or("no `=`")?;
    let l: Vec<&str> = left.split_whitespace().collect();
    let r: Vec<&str> = right.split_whitespace().collect();
    let (&[output, freq], &[method, input]) = (l.as_slice(), r.as_slice()) else {
        return Err("not `output (frequency) = method input`".into());
    };
    let frequency: i64 = freq
        .trim_start_matches('(')
        .trim_end_matches(')')
        .parse()
        .map_err(|_| format!("frequency {freq:?} is not an integer"))?;
    if frequency <= 0 {
        return Err(format!("frequency {frequency} must be positive"));
    }
    let method = Method::parse(method).ok_or(format!("invalid aggregation method {method:?}"))?;
    let regex =
        Regex::new(&input_regex(input)).map_err(|e| format!("input pattern {input:?}: {e}"))?;
    Ok(AggregationRule {
        input_pattern: input.to_string(),
        output_pattern: output.to_string(),
        method,
        frequency,
        regex,
    })
}

/// The regex carbon builds from an input pattern.
pub fn input_regex(input: &str) -> String {
    let parts: Vec<String> = input
        .split('.')
        .map(|part| {
            if let (Some(i), Some(j)) = (part.find("<<"), part.find(">>")) {
                if i < j {
                    return format!(
                        "{}(?P<{}>.+?){}",
                        &part[..i],
                        &part[i + 2..j],
                        &part[j + 2..]
                    );
                }
            }
            if let (Some(i), Some(j)) = (part.find('<'), part.find('>')) {
                if j > i {
                    return format!(
                        "{}(?P<{}>[^.]+?){}",
                        &part[..i],
                        &part[i + 1..j],
                        &part[j + 1..]
                    );
                }
            }
            if part == "*" {
                "[^.]+".to_string()
            } else {
                part.replace('*', "[^.]*")
            }
        })
        .collect();
    // `re.match` of `parts + "$"`: anchored at the start, `$` inside the alternation.
    format!("\\A(?:{}$)", parts.join("\\."))
}

impl AggregationRule {
    /// The output metric for `metric`, if the rule matches it.
    pub fn aggregate_metric(&self, metric: &str) -> Option<String> {
        let caps = self.regex.captures(metric)?;
        let mut out = String::with_capacity(self.output_pattern.len() + 16);
        let mut rest = self.output_pattern.as_str();
        while let Some(i) = rest.find('<') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let j = after.find('>')?;
            out.push_str(caps.name(&after[..j])?.as_str());
            rest = &after[j + 1..];
        }
        out.push_str(rest);
        Some(out)
    }
}

struct Interval {
    values: Vec<f64>,
    active: bool,
}

struct Buffer {
    frequency: i64,
    method: Method,
    next_compute: i64,
    intervals: BTreeMap<i64, Interval>,
}

/// The aggregator's buffers. Not thread-safe by itself: the relay holds it in a mutex.
pub struct Aggregator {
    rules: Vec<AggregationRule>,
    buffers: HashMap<String, Buffer>,
}

impl Aggregator {
    pub fn new(rules: Vec<AggregationRule>) -> Aggregator {
        Aggregator {
            rules,
            buffers: HashMap::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Takes one point at wall time `now`; true when it should be forwarded as well.
    pub fn input(&mut self, metric: &str, ts: i64, value: f64, now: i64) -> bool {
        let mut fed_itself = false;
        for rule in &self.rules {
            let Some(out) = rule.aggregate_metric(metric) else {
                continue;
            };
            fed_itself |= out == metric;
            let b = self.buffers.entry(out).or_insert_with(|| Buffer {
                frequency: rule.frequency,
                method: rule.method,
                next_compute: now + rule.frequency,
                intervals: BTreeMap::new(),
            });
            let interval = ts - ts.rem_euclid(b.frequency);
            let i = b.intervals.entry(interval).or_insert(Interval {
                values: Vec::new(),
                active: true,
            });
            i.values.push(value);
            i.active = true;
        }
        !fed_itself
    }

    /// Computes every buffer due at `now` (or all of them with `force`), calling
    /// `emit(metric, interval, value)` for each active interval, oldest first.
    pub fn compute(&mut self, now: i64, force: bool, mut emit: impl FnMut(&str, i64, f64)) {
        self.buffers.retain(|metric, b| {
            if !force && now < b.next_compute {
                return true;
            }
            while b.next_compute <= now {
                b.next_compute += b.frequency;
            }
            let current = now - now.rem_euclid(b.frequency);
            let threshold = current - MAX_AGGREGATION_INTERVALS * b.frequency;
            let method = b.method;
            b.intervals.retain(|&start, i| {
                if i.active {
                    emit(metric, start, method.apply(&i.values));
                    i.active = false;
                }
                start >= threshold
            });
            !b.intervals.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_capture_and_aggregate() {
        let rules = parse_aggregation_rules(
            "# c\n<env>.applications.<app>.all.requests (60) = sum <env>.applications.<app>.*.requests\n\
             <env>.all.<rest> (10) = avg <env>.hosts.*.<<rest>>\n",
        )
        .unwrap();
        assert_eq!(
            rules[0]
                .aggregate_metric("prod.applications.api.web1.requests")
                .as_deref(),
            Some("prod.applications.api.all.requests")
        );
        assert_eq!(
            rules[1]
                .aggregate_metric("prod.hosts.h1.cpu.user")
                .as_deref(),
            Some("prod.all.cpu.user")
        );
        assert_eq!(
            rules[0].aggregate_metric("prod.applications.api.requests"),
            None
        );
        let mut a = Aggregator::new(rules);
        assert!(a.input("prod.applications.api.web1.requests", 120, 1.0, 1000));
        assert!(a.input("prod.applications.api.web2.requests", 179, 2.5, 1000));
        let mut out = Vec::new();
        a.compute(1000, true, |m, t, v| out.push((m.to_string(), t, v)));
        assert_eq!(
            out,
            vec![("prod.applications.api.all.requests".to_string(), 120, 3.5)]
        );
        out.clear();
        a.compute(1000, true, |m, t, v| out.push((m.to_string(), t, v)));
        assert!(out.is_empty(), "inactive intervals are not sent again");
    }

    #[test]
    fn percentiles_interpolate_as_carbon() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(Method::Percentile(500).apply(&v), 2.5);
        assert_eq!(Method::Percentile(999).apply(&v), 3.997);
        assert_eq!(Method::Count.apply(&v), 4.0);
        assert!(parse_aggregation_rules("x (60) = median y").is_err());
    }
}
