//! `/render`: graphite-web's render API for the data formats (json, csv, raw, and
//! pickle and msgpack, which a graphite-web cluster reads); graphs (png, svg) are
//! drawn by `crate::image`.
//!
//! Parameters as graphite-web's `parseOptions` reads them: `target` (repeatable; or
//! `target[]`), `from`/`until`/`now` in any form graphite accepts, `tz`, `format`
//! (`rawData` and `pickle` are the legacy spellings), `jsonp`, `pretty`,
//! `maxDataPoints` (digits only, otherwise ignored), `noNullPoints`, `xFilesFactor`,
//! `template[name]=value`.
//!
//! Each request reads through its own [`StoreSource`] with the configured
//! [`QueryLimits`](crate::source::QueryLimits); a request over them is answered 422
//! with a message naming the limit, the amount asked for and how to narrow it.
//!
//! `format=json` is streamed: the answer's series are built, written and dropped a
//! chunk at a time ([`render_json_chunks`]) on the blocking thread that evaluated
//! them, and each chunk waits in a small channel until the connection takes it, so a
//! big answer is held once (compactly) rather than as series plus a body, and a slow
//! client slows the writer down instead of growing a buffer. An answer that fits in
//! one chunk is sent whole, with a `Content-Length`.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use sumi_query::source::{SeriesSource, SourceError};
use sumi_query::{resolve_range, Evaluator, QueryError, RequestContext};
use sumi_render::series_json::{json_content_type, render_json_chunks};
use sumi_render::{render_csv, render_raw, JsonOptions};
use tokio::sync::{mpsc, oneshot};

use crate::fanout::ClusterSource;
use crate::params::Params;
use crate::source::StoreSource;
use crate::{
    bad_request, image, rendered, request_params, request_tz, server_error, text_error, unix_now,
    AppState,
};

/// Bytes of JSON written before a chunk is handed to the connection.
const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks waiting for the connection before the writer blocks.
const CHUNKS_IN_FLIGHT: usize = 4;
/// Values in an answer above which its memory is handed back to the system once the
/// answer is sent (see [`release_memory`]).
const BIG_ANSWER_POINTS: usize = 1_000_000;
/// Points read by a request beyond which its memory is trimmed too: about 160 MB as
/// series. Below it freed memory stays in the allocator (see `tune_malloc` in the
/// server), so that repeated dashboard queries do not fault their pages in again.
const BIG_READ_POINTS: u64 = 10_000_000;

pub async fn handle(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.as_deref(), &body);
    // the blocking thread answers with the response head, then keeps writing the body
    let (reply, answer) = oneshot::channel();
    let auth = crate::authorization(&headers);
    let task = tokio::task::spawn_blocking(move || render(&state, &params, auth, reply));
    match answer.await {
        Ok(resp) => resp,
        Err(_) => match task.await {
            Err(e) => server_error(format!("render failed: {e}")),
            Ok(()) => server_error("render ended without an answer"),
        },
    }
}

/// The output format: graphite-web's precedence is `pickle`, then `rawData`, then an
/// explicit `format`; without any of them it draws a PNG.
fn format_of(params: &Params) -> &str {
    if let Some(f) = params.get("format") {
        return f;
    }
    if params.contains("rawData") {
        return "raw";
    }
    if params.contains("pickle") {
        return "pickle";
    }
    "png"
}

fn render(
    state: &AppState,
    params: &Params,
    auth: Option<String>,
    reply: oneshot::Sender<Response>,
) {
    let started = Instant::now();
    let mut big = false;
    let mut partial = None;
    let rendering = evaluate_and_render(state, params, auth, &mut big, &mut partial);
    let evaluated = started.elapsed();
    match rendering {
        Rendering::Done(mut resp) => {
            crate::mark_partial(&mut resp, partial);
            let _ = reply.send(resp);
        }
        Rendering::Json {
            chunks,
            content_type,
        } => stream_json(chunks, content_type, partial, reply),
    }
    if big {
        let t = Instant::now();
        release_memory();
        tracing::debug!(
            eval_secs = evaluated.as_secs_f64(),
            total_secs = started.elapsed().as_secs_f64(),
            trim_secs = t.elapsed().as_secs_f64(),
            "big render sent"
        );
    }
}

/// Hands memory freed by a big answer back to the system. glibc keeps freed memory
/// in per-thread arenas and renders run on whichever blocking thread is free, so
/// without this every arena keeps the peak of the biggest render it served.
/// Measured with 1M series x 10 points loaded: RSS 245 MB after loading, 553 MB after
/// fifteen renders of all of them (peak 714 MB); a trim took it back to 313 MB.
fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim walks glibc's own free lists and takes no pointer from us.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A response, or a JSON document still to be written.
enum Rendering {
    Done(Response),
    Json {
        chunks: Box<sumi_render::series_json::JsonChunks<sumi_query::series::AnswerSeries>>,
        content_type: &'static str,
    },
}

/// Sends the chunks: whole when there is only one, otherwise as a stream that stops
/// (dropping the rest of the answer) when the client goes away.
fn stream_json(
    mut chunks: impl Iterator<Item = Vec<u8>>,
    content_type: &'static str,
    partial: Option<String>,
    reply: oneshot::Sender<Response>,
) {
    let first = chunks.next().unwrap_or_default();
    let Some(second) = chunks.next() else {
        let mut resp = (
            StatusCode::OK,
            [(header::CONTENT_TYPE, content_type)],
            first,
        )
            .into_response();
        crate::mark_partial(&mut resp, partial);
        let _ = reply.send(resp);
        return;
    };
    let (tx, rx) = mpsc::channel::<Bytes>(CHUNKS_IN_FLIGHT);
    let body = Body::from_stream(ChunkStream(rx));
    let mut resp = (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response();
    crate::mark_partial(&mut resp, partial);
    if reply.send(resp).is_err() {
        return;
    }
    for chunk in [first, second].into_iter().chain(chunks) {
        if tx.blocking_send(Bytes::from(chunk)).is_err() {
            return;
        }
    }
}

/// A response body fed by a channel.
pub(crate) struct ChunkStream(pub(crate) mpsc::Receiver<Bytes>);

impl futures_core::Stream for ChunkStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(Ok))
    }
}

/// 422 for a request over the query limits: the client can narrow it.
fn too_large(msg: impl std::fmt::Display) -> Response {
    text_error(StatusCode::UNPROCESSABLE_ENTITY, msg)
}

/// Evaluates the request; `big` is set when the answer is worth a
/// [`release_memory`] once it is sent, `partial` to the [`PARTIAL_HEADER`] value
/// when a cluster read lacked partitions.
///
/// [`PARTIAL_HEADER`]: crate::fanout::PARTIAL_HEADER
fn evaluate_and_render(
    state: &AppState,
    params: &Params,
    auth: Option<String>,
    big: &mut bool,
    partial: &mut Option<String>,
) -> Rendering {
    let done = Rendering::Done;
    let mut targets = params.get_all("target");
    if targets.is_empty() {
        targets = params.get_all("target[]");
    }
    let tz = request_tz(state, params);
    let range = match resolve_range(
        params.get("from"),
        params.get("until"),
        params.get("now"),
        tz,
        unix_now(),
    ) {
        Ok(r) => r,
        Err(e) => return done(bad_request(e)),
    };
    let format = format_of(params);
    if !matches!(
        format,
        "json" | "csv" | "raw" | "pickle" | "msgpack" | "png" | "svg"
    ) {
        return done(bad_request(format_args!(
            "format={format} is not supported (use json, csv, raw, pickle, msgpack, png or svg)"
        )));
    }
    let mut ctx = RequestContext::new(range, tz);
    ctx.max_data_points = params
        .get("maxDataPoints")
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(x) = params.get("xFilesFactor") {
        match x.trim().parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => ctx.x_files_factor = x,
            _ => {
                return done(bad_request(format_args!(
                    "xFilesFactor={x:?} is not a number between 0 and 1"
                )))
            }
        }
    }
    ctx.template = params
        .pairs()
        .filter_map(|(k, v)| {
            // graphite-web takes key[9:-1]: whatever the last character is
            k.strip_prefix("template[").map(|rest| {
                let mut name = rest.to_string();
                name.pop();
                (name, v.to_string())
            })
        })
        .collect();

    // a cluster node reads every partition from one of its replicas
    let cluster =
        crate::fanout_for(state, params).map(|f| ClusterSource::new(f, state.limits, auth));
    let local = StoreSource::with_limits(state.store.clone(), state.limits)
        .with_anomalies(state.anomalies.clone());
    let source: &dyn SeriesSource = match &cluster {
        Some(c) => c,
        None => &local,
    };
    let evaluator = Evaluator::new(source, &state.functions);
    let evaluated = evaluator.evaluate(&ctx, &targets);
    let points_read = match &cluster {
        Some(c) => {
            *partial = c.finish();
            c.points_read()
        }
        None => local.points_read(),
    };
    let answer = match evaluated {
        Ok(a) => a,
        Err(QueryError::Source(SourceError::TooLarge(msg))) => return done(too_large(msg)),
        Err(e) if e.is_input_error() => return done(bad_request(e)),
        Err(e) => return done(server_error(e)),
    };
    // a big answer, or a small one computed from many points (`sumSeries` of a
    // million series): the memory it took goes back once it is sent
    *big = answer.extents().map(|(_, _, n)| n).sum::<usize>() > BIG_ANSWER_POINTS
        || points_read > BIG_READ_POINTS;
    if format == "json" {
        let opts = JsonOptions {
            max_data_points: ctx.max_data_points,
            no_null_points: params.contains("noNullPoints"),
            pretty: params.get("pretty").is_some_and(|p| !p.is_empty()),
            jsonp: params.get("jsonp").map(str::to_string),
        };
        return Rendering::Json {
            content_type: json_content_type(&opts),
            chunks: Box::new(render_json_chunks(answer, &opts, CHUNK_BYTES)),
        };
    }
    let series = answer.into_vec();
    if matches!(format, "png" | "svg") {
        let format = image::format(format == "svg");
        return done(image::render(
            &series, params, tz, ctx.from, ctx.until, format,
        ));
    }
    let out = match format {
        "csv" => render_csv(&series, tz),
        "pickle" => sumi_render::render_pickle(&series),
        "msgpack" => sumi_render::render_msgpack(&series),
        _ => render_raw(&series),
    };
    done(rendered(out))
}
