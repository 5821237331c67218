//! The result of a run: one flat record, printed as a markdown table or as JSON.
//!
//! Figures that could not be measured (no PID, no data dir, a phase not reached) are
//! `None`: `null` in JSON, `n/a` in the table, never a made-up zero.

use std::fmt::Write as _;

use serde::Serialize;

/// Everything a run measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// `started <bin>` or `external`.
    pub server: String,
    /// Carbon plaintext address used.
    pub carbon: String,
    /// HTTP address used.
    pub http: String,
    /// Server process measured, if known.
    pub pid: Option<u32>,
    /// Series sent.
    pub series: u64,
    /// Points per series.
    pub points_per_series: u32,
    /// Seconds between points.
    pub step_secs: i64,
    /// Timestamp of the first point.
    pub first_ts: i64,
    /// Timestamp of the last point.
    pub last_ts: i64,
    /// Points over all series.
    pub total_points: u64,
    /// Connections used.
    pub connections: usize,
    /// Pacing, points a second (`None`: unlimited).
    pub rate_limit: Option<u64>,
    /// Seed of the values.
    pub seed: u64,
    /// Bytes of plaintext sent.
    pub payload_bytes: u64,
    /// Seconds spent generating the payload (before the timed phase).
    pub generate_secs: f64,
    /// Points handed to the kernel.
    pub sent_points: u64,
    /// First byte → last write returned (TCP back-pressure makes it the server's read time).
    pub send_secs: Option<f64>,
    /// Growth of `sumi_points_stored_total` seen.
    pub stored_points: u64,
    /// Whether the growth reached the points sent.
    pub stored_reached: bool,
    /// First byte → growth reached (or last growth seen, when not reached).
    pub ingest_secs: Option<f64>,
    /// Points stored / ingest seconds: the points/s accepted.
    pub points_per_sec: Option<f64>,
    /// Series checked through /render.
    pub sampled_series: usize,
    /// Whether every sampled series showed all its points.
    pub queryable_reached: Option<bool>,
    /// Stored → every sampled series complete in /render.
    pub queryable_after_stored_secs: Option<f64>,
    /// First byte → every sampled series complete in /render.
    pub queryable_secs: Option<f64>,
    /// Server CPU (user + system, all threads) from first byte to stored.
    pub server_cpu_secs: Option<f64>,
    /// User part of it.
    pub server_cpu_user_secs: Option<f64>,
    /// System part of it.
    pub server_cpu_system_secs: Option<f64>,
    /// Points stored per server CPU-second.
    pub points_per_cpu_sec: Option<f64>,
    /// This process's CPU over the same interval (senders and pollers).
    pub client_cpu_secs: Option<f64>,
    /// Server's peak RSS (VmHWM) at the end.
    pub peak_rss_bytes: Option<u64>,
    /// Peak RSS / series.
    pub rss_bytes_per_series: Option<f64>,
    /// Allocated bytes of the data dir while the server runs, after the query phase.
    pub disk_bytes: Option<u64>,
    /// Disk bytes / points stored.
    pub bytes_per_point: Option<f64>,
    /// Allocated bytes of the data dir after the server stopped (started server only).
    pub disk_bytes_after_stop: Option<u64>,
    /// Disk bytes after stop / points stored.
    pub bytes_per_point_after_stop: Option<f64>,
    /// SIGTERM → exit of the started server.
    pub stop_secs: Option<f64>,
    /// Whether it needed SIGKILL.
    pub stop_killed: Option<bool>,
    /// Latency probes (visibility of new series, one-series render, finds).
    pub probes: Vec<crate::probe::Timing>,
    /// Temporary directory kept by `--keep`.
    pub kept_dir: Option<String>,
    /// Remarks on how to read the figures.
    pub notes: Vec<String>,
    /// Why the run ended early, if it did.
    pub error: Option<String>,
}

impl Report {
    /// The report as a single-line JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"error\":\"serialize report: {e}\"}}"))
    }

    /// The report as a heading and a markdown table.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let rate = self.rate_limit.map_or("unlimited".to_string(), |r| {
            format!("{} points/s", group(r))
        });
        let _ = writeln!(
            out,
            "sumi bench: {} series x {} points = {} points, step {} s ({} .. {}), {} connections, rate {rate}, seed {}",
            group(self.series),
            self.points_per_series,
            group(self.total_points),
            self.step_secs,
            self.first_ts,
            self.last_ts,
            self.connections,
            self.seed
        );
        let pid = self.pid.map_or(String::new(), |p| format!(" (pid {p})"));
        let _ = writeln!(
            out,
            "server: {}{pid}, carbon {}, http {}\n",
            self.server, self.carbon, self.http
        );
        let mut row = |k: &str, v: String| {
            let _ = writeln!(out, "| {k} | {v} |");
        };
        row("measure", "value".to_string());
        row("---", "---".to_string());
        row(
            "payload generated",
            format!(
                "{} in {:.2} s",
                bytes(self.payload_bytes),
                self.generate_secs
            ),
        );
        row(
            "sent",
            format!(
                "{} points in {}",
                group(self.sent_points),
                secs(self.send_secs)
            ),
        );
        let stored = if self.stored_reached {
            format!(
                "all {} stored {} after the first byte",
                group(self.stored_points),
                secs(self.ingest_secs)
            )
        } else {
            format!(
                "NOT REACHED: {} of {} stored, last growth {} after the first byte",
                group(self.stored_points),
                group(self.sent_points),
                secs(self.ingest_secs)
            )
        };
        row(
            "points/s accepted",
            format!("{} ({stored})", num(self.points_per_sec)),
        );
        let queryable = match self.queryable_reached {
            None => "n/a (not checked)".to_string(),
            Some(true) => format!(
                "{} after stored, {} after the first byte ({} sampled series)",
                secs(self.queryable_after_stored_secs),
                secs(self.queryable_secs),
                self.sampled_series
            ),
            Some(false) => format!("NOT REACHED ({} sampled series)", self.sampled_series),
        };
        row("time until queryable", queryable);
        row(
            "server CPU",
            match (self.server_cpu_user_secs, self.server_cpu_system_secs) {
                (Some(u), Some(s)) => format!("{:.2} s (user {u:.2}, sys {s:.2})", u + s),
                _ => "n/a (no pid)".to_string(),
            },
        );
        row("points per CPU-second", num(self.points_per_cpu_sec));
        row("client CPU", secs(self.client_cpu_secs));
        row(
            "peak RSS (VmHWM)",
            match (self.peak_rss_bytes, self.rss_bytes_per_series) {
                (Some(b), Some(p)) => format!("{} ({} per series)", bytes(b), bytes(p as u64)),
                _ => "n/a (no pid)".to_string(),
            },
        );
        let disk = |b: Option<u64>, per: Option<f64>| match (b, per) {
            (Some(b), Some(p)) => format!("{} ({p:.2} bytes/point)", bytes(b)),
            (Some(b), None) => bytes(b),
            _ => "n/a".to_string(),
        };
        row(
            "disk, server running",
            disk(self.disk_bytes, self.bytes_per_point),
        );
        if self.stop_secs.is_some() {
            row(
                "disk, after stop",
                disk(self.disk_bytes_after_stop, self.bytes_per_point_after_stop),
            );
            let how = if self.stop_killed == Some(true) {
                "SIGKILL after SIGTERM"
            } else {
                "SIGTERM"
            };
            row("stop", format!("{} ({how})", secs(self.stop_secs)));
        }
        for note in &self.notes {
            let _ = writeln!(out, "\nnote: {note}");
        }
        if !self.probes.is_empty() {
            let _ = writeln!(
                out,
                "\n| latency probe | runs | median ms | max ms | answer |"
            );
            let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
            for p in &self.probes {
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.2} | {:.2} | {} |",
                    p.what, p.runs, p.median_ms, p.max_ms, p.answer_size
                );
            }
        }
        if let Some(dir) = &self.kept_dir {
            let _ = writeln!(out, "\nkept: {dir}");
        }
        if let Some(e) = &self.error {
            let _ = writeln!(out, "\nerror: {e}");
        }
        out
    }
}

/// `1234567` → `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count with a binary unit: `1.5 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

fn secs(s: Option<f64>) -> String {
    s.map_or("n/a".to_string(), |s| format!("{s:.2} s"))
}

fn num(x: Option<f64>) -> String {
    x.map_or("n/a".to_string(), |x| group(x.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        Report {
            server: "started /x/sumi".into(),
            pid: Some(42),
            series: 100_000,
            points_per_series: 60,
            total_points: 6_000_000,
            connections: 2,
            payload_bytes: 300 << 20,
            sent_points: 6_000_000,
            send_secs: Some(10.0),
            stored_points: 6_000_000,
            stored_reached: true,
            ingest_secs: Some(12.0),
            points_per_sec: Some(500_000.0),
            sampled_series: 10,
            queryable_reached: Some(true),
            server_cpu_user_secs: Some(15.0),
            server_cpu_system_secs: Some(5.0),
            server_cpu_secs: Some(20.0),
            peak_rss_bytes: Some(1 << 30),
            rss_bytes_per_series: Some(10737.4),
            disk_bytes: Some(9_000_000),
            bytes_per_point: Some(1.5),
            ..Report::default()
        }
    }

    #[test]
    fn numbers_are_grouped_and_sized() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(6_000_000), "6,000,000");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(300 << 20), "300.0 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn the_table_shows_the_headline_figures() {
        let t = sample().to_table();
        assert!(
            t.contains("| points/s accepted | 500,000 (all 6,000,000 stored 12.00 s"),
            "{t}"
        );
        assert!(
            t.contains("| server CPU | 20.00 s (user 15.00, sys 5.00) |"),
            "{t}"
        );
        assert!(
            t.contains("| peak RSS (VmHWM) | 1.0 GiB (10.5 KiB per series) |"),
            "{t}"
        );
        assert!(t.contains("(1.50 bytes/point)"), "{t}");
        assert!(t.contains("(pid 42)"), "{t}");
        assert!(!t.contains("error:"));
    }

    #[test]
    fn unmeasured_figures_say_so() {
        let r = Report {
            pid: None,
            stored_reached: false,
            stored_points: 10,
            sent_points: 20,
            server_cpu_user_secs: None,
            server_cpu_system_secs: None,
            peak_rss_bytes: None,
            error: Some("ingest stalled".into()),
            ..sample()
        };
        let t = r.to_table();
        assert!(t.contains("NOT REACHED: 10 of 20 stored"), "{t}");
        assert!(t.contains("| server CPU | n/a (no pid) |"), "{t}");
        assert!(t.contains("error: ingest stalled"), "{t}");
        let j: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
        assert_eq!(j["peak_rss_bytes"], serde_json::Value::Null);
        assert_eq!(j["stored_reached"], false);
        assert_eq!(j["points_per_sec"], 500_000.0);
        assert_eq!(j["error"], "ingest stalled");
    }
}
