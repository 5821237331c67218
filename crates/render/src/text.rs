//! `format=csv` and `format=raw` (also `rawData=1`), as graphite-web writes them.
//!
//! csv: one `name,YYYY-MM-DD HH:MM:SS,value` row a point, CRLF line ends (Python's
//! `csv` "excel" dialect: a field with `,`, `"`, CR or LF is quoted, quotes doubled),
//! times in the request's time zone, missing values empty, numbers as Python's `str()`
//! (`1e-05`, `nan`, `inf`).
//!
//! raw: one line a series, `name,start,end,step|v1,v2,...`, missing values `None`.
//!
//! Both read consolidated values when a series has `values_per_point > 1`; csv then
//! still steps its timestamps by the unconsolidated step, as graphite-web does.

use chrono::{Datelike, TimeZone, Timelike, Utc};
use std::fmt::Write as _;

use chrono_tz::Tz;

use sumi_query::py;
use sumi_query::series::TimeSeries;

use crate::Rendered;

/// Renders series as graphite-web's `format=csv`, times in `tz`.
pub fn render_csv(series: &[TimeSeries], tz: Tz) -> Rendered {
    let mut out = String::with_capacity(
        series
            .iter()
            .map(|s| s.values.len() * (s.name.len() + 32))
            .sum(),
    );
    for s in series {
        let mut name = String::new();
        // Python's csv module writes None as an empty field
        if !s.name_is_none() {
            csv_field(&mut name, &s.name);
        }
        for (i, value) in s.consolidated().enumerate() {
            let ts = s.start.saturating_add((i as i64).saturating_mul(s.step));
            out.push_str(&name);
            out.push(',');
            match Utc.timestamp_opt(ts, 0).single() {
                Some(t) => write_datetime(&mut out, &t.with_timezone(&tz).naive_local()),
                None => out.push_str(&ts.to_string()),
            }
            out.push(',');
            if let Some(v) = value {
                py::write_float_repr(&mut out, v);
            }
            out.push_str("\r\n");
        }
    }
    Rendered {
        body: out.into_bytes(),
        content_type: "text/csv",
    }
}

/// `%Y-%m-%d %H:%M:%S`, written directly (chrono's formatter re-reads the pattern
/// for every row).
fn write_datetime(out: &mut String, t: &chrono::NaiveDateTime) {
    fn two(out: &mut String, n: u32) {
        out.push(char::from(b'0' + (n / 10 % 10) as u8));
        out.push(char::from(b'0' + (n % 10) as u8));
    }
    let year = t.year();
    if (0..10_000).contains(&year) {
        two(out, year as u32 / 100);
        two(out, year as u32 % 100);
    } else {
        out.push_str(&year.to_string());
    }
    out.push('-');
    two(out, t.month());
    out.push('-');
    two(out, t.day());
    out.push(' ');
    two(out, t.hour());
    out.push(':');
    two(out, t.minute());
    out.push(':');
    two(out, t.second());
}

/// Python's csv writer, minimal quoting.
fn csv_field(out: &mut String, field: &str) {
    if field.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

/// Renders series as graphite-web's `format=raw`.
pub fn render_raw(series: &[TimeSeries]) -> Rendered {
    let mut out = String::with_capacity(
        series
            .iter()
            .map(|s| s.values.len() * 12 + s.name.len() + 40)
            .sum(),
    );
    for s in series {
        out.push_str(&s.name);
        let _ = write!(out, ",{},{},{}|", s.start, s.end, s.step);
        for (i, value) in s.consolidated().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match value {
                Some(v) => py::write_float_repr(&mut out, v),
                None => out.push_str("None"),
            }
        }
        out.push('\n');
    }
    Rendered {
        body: out.into_bytes(),
        content_type: "text/plain",
    }
}
