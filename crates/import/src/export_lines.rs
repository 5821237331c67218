//! The lines `sumi export` reads and writes: a `/render?format=raw` answer's line
//! (`name,start,end,step|v,v,…`, what a running server sends) parsed into its parts,
//! and one series written as carbon plaintext, CSV or JSON lines, each value in the
//! shortest text that reads back to the same `f64`.
//!
//! Nothing here panics on any line (`fuzz/src/export_raw.rs`): a line that is not a
//! raw series is `None`, a value that is not a number a null, and timestamps of
//! hostile starts and steps saturate.

/// Output formats of `sumi export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `name value timestamp` lines (carbon plaintext).
    Plaintext,
    /// `name,timestamp,value` rows.
    Csv,
    /// One JSON object a line: `{"target": …, "datapoints": [[value, ts], …]}`.
    Json,
}

/// One line of `format=raw`: `name,start,end,step|v,v,…` (`None` for a null).
pub struct RawSeries<'a> {
    pub name: &'a str,
    pub start: i64,
    pub step: i64,
    /// The values, comma-separated, as the line holds them.
    pub values: &'a str,
}

impl<'a> RawSeries<'a> {
    /// The line's parts; `None` when it is not such a line.
    pub fn parse(line: &'a str) -> Option<RawSeries<'a>> {
        // values hold no '|', a name may
        let (head, values) = line.rsplit_once('|')?;
        let mut it = head.rsplitn(4, ',');
        let step = it.next()?.parse().ok()?;
        let _end: i64 = it.next()?.parse().ok()?;
        let start = it.next()?.parse().ok()?;
        let name = it.next()?;
        Some(RawSeries {
            name,
            start,
            step,
            values,
        })
    }

    /// Appends the series to `out` in `format`; returns the points written.
    pub fn write(&self, format: Format, out: &mut String) -> u64 {
        let values = self
            .values
            .split(',')
            .filter(|v| !v.is_empty())
            .map(|v| v.parse::<f64>().ok());
        write_series(format, self.name, self.start, self.step, values, out)
    }
}

/// Appends one series to `out` in `format`; returns the points written.
pub fn write_series(
    format: Format,
    name: &str,
    start: i64,
    step: i64,
    values: impl Iterator<Item = Option<f64>>,
    out: &mut String,
) -> u64 {
    use std::fmt::Write as _;
    let mut n = 0;
    if format == Format::Json {
        out.push_str("{\"target\":");
        out.push_str(&serde_json::Value::from(name).to_string());
        out.push_str(",\"datapoints\":[");
    }
    let quoted = csv_field(name);
    for (i, value) in values.enumerate() {
        let ts = start.saturating_add((i as i64).saturating_mul(step));
        match format {
            Format::Plaintext | Format::Csv => {
                let Some(x) = value else { continue };
                if format == Format::Plaintext {
                    let _ = writeln!(out, "{name} {} {ts}", Value(x));
                } else {
                    let _ = writeln!(out, "{quoted},{ts},{}", Value(x));
                }
                n += 1;
            }
            Format::Json => {
                if i > 0 {
                    out.push(',');
                }
                match value.filter(|x| x.is_finite()) {
                    Some(x) => {
                        let _ = write!(out, "[{},{ts}]", Value(x));
                        n += 1;
                    }
                    None => {
                        let _ = write!(out, "[null,{ts}]");
                    }
                }
            }
        }
    }
    if format == Format::Json {
        out.push_str("]}\n");
    }
    n
}

/// A value in the shortest text that reads back to the same `f64`: plain digits from
/// 1e-5 to 1e16 (`72`, `0.25`), an exponent outside (`1e300`, `1.5e-7`).
pub struct Value(pub f64);

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        let a = x.abs();
        if !x.is_finite() || x == 0.0 || (1e-5..1e16).contains(&a) {
            write!(f, "{x}")
        } else {
            write!(f, "{x:e}")
        }
    }
}

/// A CSV field, quoted when it holds `,`, `"`, CR or LF.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_exactly() {
        for x in [
            0.0,
            -0.0,
            72.0,
            0.1,
            1.0 / 3.0,
            1e300,
            -1.5e-7,
            123456789012345680.0,
            f64::MIN_POSITIVE,
            f64::MAX,
        ] {
            let text = Value(x).to_string();
            assert_eq!(
                text.parse::<f64>().unwrap().to_bits(),
                x.to_bits(),
                "{text}"
            );
        }
        assert_eq!(Value(72.0).to_string(), "72");
        assert_eq!(Value(1e300).to_string(), "1e300");
    }

    #[test]
    fn raw_lines_in_each_format() {
        let s = RawSeries::parse("a,b|c,100,130,10|1.5,None,nan,2.0").unwrap();
        assert_eq!((s.name, s.start, s.step), ("a,b|c", 100, 10));
        let mut out = String::new();
        assert_eq!(s.write(Format::Plaintext, &mut out), 3);
        assert_eq!(out, "a,b|c 1.5 100\na,b|c NaN 120\na,b|c 2 130\n");
        out.clear();
        s.write(Format::Csv, &mut out);
        assert_eq!(
            out,
            "\"a,b|c\",100,1.5\n\"a,b|c\",120,NaN\n\"a,b|c\",130,2\n"
        );
        out.clear();
        assert_eq!(s.write(Format::Json, &mut out), 2);
        assert_eq!(
            out,
            "{\"target\":\"a,b|c\",\"datapoints\":[[1.5,100],[null,110],[null,120],[2,130]]}\n"
        );
        assert!(RawSeries::parse("garbage").is_none());
        assert!(RawSeries::parse("x,1,2|3").is_none());
    }
}
