//! GrowthForecast's API handlers: posting numbers (`/api/...`), the JSON reads and
//! lists (`/json/...`), creating, editing and deleting graphs and complex graphs, and
//! vertical rules. Validation messages and answers follow GrowthForecast's `Web.pm`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::db::{Complex, ComplexItem, ComplexSpec, Db, Graph, Vrule};
use super::form::parameters;
use super::json as gf_json;
use super::names::check_name;
use super::replicated::{Applied, Op, Target};
use super::view::{parse_datetime, Period};
use super::writer::{Mode, Post, SeriesRegistry};
use super::{blocking, GfError};
use crate::params::Params;
use crate::AppState;
use sumi_store::Store;

/// Timestamps at or below this are refused (rrdcreate's limit, kept by GrowthForecast).
const MIN_TIMESTAMP: i64 = 315_360_010;

fn is_color(s: &str, lengths: &[usize]) -> bool {
    s.strip_prefix('#')
        .is_some_and(|h| lengths.contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A finite decimal number (integers and floats; not `inf`, `nan` or hex).
fn parse_number(s: &str) -> Option<f64> {
    let t = s.trim();
    let plain = t
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'));
    t.parse::<f64>().ok().filter(|v| plain && v.is_finite())
}

/// Reads and validates a post's parameters, with GrowthForecast's messages.
pub fn read_post(
    service: String,
    section: String,
    graph: String,
    p: &Params,
    tz: chrono_tz::Tz,
) -> Result<Post, GfError> {
    let mut messages = Vec::new();
    for (what, name) in [
        ("service name", &service),
        ("section name", &section),
        ("graph name", &graph),
    ] {
        if let Err(e) = check_name(what, name) {
            messages.push(e.to_string());
        }
    }
    let number = match p.get("number").filter(|v| !v.is_empty()) {
        None => {
            messages.push("number is missing".to_string());
            0.0
        }
        Some(v) => parse_number(v).unwrap_or_else(|| {
            messages.push("a number is required for \"number\"".to_string());
            0.0
        }),
    };
    let mode = match p.get("mode").filter(|v| !v.is_empty()) {
        None => Mode::Gauge,
        Some(m) => Mode::parse(m).unwrap_or_else(|| {
            messages.push("count or gauge or modified or derive".to_string());
            Mode::Gauge
        }),
    };
    let color = match p.get("color").filter(|v| !v.is_empty()) {
        None => None,
        Some(c) if is_color(c, &[6, 8]) => Some(c.to_string()),
        Some(_) => {
            messages.push("invalid color format".to_string());
            None
        }
    };
    let mut timestamp = None;
    if let Some(t) = p.get("timestamp").filter(|v| !v.is_empty()) {
        match t.parse::<i64>() {
            Ok(t) if t > MIN_TIMESTAMP => timestamp = Some(t),
            _ => messages.push(
                "\"timestamp\" must be a INT number and greater than 315360010\"".to_string(),
            ),
        }
    }
    if let Some(d) = p.get("datetime").filter(|v| !v.is_empty()) {
        match parse_datetime(d, tz) {
            Some(t) if t > MIN_TIMESTAMP => timestamp = timestamp.or(Some(t)),
            _ => messages.push(
                "invalid datetime format or not later than '1979-12-30 00:00:10 UTC'".to_string(),
            ),
        }
    }
    if !messages.is_empty() {
        return Err(GfError::Invalid(messages));
    }
    Ok(Post {
        service,
        section,
        graph,
        number,
        mode,
        color,
        timestamp,
        description: p.get_all("description").last().map(|d| d.to_string()),
    })
}

/// `POST /api/:service/:section/:graph`.
pub async fn post_number(
    State(state): State<Arc<AppState>>,
    Path((service, section, graph)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, GfError> {
    let p = parameters(&headers, query.as_deref(), &body)
        .map_err(|e| GfError::BadRequest(e.to_string()))?;
    let post = read_post(service, section, graph, &p, state.default_tz)?;
    let g = state.gf.writer.post(post).await?;
    Ok(Json(json!({"error": 0, "data": gf_json::graph_row(&g, state.default_tz)})).into_response())
}

async fn graph_named(
    state: &Arc<AppState>,
    s: String,
    sec: String,
    g: String,
) -> Result<Graph, GfError> {
    blocking(state.clone(), move |st| {
        st.gf
            .db
            .graph(&s, &sec, &g)?
            .ok_or_else(|| GfError::NotFound(format!("graph {s}/{sec}/{g}")))
    })
    .await
}

/// `GET /api/:service/:section/:graph` (and `/json/graph/...` by name): the row.
pub async fn get_graph(
    State(state): State<Arc<AppState>>,
    Path((s, sec, g)): Path<(String, String, String)>,
) -> Result<Response, GfError> {
    let graph = graph_named(&state, s, sec, g).await?;
    Ok(Json(gf_json::graph_row(&graph, state.default_tz)).into_response())
}

/// `GET /json/graph/:service/:section/:graph`: the row, as `/api/...` answers it.
pub async fn json_graph_by_name(
    state: State<Arc<AppState>>,
    path: Path<(String, String, String)>,
) -> Result<Response, GfError> {
    get_graph(state, path).await
}

fn parse_id(id: &str) -> Result<i64, GfError> {
    id.parse::<i64>()
        .map_err(|_| GfError::NotFound(format!("graph id {id:?}")))
}

/// `GET /json/graph/:id`.
pub async fn json_graph_by_id(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, GfError> {
    let id = parse_id(&id)?;
    let g = blocking(state.clone(), move |st| {
        st.gf
            .db
            .graph_by_id(id)?
            .ok_or_else(|| GfError::NotFound(format!("graph {id}")))
    })
    .await?;
    Ok(Json(gf_json::graph_clean(&g, state.default_tz)).into_response())
}

/// `GET /json/complex/:service/:section/:graph`.
pub async fn json_complex_by_name(
    State(state): State<Arc<AppState>>,
    Path((s, sec, g)): Path<(String, String, String)>,
) -> Result<Response, GfError> {
    let c = blocking(state.clone(), move |st| {
        st.gf
            .db
            .complex(&s, &sec, &g)?
            .ok_or_else(|| GfError::NotFound(format!("complex graph {s}/{sec}/{g}")))
    })
    .await?;
    Ok(Json(gf_json::complex(&c, state.default_tz)).into_response())
}

/// `GET /json/complex/:id`.
pub async fn json_complex_by_id(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, GfError> {
    let id = parse_id(&id)?;
    let c = blocking(state.clone(), move |st| {
        st.gf
            .db
            .complex_by_id(id)?
            .ok_or_else(|| GfError::NotFound(format!("complex graph {id}")))
    })
    .await?;
    Ok(Json(gf_json::complex(&c, state.default_tz)).into_response())
}

/// `GET /json/list/graph`.
pub async fn list_graph(State(state): State<Arc<AppState>>) -> Result<Response, GfError> {
    let list = blocking(state, |st| {
        Ok(st
            .gf
            .db
            .graphs()?
            .iter()
            .map(|g| gf_json::name_entry(g.id, &g.service_name, &g.section_name, &g.graph_name))
            .collect::<Vec<_>>())
    })
    .await?;
    Ok(Json(list).into_response())
}

/// `GET /json/list/complex`.
pub async fn list_complex(State(state): State<Arc<AppState>>) -> Result<Response, GfError> {
    let list = blocking(state, |st| {
        Ok(st
            .gf
            .db
            .complexes()?
            .iter()
            .map(|c| gf_json::name_entry(c.id, &c.service_name, &c.section_name, &c.graph_name))
            .collect::<Vec<_>>())
    })
    .await?;
    Ok(Json(list).into_response())
}

/// `GET /json/list/all`: every graph, then every complex graph.
pub async fn list_all(State(state): State<Arc<AppState>>) -> Result<Response, GfError> {
    let list = blocking(state, |st| {
        let tz = st.default_tz;
        let mut out: Vec<Value> = st
            .gf
            .db
            .graphs()?
            .iter()
            .map(|g| gf_json::graph_clean(g, tz))
            .collect();
        out.extend(
            st.gf
                .db
                .complexes()?
                .iter()
                .map(|c| gf_json::complex(c, tz)),
        );
        Ok(out)
    })
    .await?;
    Ok(Json(list).into_response())
}

/// `GET /json/list/graph_tree`.
pub async fn list_tree(State(state): State<Arc<AppState>>) -> Result<Response, GfError> {
    let tree = blocking(state, |st| Ok(gf_json::graph_tree(&st.gf.db.graphs()?))).await?;
    Ok(Json(tree).into_response())
}

fn json_body(body: &[u8]) -> Result<Map<String, Value>, GfError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(GfError::BadRequest("the body must be a JSON object".into())),
        Err(e) => Err(GfError::BadRequest(format!("the body is not JSON: {e}"))),
    }
}

/// A JSON value as text (GrowthForecast's clients send numbers as strings too).
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
        _ => None,
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty() && s != "0",
        _ => false,
    }
}

const DRAW_TYPES: &[&str] = &["AREA", "LINE1", "LINE2"];

/// Reads the items of a complex graph (`data`), checking that their graphs exist.
fn complex_items(
    db: &Db,
    data: &Value,
    messages: &mut Vec<String>,
) -> Result<Vec<ComplexItem>, GfError> {
    let Some(list) = data.as_array() else {
        messages.push("data must be a list of sub graphs".into());
        return Ok(Vec::new());
    };
    let mut items = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let graph_id = d
            .get("graph_id")
            .and_then(text_of)
            .and_then(|t| t.parse::<i64>().ok());
        let Some(graph_id) = graph_id else {
            messages.push(format!("data[{i}].graph_id is missing or not a number"));
            continue;
        };
        if db.graph_by_id(graph_id)?.is_none() {
            messages.push(format!("data[{i}].graph_id {graph_id} is not a graph"));
        }
        let draw = d
            .get("type")
            .and_then(text_of)
            .unwrap_or_else(|| "AREA".into());
        if !DRAW_TYPES.contains(&draw.as_str()) {
            messages.push(format!(
                "data[{i}].type {draw:?} is invalid (AREA, LINE1 or LINE2)"
            ));
        }
        let gmode = d
            .get("gmode")
            .and_then(text_of)
            .unwrap_or_else(|| "gauge".into());
        if !matches!(gmode.as_str(), "gauge" | "subtract") {
            messages.push(format!(
                "data[{i}].gmode {gmode:?} is invalid (gauge or subtract)"
            ));
        }
        let stack = d.get("stack").is_none_or(truthy);
        items.push(ComplexItem {
            graph_id,
            draw,
            gmode,
            stack,
        });
    }
    Ok(items)
}

fn sort_of(v: Option<&Value>, default: i64, messages: &mut Vec<String>) -> i64 {
    match v.and_then(text_of) {
        None => default,
        Some(t) => match t.parse::<i64>() {
            Ok(s) if (0..=19).contains(&s) => s,
            _ => {
                messages.push(format!("sort {t:?} is invalid (0 to 19)"));
                default
            }
        },
    }
}

/// Builds a complex graph's settings from a JSON body over `base` (an edit keeps
/// what the body does not mention).
fn complex_spec(
    db: &Db,
    body: &Map<String, Value>,
    base: Option<&Complex>,
) -> Result<ComplexSpec, GfError> {
    let mut messages = Vec::new();
    let name =
        |key: &str, what: &'static str, current: Option<&String>, messages: &mut Vec<String>| {
            let v = body
                .get(key)
                .and_then(text_of)
                .or_else(|| current.cloned())
                .unwrap_or_default();
            if let Err(e) = check_name(what, &v) {
                messages.push(e.to_string());
            }
            v
        };
    let service_name = name(
        "service_name",
        "service_name",
        base.map(|b| &b.service_name),
        &mut messages,
    );
    let section_name = name(
        "section_name",
        "section_name",
        base.map(|b| &b.section_name),
        &mut messages,
    );
    let graph_name = name(
        "graph_name",
        "graph_name",
        base.map(|b| &b.graph_name),
        &mut messages,
    );
    let description = body
        .get("description")
        .and_then(text_of)
        .or_else(|| base.map(|b| b.description.clone()))
        .unwrap_or_default();
    let sort = sort_of(body.get("sort"), base.map_or(19, |b| b.sort), &mut messages);
    let sumup = body
        .get("sumup")
        .map_or(base.is_some_and(|b| b.sumup), truthy);
    let items = match body.get("data") {
        Some(d) => complex_items(db, d, &mut messages)?,
        None => base.map(|b| b.items.clone()).unwrap_or_default(),
    };
    if !messages.is_empty() {
        return Err(GfError::Invalid(messages));
    }
    Ok(ComplexSpec {
        service_name,
        section_name,
        graph_name,
        description,
        sort,
        sumup,
        items,
    })
}

/// Where GrowthForecast sends a browser after a change: the section's page.
fn location(headers: &HeaderMap, service: &str, section: Option<&str>) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let mut url = format!(
        "http://{host}/list/{}",
        crate::ui::html::path_escape(service)
    );
    if let Some(sec) = section {
        url.push('/');
        url.push_str(&crate::ui::html::path_escape(sec));
    }
    url
}

/// `POST /json/create/complex`: a JSON body with the names, `description`, `sumup`,
/// `sort` and `data` (at least two `{graph_id, type, gmode, stack}`).
pub async fn create_complex(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, GfError> {
    let body = json_body(&body)?;
    let c = run(state, Op::CreateComplex { body }).await?.complex()?;
    let loc = location(&headers, &c.service_name, Some(&c.section_name));
    Ok(Json(json!({"error": 0, "location": loc})).into_response())
}

/// Runs a mutation: on a single node here, in a cluster through the metadata log.
async fn run(state: Arc<AppState>, op: Op) -> Result<Applied, GfError> {
    blocking(state, move |st| st.gf.run(&st.store, op)).await
}

/// Applies one mutation to `db` (and deletes the store series of deleted graphs), as
/// received at `now`: what a single node runs for a request, and every cluster node's
/// applier for each op of the metadata log. Posts are `writer.rs`'s.
pub(crate) fn apply_op(
    db: &Db,
    store: &Store,
    registry: &SeriesRegistry,
    op: &Op,
    now: i64,
) -> Result<Applied, GfError> {
    match op {
        Op::Posts { posts } => {
            let posts: Vec<&Post> = posts.iter().collect();
            Ok(Applied::Posts(db.with_conn(|c| {
                super::writer::apply_posts(c, registry, &posts, now)
            })?))
        }
        Op::CreateComplex { body } => {
            if body
                .get("data")
                .and_then(Value::as_array)
                .is_none_or(|d| d.len() < 2)
            {
                return Err(GfError::BadRequest(
                    "Invalid argument: data (sub graph list (size >= 2)) required".into(),
                ));
            }
            let spec = complex_spec(db, body, None)?;
            Ok(Applied::Complex(db.create_complex(&spec, now)?))
        }
        Op::EditGraph { id, body } => {
            let g = db
                .graph_by_id(*id)?
                .ok_or_else(|| GfError::NotFound(format!("graph {id}")))?;
            let g = edit_graph(g, body)?;
            db.update_graph(&g)?;
            Ok(Applied::Done)
        }
        Op::EditComplex { id, body } => {
            let c = db
                .complex_by_id(*id)?
                .ok_or_else(|| GfError::NotFound(format!("complex graph {id}")))?;
            let spec = complex_spec(db, body, Some(&c))?;
            db.update_complex(*id, &spec, now)?;
            Ok(Applied::Done)
        }
        Op::DeleteGraph { target } => {
            let g = match target {
                Target::Id(id) => db
                    .delete_graph(*id)?
                    .ok_or_else(|| GfError::NotFound(format!("graph {id}")))?,
                Target::Name(s, sec, g) => {
                    let g = db
                        .graph(s, sec, g)?
                        .ok_or_else(|| GfError::NotFound(format!("graph {s}/{sec}/{g}")))?;
                    db.delete_graph(g.id)?;
                    g
                }
            };
            delete_graph_data(store, &g)?;
            Ok(Applied::Graph(Box::new(g)))
        }
        Op::DeleteComplex {
            target,
            with_graphs,
        } => {
            let c = match target {
                Target::Id(id) => db
                    .complex_by_id(*id)?
                    .ok_or_else(|| GfError::NotFound(format!("complex graph {id}")))?,
                Target::Name(s, sec, g) => db
                    .complex(s, sec, g)?
                    .ok_or_else(|| GfError::NotFound(format!("complex graph {s}/{sec}/{g}")))?,
            };
            Ok(Applied::Complex(delete_complex_in(
                db,
                store,
                c,
                *with_graphs,
            )?))
        }
        Op::DeleteSection { service, section } => {
            for entry in db.section(service, section)? {
                match entry {
                    super::db::Entry::Graph(g) => {
                        db.delete_graph(g.id)?;
                        delete_graph_data(store, &g)?;
                    }
                    super::db::Entry::Complex(c) => {
                        db.delete_complex(c.id)?;
                    }
                }
            }
            Ok(Applied::Done)
        }
        Op::AddVrule { vrule } => Ok(Applied::Vrule(db.add_vrule(vrule)?)),
        // the data consumers deleted at the markers; deleting here too would delete
        // later points on a node further along the data topic than another
        Op::DeleteSeries { marked: true, .. } => Ok(Applied::Series(Vec::new())),
        Op::DeleteSeries { targets, .. } => {
            let patterns: Vec<&str> = targets.iter().map(String::as_str).collect();
            let names = store
                .delete_series(&patterns)
                .map_err(|e| GfError::Internal(format!("deleting series {targets:?}: {e}")))?;
            Ok(Applied::Series(names))
        }
    }
}

/// Applies a JSON edit to a graph: every field given replaces the current one.
fn edit_graph(mut g: Graph, body: &Map<String, Value>) -> Result<Graph, GfError> {
    let mut messages = Vec::new();
    let get = |k: &str| body.get(k).and_then(text_of);
    for (key, what, field) in [
        ("service_name", "service_name", &mut g.service_name),
        ("section_name", "section_name", &mut g.section_name),
        ("graph_name", "graph_name", &mut g.graph_name),
    ] {
        if let Some(v) = get(key) {
            match check_name(what, &v) {
                Ok(()) => *field = v,
                Err(e) => messages.push(e.to_string()),
            }
        }
    }
    if let Some(d) = get("description") {
        g.description = d;
    }
    g.sort = sort_of(body.get("sort"), g.sort, &mut messages);
    if let Some(m) = get("gmode") {
        if matches!(m.as_str(), "gauge" | "subtract" | "both") {
            g.gmode = m;
        } else {
            messages.push(format!("gmode {m:?} is invalid (gauge, subtract or both)"));
        }
    }
    if let Some(c) = get("color") {
        if is_color(&c, &[6]) {
            g.color = c;
        } else {
            messages.push("color supports #000000 format".into());
        }
    }
    for (key, field) in [("type", &mut g.draw), ("stype", &mut g.stype)] {
        if let Some(t) = get(key) {
            if DRAW_TYPES.contains(&t.as_str()) {
                *field = t;
            } else {
                messages.push(format!("{key} {t:?} is invalid (AREA, LINE1 or LINE2)"));
            }
        }
    }
    for (key, field) in [
        ("llimit", &mut g.llimit),
        ("ulimit", &mut g.ulimit),
        ("sllimit", &mut g.sllimit),
        ("sulimit", &mut g.sulimit),
    ] {
        if let Some(v) = get(key) {
            match parse_number(&v) {
                Some(x) => *field = x,
                None => messages.push(format!("{key}: a number is required")),
            }
        }
    }
    if let Some(a) = get("adjust") {
        if a == "*" || a == "/" {
            g.adjust = a;
        } else {
            messages.push("adjust must be * or /".into());
        }
    }
    if let Some(v) = get("adjustval") {
        if v.parse::<u64>().is_ok_and(|n| n > 0) {
            g.adjustval = v;
        } else {
            messages.push("adjustval: a integral number is required".into());
        }
    }
    if let Some(u) = get("unit") {
        g.unit = u;
    }
    if messages.is_empty() {
        Ok(g)
    } else {
        Err(GfError::Invalid(messages))
    }
}

/// `POST /json/edit/graph/:id` and `/json/edit/complex/:id`.
pub async fn edit(
    State(state): State<Arc<AppState>>,
    Path((kind, id)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, GfError> {
    let id = parse_id(&id)?;
    let body = json_body(&body)?;
    let op = match kind.as_str() {
        "graph" => Op::EditGraph { id, body },
        "complex" => Op::EditComplex { id, body },
        other => return Err(GfError::NotFound(format!("kind {other:?}"))),
    };
    run(state, op).await?;
    Ok(Json(json!({"error": 0})).into_response())
}

fn deleted(headers: &HeaderMap, service: &str, section: &str) -> Response {
    Json(json!({"error": 0, "location": location(headers, service, Some(section))})).into_response()
}

/// `POST /json/delete/graph/:service/:section/:graph` (and `/delete/...`).
pub async fn delete_graph_by_name(
    State(state): State<Arc<AppState>>,
    Path((s, sec, g)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response, GfError> {
    let target = Target::Name(s, sec, g);
    let graph = run(state, Op::DeleteGraph { target }).await?.graph()?;
    Ok(deleted(&headers, &graph.service_name, &graph.section_name))
}

/// Deletes the store series of a graph the database just dropped, as GrowthForecast
/// deletes the graph's RRD file: a graph created again under the name starts empty.
/// (In a cluster every node applies the delete: the storage nodes that hold the
/// series delete it.)
fn delete_graph_data(store: &Store, g: &Graph) -> Result<(), GfError> {
    store
        .delete_series_named(&[g.series.as_str()])
        .map_err(|e| GfError::Internal(format!("deleting the data of {}: {e}", g.series)))?;
    Ok(())
}

/// `POST /json/delete/graph/:id`.
pub async fn delete_graph_by_id(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, GfError> {
    let target = Target::Id(parse_id(&id)?);
    let graph = run(state, Op::DeleteGraph { target }).await?.graph()?;
    Ok(deleted(&headers, &graph.service_name, &graph.section_name))
}

/// Whether the request asks to delete a complex graph's graphs too (`delete_graph`
/// in a JSON body or as a parameter).
fn wants_graphs_deleted(headers: &HeaderMap, query: Option<&str>, body: &[u8]) -> bool {
    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(body) {
        if let Some(v) = m.get("delete_graph") {
            return truthy(v);
        }
    }
    parameters(headers, query, body)
        .ok()
        .and_then(|p| p.get("delete_graph").map(|v| !v.is_empty() && v != "0"))
        .unwrap_or(false)
}

fn delete_complex_in(
    db: &Db,
    store: &Store,
    c: Complex,
    with_graphs: bool,
) -> Result<Complex, GfError> {
    if with_graphs {
        for item in &c.items {
            if let Some(g) = db.delete_graph(item.graph_id)? {
                delete_graph_data(store, &g)?;
            }
        }
    }
    db.delete_complex(c.id)?;
    Ok(c)
}

/// `POST /json/delete/complex/:service/:section/:graph`.
pub async fn delete_complex_by_name(
    State(state): State<Arc<AppState>>,
    Path((s, sec, g)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, GfError> {
    let with_graphs = wants_graphs_deleted(&headers, query.as_deref(), &body);
    let op = Op::DeleteComplex {
        target: Target::Name(s, sec, g),
        with_graphs,
    };
    let c = run(state, op).await?.complex()?;
    Ok(deleted(&headers, &c.service_name, &c.section_name))
}

/// `POST /json/delete/complex/:id` (and `/delete_complex/:id`).
pub async fn delete_complex_by_id(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, GfError> {
    let id = parse_id(&id)?;
    let with_graphs = wants_graphs_deleted(&headers, query.as_deref(), &body);
    let op = Op::DeleteComplex {
        target: Target::Id(id),
        with_graphs,
    };
    let c = run(state, op).await?.complex()?;
    Ok(deleted(&headers, &c.service_name, &c.section_name))
}

/// `POST /delete/:service/:section`: every graph and complex graph of a section.
pub async fn delete_section(
    State(state): State<Arc<AppState>>,
    Path((s, sec)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, GfError> {
    let service = s.clone();
    run(
        state,
        Op::DeleteSection {
            service: s,
            section: sec,
        },
    )
    .await?;
    Ok(Json(json!({"error": 0, "location": location(&headers, &service, None)})).into_response())
}

fn graph_path(path: Option<&str>) -> String {
    let parts: Vec<&str> = path
        .unwrap_or("")
        .split('/')
        .filter(|p| !p.is_empty())
        .take(3)
        .collect();
    format!("/{}", parts.join("/"))
}

/// `POST /vrule/api[/:service[/:section[/:graph]]]`: `time` (epoch or a date),
/// `color`, `description`, `dashes`.
pub async fn add_vrule(
    State(state): State<Arc<AppState>>,
    path: Option<Path<String>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, GfError> {
    let p = parameters(&headers, query.as_deref(), &body)
        .map_err(|e| GfError::BadRequest(e.to_string()))?;
    let mut messages = Vec::new();
    let time = match p.get("time").filter(|t| !t.is_empty()) {
        None => crate::unix_now(),
        Some(t) => parse_datetime(t, state.default_tz).unwrap_or_else(|| {
            messages.push("epoch time or date string is required for \"time\"".to_string());
            0
        }),
    };
    let color = p
        .get("color")
        .filter(|c| !c.is_empty())
        .unwrap_or("#FF0000")
        .to_string();
    if !is_color(&color, &[6, 8]) {
        messages.push("invalid color format".into());
    }
    if !messages.is_empty() {
        return Err(GfError::Invalid(messages));
    }
    let v = Vrule {
        id: 0,
        graph_path: graph_path(path.as_ref().map(|p| p.0.as_str())),
        time,
        color,
        description: p.get("description").unwrap_or("").to_string(),
        dashes: p.get("dashes").unwrap_or("").to_string(),
    };
    let v = run(state, Op::AddVrule { vrule: v }).await?.vrule()?;
    Ok(Json(json!({"error": 0, "data": vrule_json(&v)})).into_response())
}

fn vrule_json(v: &Vrule) -> Value {
    json!({
        "id": v.id,
        "graph_path": v.graph_path,
        "time": v.time,
        "color": v.color,
        "description": v.description,
        "dashes": v.dashes,
    })
}

/// `GET /vrule/summary[/...]`: the rules that apply to a path, over `t` (default
/// `all`) or `from`/`to`.
pub async fn vrule_summary(
    State(state): State<Arc<AppState>>,
    path: Option<Path<String>>,
    RawQuery(query): RawQuery,
) -> Result<Response, GfError> {
    let p = Params::parse(query.as_deref(), None);
    let now = crate::unix_now();
    let (from, until) = match p.get("t").filter(|t| !t.is_empty()).unwrap_or("all") {
        "all" => (0, i64::from(u32::MAX)),
        t => {
            let period = Period::parse(Some(t), p.get("from"), p.get("to"), now, state.default_tz)?;
            (period.from, period.until)
        }
    };
    let gp = graph_path(path.as_ref().map(|p| p.0.as_str()));
    let rules = blocking(state, move |st| Ok(st.gf.db.vrules(&gp, from, until)?)).await?;
    Ok(Json(rules.iter().map(vrule_json).collect::<Vec<_>>()).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::Tz;

    fn params(q: &str) -> Params {
        Params::parse(Some(q), None)
    }

    #[test]
    fn posts_are_validated_like_growthforecast() {
        let ok = read_post(
            "s".into(),
            "t".into(),
            "g".into(),
            &params("number=10&mode=count&color=%23aabbcc"),
            Tz::UTC,
        )
        .unwrap();
        assert_eq!(
            (ok.number, ok.mode, ok.color.as_deref()),
            (10.0, Mode::Count, Some("#aabbcc"))
        );
        let f = read_post(
            "s".into(),
            "t".into(),
            "g".into(),
            &params("number=-1.5e3&description=a&description=b"),
            Tz::UTC,
        )
        .unwrap();
        assert_eq!(
            (f.number, f.mode, f.description.as_deref()),
            (-1500.0, Mode::Gauge, Some("b"))
        );
        let err = read_post(
            "s".into(),
            "t".into(),
            "g".into(),
            &params("mode=x&color=red&timestamp=5"),
            Tz::UTC,
        );
        let Err(GfError::Invalid(m)) = err else {
            panic!("{err:?}")
        };
        assert_eq!(
            m,
            [
                "number is missing",
                "count or gauge or modified or derive",
                "invalid color format",
                "\"timestamp\" must be a INT number and greater than 315360010\""
            ]
        );
        for bad in ["abc", "inf", "NaN", "0x10", ""] {
            let r = read_post(
                "s".into(),
                "t".into(),
                "g".into(),
                &params(&format!("number={bad}")),
                Tz::UTC,
            );
            assert!(matches!(r, Err(GfError::Invalid(_))), "{bad}");
        }
        let t = read_post(
            "s".into(),
            "t".into(),
            "g".into(),
            &params("number=1&datetime=2023-11-14T22:13:20Z"),
            Tz::UTC,
        )
        .unwrap();
        assert_eq!(t.timestamp, Some(1_700_000_000));
        let e = read_post(
            String::new(),
            "t".into(),
            "g".into(),
            &params("number=1"),
            Tz::UTC,
        );
        assert!(matches!(e, Err(GfError::Invalid(_))));
    }

    #[test]
    fn edits_validate_each_field() {
        let g = super::super::json::tests::graph(1, "s", "t", "g");
        let body = json!({"graph_name": "h", "sort": "7", "type": "LINE2", "ulimit": 50, "adjust": "/", "adjustval": "1000", "unit": "ms", "color": "#ABCDEF"});
        let e = edit_graph(g.clone(), body.as_object().unwrap()).unwrap();
        assert_eq!(
            (e.graph_name.as_str(), e.sort, e.draw.as_str(), e.ulimit),
            ("h", 7, "LINE2", 50.0)
        );
        assert_eq!(
            (
                e.adjust.as_str(),
                e.adjustval.as_str(),
                e.unit.as_str(),
                e.color.as_str()
            ),
            ("/", "1000", "ms", "#ABCDEF")
        );
        let bad =
            json!({"sort": 25, "type": "AREA3", "color": "red", "adjustval": "0", "gmode": "x"});
        let Err(GfError::Invalid(m)) = edit_graph(g, bad.as_object().unwrap()) else {
            panic!()
        };
        assert_eq!(m.len(), 5, "{m:?}");
    }

    #[test]
    fn vrule_paths() {
        assert_eq!(graph_path(None), "/");
        assert_eq!(graph_path(Some("a/b")), "/a/b");
        assert_eq!(graph_path(Some("a/b/c/d")), "/a/b/c");
    }
}
