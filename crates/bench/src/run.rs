//! The phases of a run, in order: generate → start or reach the server → send while
//! polling the stored count → poll /render until the sample is complete → measure memory
//! and disk → stop the started server.
//!
//! Failures before the first byte (server not ready, connection refused, no /metrics)
//! are returned as errors. Failures after it (a stall, a send error, the server dying)
//! end the run with a report of what was reached and the error in it.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::args::{BenchArgs, Plan};
use crate::error::BenchError;
use crate::procfs;
use crate::progress::Progress;
use crate::render::{count_points, render_path};
use crate::report::{bytes, group, Report};
use crate::send::{self, Senders};
use crate::server::Target;
use crate::watch::{poll_interval, StallWatch};
use crate::workload::{self, host_metrics};
use crate::{http, prom};

/// The counter of points applied to the store, summed over its label sets.
pub const STORED_METRIC: &str = "sumi_points_stored_total";
/// Anomaly scores the server stored beside the points it was sent (docs/anomaly.md),
/// taken off [`STORED_METRIC`].
pub const SCORES_METRIC: &str = "sumi_anomaly_scores_stored_total";

/// Bound of one `/metrics` or `/render` request.
const POLL_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the benchmark `args` describes and returns its report (with `error` set when
/// the run ended early after sending had started).
pub fn execute(args: &BenchArgs) -> Result<Report, BenchError> {
    let plan = Plan::new(args, unix_now())?;
    let w = &plan.workload;
    check_memory(&plan)?;
    let mut progress = Progress::new(!args.no_progress);
    progress.say(&format!(
        "generating {} series x {} points = {} points for {} connections",
        group(w.series),
        w.points,
        group(w.total_points()),
        plan.connections
    ));
    let t = Instant::now();
    let payload = workload::generate(w, plan.connections);
    let generate_secs = t.elapsed().as_secs_f64();

    let mut target = match (&args.carbon, &args.http) {
        (Some(carbon), Some(http)) => Target::external(
            carbon.clone(),
            http.clone(),
            args.pid,
            args.data_dir.clone(),
        ),
        _ => Target::start(args)?,
    };
    let mut report = Report {
        server: match &target.own {
            Some(own) => format!("started {}", own.bin.display()),
            None => "external".to_string(),
        },
        carbon: target.carbon.clone(),
        http: target.http.clone(),
        pid: target.pid,
        series: w.series,
        points_per_series: w.points,
        step_secs: w.step_secs,
        first_ts: w.first_ts(),
        last_ts: w.last_ts,
        total_points: w.total_points(),
        connections: plan.connections,
        rate_limit: plan.rate,
        seed: w.seed,
        payload_bytes: payload.bytes(),
        generate_secs,
        sampled_series: usize::try_from(plan.sample.min(w.series)).unwrap_or(usize::MAX),
        ..Report::default()
    };
    progress.say(&format!(
        "payload {} generated in {generate_secs:.2} s; waiting for the server at http://{}",
        bytes(report.payload_bytes),
        target.http
    ));
    // Errors before the first byte: stop the started server and return the error.
    let ready = target
        .wait_ready(plan.ready_timeout)
        .and_then(|()| match target.pid {
            // A wrong --pid should fail now, not after the load was sent.
            Some(pid) => procfs::read_cpu(&pid.to_string()).map(|_| ()),
            None => Ok(()),
        })
        .and_then(|()| stored_total(&target.http))
        .and_then(|baseline| {
            Ok((
                baseline,
                send::connect_all(&target.carbon, plan.connections)?,
            ))
        });
    let (baseline, streams) = match ready {
        Ok(r) => r,
        Err(e) => {
            let _ = stop_server(&plan, &mut target, &mut report);
            return Err(e);
        }
    };
    progress.say(&format!(
        "sending to carbon {} over {} connections",
        target.carbon, plan.connections
    ));
    let measured = measure(
        &plan,
        &mut target,
        payload,
        streams,
        baseline,
        &mut progress,
        &mut report,
    );
    progress.finish();
    match measured {
        Ok(()) if plan.probes > 0 => {
            if let Err(e) = run_probes(&plan, &target, &mut report) {
                report.notes.push(format!("latency probes: {e}"));
            }
        }
        Ok(()) => {}
        Err(e) => report.error = Some(e.to_string()),
    }
    if let Err(e) = stop_server(&plan, &mut target, &mut report) {
        report.notes.push(format!("stopping the server: {e}"));
    }
    if target.own.is_none() {
        report.notes.push(format!(
            "external server: stored points are the growth of {STORED_METRIC}, so other traffic \
             counts too; peak RSS is the process's lifetime peak"
        ));
    }
    Ok(report)
}

/// The latency probes of [`crate::probe`], once the load is stored and queryable.
fn run_probes(plan: &Plan, target: &Target, report: &mut Report) -> Result<(), BenchError> {
    let w = &plan.workload;
    let n = plan.probes;
    report.probes.push(crate::probe::visibility(
        &target.carbon,
        &target.http,
        &w.prefix,
        n,
    )?);
    if let Some(name) = w.sample_names(1, &host_metrics()).first() {
        report
            .probes
            .push(crate::probe::render_one(&target.http, w, name, n)?);
    }
    // the find probes walk the plain names, absent when every series is tagged
    let prefix = &w.prefix;
    let globs = if w.tagged < w.series {
        vec![
            format!("{prefix}.host0000*.cpu.*"),
            format!("{prefix}.*.cpu.user"),
        ]
    } else {
        Vec::new()
    };
    for glob in globs {
        report
            .probes
            .push(crate::probe::find(&target.http, &glob, n)?);
    }
    if w.tagged > 0 {
        report
            .probes
            .extend(crate::probe::tagged(&target.http, w, n)?);
    }
    Ok(())
}

/// Refuses a payload that would not fit in the memory available (it is generated up
/// front, so that generating does not compete with the server while it is measured).
fn check_memory(plan: &Plan) -> Result<(), BenchError> {
    let w = &plan.workload;
    // A line is the prefix, about 30 bytes of host and metric path, a value of up to
    // 11 bytes, a 10-digit timestamp and 3 separators.
    // A tagged name is about 30 bytes longer.
    let line_bytes = w.prefix.len() as u64 + 55 + if w.tagged > 0 { 30 } else { 0 };
    let estimate = w.total_points().saturating_mul(line_bytes);
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else {
        return Ok(());
    };
    let Ok(available) = procfs::parse_status_kib(&meminfo, "MemAvailable") else {
        return Ok(());
    };
    if estimate > available / 10 * 9 {
        return Err(BenchError::Args(format!(
            "the payload ({} points, about {}) would not fit in the {} of memory available; \
             ask for fewer --series or --points",
            group(w.total_points()),
            bytes(estimate),
            bytes(available)
        )));
    }
    Ok(())
}

/// The send and query phases; fills `report` as figures come in.
fn measure(
    plan: &Plan,
    target: &mut Target,
    payload: workload::Payload,
    streams: Vec<std::net::TcpStream>,
    baseline: Option<f64>,
    progress: &mut Progress,
    report: &mut Report,
) -> Result<(), BenchError> {
    let w = &plan.workload;
    let total = w.total_points();
    let hz = procfs::ticks_per_sec();
    let pid = target.pid.map(|p| p.to_string());
    let base = baseline.map_or(0, |v| v as u64);
    let mut counter_seen = baseline.is_some();
    let server_cpu0 = pid.as_deref().map(procfs::read_cpu).transpose()?;
    let client_cpu0 = procfs::read_cpu("self")?;

    let mut senders = Senders::start(
        &target.carbon,
        streams,
        payload.buffers,
        &payload.points,
        plan.rate,
    )?;
    let t0 = senders.started();
    let mut watch = StallWatch::new(plan.stall_timeout, t0);
    let mut stored = 0u64;
    let mut last_growth = t0;
    let mut last_poll_error = None;
    let outcome = loop {
        let poll_start = Instant::now();
        if let Err(e) = target.check_alive("ingest") {
            break Err(e);
        }
        if let Some(e) = senders.take_error() {
            break Err(e);
        }
        match stored_total(&target.http) {
            Ok(Some(v)) => {
                counter_seen = true;
                let s = (v as u64).saturating_sub(base);
                if s > stored {
                    stored = s;
                    last_growth = Instant::now();
                }
            }
            Ok(None) => {}
            Err(e) => last_poll_error = Some(e.to_string()),
        }
        let sent = senders.sent_points();
        progress.ingest(sent, stored, total);
        if stored >= total {
            break Ok(());
        }
        if watch.observe(sent + stored, Instant::now()) {
            let mut note = String::new();
            if !counter_seen {
                note.push_str(&format!("; /metrics never showed {STORED_METRIC}"));
            }
            if let Some(e) = &last_poll_error {
                note.push_str(&format!("; last poll error: {e}"));
            }
            break Err(BenchError::Stalled {
                reached: stored,
                target: total,
                stall_secs: plan.stall_timeout.as_secs(),
                note,
            });
        }
        std::thread::sleep(poll_interval(poll_start.elapsed()));
    };
    // CPU is read at the moment the count was reached (or the run failed).
    let server_cpu1 = pid.as_deref().map(procfs::read_cpu).transpose();
    let client_cpu1 = procfs::read_cpu("self");
    if outcome.is_err() {
        senders.abort();
    }
    report.sent_points = senders.sent_points();
    let joined = senders.join();
    if let Ok(sent) = &joined {
        report.send_secs = Some(sent.secs);
    }
    report.stored_points = stored;
    report.stored_reached = stored >= total;
    let ingest_secs = last_growth.duration_since(t0).as_secs_f64();
    report.ingest_secs = Some(ingest_secs);
    if ingest_secs > 0.0 {
        report.points_per_sec = Some(stored.min(total) as f64 / ingest_secs);
    }
    if let (Some(c0), Ok(Some(c1))) = (server_cpu0, &server_cpu1) {
        fill_server_cpu(report, c1.since(c0, hz), stored.min(total));
    }
    if let Ok(c1) = client_cpu1 {
        report.client_cpu_secs = Some(c1.since(client_cpu0, hz).total());
    }
    report.notes.push(
        "the stored count is polled every >= 100 ms, so ingest times have about 0.1 s of \
         granularity: compare runs that take many seconds"
            .to_string(),
    );
    let result = outcome
        .and(joined.map(|_| ()))
        .and(server_cpu1.map(|_| ()))
        .and_then(|()| query_phase(plan, target, t0, last_growth, progress, report));
    // Memory and disk are worth reporting even when a phase failed.
    let resources = measure_memory_and_disk(target, report);
    result.and(resources)
}

/// Server CPU figures over the ingest phase.
fn fill_server_cpu(report: &mut Report, cpu: procfs::CpuSecs, points: u64) {
    report.server_cpu_user_secs = Some(cpu.user);
    report.server_cpu_system_secs = Some(cpu.system);
    report.server_cpu_secs = Some(cpu.total());
    if cpu.total() > 0.0 {
        report.points_per_cpu_sec = Some(points as f64 / cpu.total());
    }
}

/// The newest points of a series the queryable check looks at: at most an hour at a
/// 10 s step, so the answer comes from the finest archive of any schema whose first
/// archive keeps an hour (a range reaching further back is answered, as in Graphite,
/// from a coarser archive with fewer points).
const QUERY_CHECK_POINTS: u32 = 360;

/// Polls /render for the sampled series until each shows all its newest points.
fn query_phase(
    plan: &Plan,
    target: &mut Target,
    t0: Instant,
    stored_at: Instant,
    progress: &mut Progress,
    report: &mut Report,
) -> Result<(), BenchError> {
    let w = &plan.workload;
    let names = w.sample_names(plan.sample, &host_metrics());
    let recent = w.points.clamp(1, QUERY_CHECK_POINTS);
    let first = w.last_ts - i64::from(recent - 1) * w.step_secs;
    let path = render_path(&names, first - 1, w.last_ts);
    let per_series = u64::from(recent);
    let want = per_series * names.len() as u64;
    report.sampled_series = names.len();
    report.queryable_reached = Some(false);
    let mut watch = StallWatch::new(plan.stall_timeout, Instant::now());
    let mut last_error = String::new();
    loop {
        let poll_start = Instant::now();
        target.check_alive("query")?;
        let counts = match http::get(&target.http, &path, POLL_TIMEOUT) {
            Ok(r) if r.status == 200 => match count_points(&r.body, &names, first, w.last_ts) {
                Ok(c) => Some(c),
                Err(e) => {
                    last_error = e.to_string();
                    None
                }
            },
            Ok(r) => {
                last_error = format!(
                    "GET {path}: status {}: {}",
                    r.status,
                    procfs::truncate(&String::from_utf8_lossy(&r.body), 200)
                );
                None
            }
            Err(e) => {
                last_error = e.to_string();
                None
            }
        };
        let counts = counts.unwrap_or_default();
        let seen: u64 = counts.iter().map(|&c| c.min(per_series)).sum();
        progress.query(seen, want);
        let now = Instant::now();
        if counts.len() == names.len() && counts.iter().all(|&c| c >= per_series) {
            report.queryable_reached = Some(true);
            report.queryable_after_stored_secs = Some(now.duration_since(stored_at).as_secs_f64());
            report.queryable_secs = Some(now.duration_since(t0).as_secs_f64());
            return Ok(());
        }
        if watch.observe(seen, now) {
            return Err(BenchError::QueryStalled {
                series: names.len(),
                reached: seen,
                target: want,
                stall_secs: plan.stall_timeout.as_secs(),
                note: if last_error.is_empty() {
                    String::new()
                } else {
                    format!("; last error: {last_error}")
                },
            });
        }
        std::thread::sleep(poll_interval(poll_start.elapsed()));
    }
}

/// Peak RSS and bytes on disk while the server runs.
fn measure_memory_and_disk(target: &Target, report: &mut Report) -> Result<(), BenchError> {
    if let Some(pid) = target.pid {
        let peak = procfs::read_peak_rss(&pid.to_string())?;
        report.peak_rss_bytes = Some(peak);
        report.rss_bytes_per_series = Some(peak as f64 / report.series.max(1) as f64);
    }
    if let Some(dir) = &target.data_dir {
        let (disk, per_point) = disk_figures(dir, report.stored_points)?;
        report.disk_bytes = Some(disk);
        report.bytes_per_point = per_point;
    }
    Ok(())
}

fn disk_figures(dir: &Path, points: u64) -> Result<(u64, Option<f64>), BenchError> {
    let disk = procfs::disk_usage(dir)?;
    Ok((disk, (points > 0).then(|| disk as f64 / points as f64)))
}

/// Stops the started server (if any), measures its data dir after the stop, and removes
/// or keeps its temporary directory.
fn stop_server(plan: &Plan, target: &mut Target, report: &mut Report) -> Result<(), BenchError> {
    let Some(own) = target.own.as_mut() else {
        return Ok(());
    };
    let stopped = own.stop(plan.stop_timeout)?;
    report.stop_secs = Some(stopped.secs);
    report.stop_killed = Some(stopped.killed);
    // Best effort: the directory is removed below whatever this says.
    match disk_figures(&own.data_dir, report.stored_points) {
        Ok((disk, per_point)) => {
            report.disk_bytes_after_stop = Some(disk);
            report.bytes_per_point_after_stop = per_point;
        }
        Err(e) => report.notes.push(format!("disk after stop: {e}")),
    }
    if let Some(kept) = own.remove_dir()? {
        report.kept_dir = Some(format!(
            "{} (data in data/, server output in server.log)",
            kept.display()
        ));
    }
    Ok(())
}

/// `GET /metrics` and the value of [`STORED_METRIC`] (`None` when not exposed yet).
fn stored_total(http_addr: &str) -> Result<Option<f64>, BenchError> {
    let r = http::get(http_addr, "/metrics", POLL_TIMEOUT)?;
    if r.status != 200 {
        return Err(BenchError::Http {
            addr: http_addr.to_string(),
            path: "/metrics".to_string(),
            reason: format!("status {}", r.status),
        });
    }
    let text = String::from_utf8_lossy(&r.body);
    // a server scoring anomalies on ingest also stores a score per point; those are not
    // the client's points
    let scores = prom::sum_metric(&text, SCORES_METRIC)?.unwrap_or(0.0);
    Ok(prom::sum_metric(&text, STORED_METRIC)?.map(|stored| stored - scores))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
