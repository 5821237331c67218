//! `sumi import growthforecast GF_DATA_DIR`: GrowthForecast's graphs, complex graphs
//! and vertical rules (from `gforecast.db`) with each graph's history (from its RRD
//! files; or from a mysqldump of its MySQL database, `--mysql-dump`) into a data directory (`--data-dir`, `--config`, no server running on it) or
//! into a running server (`--url`).
//!
//! First the history: one unit of the import job ([`sumi_import::job`]) per graph,
//! its series built by [`sumi_import::growthforecast::graph_series`] and written as the
//! whisper import writes (fill semantics, resumable). Then the metadata, in the
//! order GrowthForecast's pages need it: graphs (created, or a graph sumi already has
//! under the same names takes GrowthForecast's settings), complex graphs (their items
//! mapped to the sumi ids of their graphs), vertical rules (those not already there).
//! With `--data-dir` the rows go into sumi's `growthforecast.db` directly, keeping
//! GrowthForecast's ids where they are free; with `--url` (or `--config` of a cluster
//! node, which then imports through that running node) through GrowthForecast's API
//! on the server (`POST /api/...` creates a graph with its current number, then
//! `/json/edit/graph/:id`, `/json/create/complex`, `/vrule/api`), after its history,
//! so that the series is created with the files' archives.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use sumi_http::growthforecast::db::{ComplexItem, ComplexSpec, Vrule};
use sumi_http::growthforecast::names::series_name;
use sumi_http::growthforecast::{Db, Graph};
use sumi_import::growthforecast::{self as gf, GfComplex, GfGraph, GfVrule};
use sumi_import::job::{self, Skip};
use sumi_model::SystemClock;
use sumi_server::config::{Config, ServeFlags};
use sumi_store::Store;

use crate::import::{absolute, job_options, token_from_file, HttpTarget, ImportFlags, StoreTarget};

/// What the metadata pass did.
#[derive(Debug, Default)]
pub(crate) struct MetaCounts {
    graphs: u64,
    graphs_created: u64,
    complexes: u64,
    complexes_created: u64,
    vrules: u64,
    vrules_added: u64,
}

impl MetaCounts {
    pub(crate) fn to_text(&self) -> String {
        format!(
            "graphs: {} ({} created, {} updated)\n\
             complex graphs: {} ({} created, {} updated)\n\
             vertical rules: {} ({} added, {} already there)\n",
            self.graphs,
            self.graphs_created,
            self.graphs - self.graphs_created,
            self.complexes,
            self.complexes_created,
            self.complexes - self.complexes_created,
            self.vrules,
            self.vrules_added,
            self.vrules - self.vrules_added,
        )
    }
}

/// Where the metadata goes.
trait Meta {
    /// The series of the graph sumi has under these names, if it has one.
    fn existing_series(&self, g: &GfGraph) -> Result<Option<String>, String>;
    /// Creates or updates a graph; its sumi id and whether it was created.
    fn graph(&self, g: &GfGraph, series: &str, derive: bool) -> Result<(i64, bool), String>;
    /// Creates or updates a complex graph with items of sumi ids; whether created.
    fn complex(&self, c: &GfComplex, items: &[ComplexItem]) -> Result<bool, String>;
    /// Adds a vertical rule unless the same one is there; whether added.
    fn vrule(&self, v: &GfVrule) -> Result<bool, String>;
}

/// sumi's metadata database, opened directly.
struct DbMeta(Db);

impl Meta for DbMeta {
    fn existing_series(&self, g: &GfGraph) -> Result<Option<String>, String> {
        Ok(self
            .0
            .graph(&g.service, &g.section, &g.graph)
            .map_err(|e| e.to_string())?
            .map(|x| x.series))
    }

    fn graph(&self, g: &GfGraph, series: &str, derive: bool) -> Result<(i64, bool), String> {
        let row = Graph {
            id: g.id,
            service_name: g.service.clone(),
            section_name: g.section.clone(),
            graph_name: g.graph.clone(),
            series: series.to_string(),
            number: g.number,
            mode: g.mode.clone(),
            derive,
            description: g.description.clone(),
            sort: g.sort,
            gmode: g.gmode.clone(),
            color: g.color.clone(),
            ulimit: g.ulimit,
            llimit: g.llimit,
            sulimit: g.sulimit,
            sllimit: g.sllimit,
            draw: g.draw.clone(),
            stype: g.stype.clone(),
            adjust: g.adjust.clone(),
            adjustval: g.adjustval.clone(),
            unit: g.unit.clone(),
            created_at: g.created_at,
            updated_at: g.updated_at,
            timestamp: g.timestamp,
        };
        self.0.import_graph(&row).map_err(|e| e.to_string())
    }

    fn complex(&self, c: &GfComplex, items: &[ComplexItem]) -> Result<bool, String> {
        let spec = ComplexSpec {
            service_name: c.service.clone(),
            section_name: c.section.clone(),
            graph_name: c.graph.clone(),
            description: c.description.clone(),
            sort: c.sort,
            sumup: c.sumup,
            items: items.to_vec(),
        };
        self.0
            .import_complex(&spec, c.id, c.created_at, c.updated_at)
            .map(|(_, created)| created)
            .map_err(|e| e.to_string())
    }

    fn vrule(&self, v: &GfVrule) -> Result<bool, String> {
        let there = self
            .0
            .vrules(&v.graph_path, v.time, v.time)
            .map_err(|e| e.to_string())?
            .iter()
            .any(|x| same_vrule(x, v));
        if there {
            return Ok(false);
        }
        self.0
            .add_vrule(&Vrule {
                id: 0,
                graph_path: v.graph_path.clone(),
                time: v.time,
                color: v.color.clone(),
                description: v.description.clone(),
                dashes: v.dashes.clone(),
            })
            .map_err(|e| e.to_string())?;
        Ok(true)
    }
}

fn same_vrule(x: &Vrule, v: &GfVrule) -> bool {
    x.graph_path == v.graph_path
        && x.time == v.time
        && x.color == v.color
        && x.description == v.description
        && x.dashes == v.dashes
}

/// A running server, through GrowthForecast's API.
struct HttpMeta {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
    /// The vertical rules of each path, read once.
    vrules: Mutex<HashMap<String, Vec<Value>>>,
}

/// A path segment, percent-encoded (every byte but the unreserved ones).
fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn names_path(service: &str, section: &str, graph: &str) -> String {
    format!("{}/{}/{}", seg(service), seg(section), seg(graph))
}

/// A number as a form or JSON value: whole numbers without a fraction.
fn num_text(x: f64) -> String {
    format!("{x}")
}

impl HttpMeta {
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Body<'_>>,
    ) -> Result<(u16, String), String> {
        let url = format!("{}{path}", self.base);
        let mut r = self.agent.request(method, &url);
        if let Some(t) = &self.token {
            r = r.set("Authorization", &format!("Bearer {t}"));
        }
        let res = match body {
            None => r.call(),
            Some(Body::Form(f)) => r.send_form(f),
            Some(Body::Json(v)) => r
                .set("Content-Type", "application/json")
                .send_string(&v.to_string()),
        };
        match res {
            Ok(resp) => {
                let code = resp.status();
                Ok((code, resp.into_string().map_err(|e| format!("{url}: {e}"))?))
            }
            Err(ureq::Error::Status(code, resp)) => {
                Ok((code, resp.into_string().unwrap_or_default()))
            }
            Err(e) => Err(format!("{url}: {e}")),
        }
    }

    fn json(&self, method: &str, path: &str, body: Option<Body<'_>>) -> Result<Value, String> {
        let (code, text) = self.send(method, path, body)?;
        if code != 200 {
            return Err(format!("{method} {path} answered {code}: {}", text.trim()));
        }
        serde_json::from_str(&text).map_err(|e| format!("{method} {path}: not JSON: {e}"))
    }

    fn existing(
        &self,
        kind: &str,
        service: &str,
        section: &str,
        graph: &str,
    ) -> Result<Option<Value>, String> {
        let path = format!("/json/{kind}/{}", names_path(service, section, graph));
        let (code, text) = self.send("GET", &path, None)?;
        match code {
            404 => Ok(None),
            200 => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("GET {path}: not JSON: {e}")),
            c => Err(format!("GET {path} answered {c}: {}", text.trim())),
        }
    }
}

enum Body<'a> {
    Form(&'a [(&'a str, &'a str)]),
    Json(Value),
}

impl Meta for HttpMeta {
    fn existing_series(&self, g: &GfGraph) -> Result<Option<String>, String> {
        Ok(self
            .existing("graph", &g.service, &g.section, &g.graph)?
            .and_then(|v| v["series"].as_str().map(str::to_string)))
    }

    fn graph(&self, g: &GfGraph, _series: &str, derive: bool) -> Result<(i64, bool), String> {
        let (id, created) = match self.existing("graph", &g.service, &g.section, &g.graph)? {
            Some(v) => (v["id"].as_i64().ok_or("a graph without an id")?, false),
            None => {
                let number = num_text(g.number);
                let mode = if derive { "derive" } else { g.mode.as_str() };
                // at the server's time: GrowthForecast held the number until now (its
                // worker samples it every minute), and a point at the time of the last
                // post would land in a slot whose sample was the number before it
                let form: Vec<(&str, &str)> = vec![
                    ("number", &number),
                    ("mode", mode),
                    ("color", &g.color),
                    ("description", &g.description),
                ];
                let path = format!("/api/{}", names_path(&g.service, &g.section, &g.graph));
                let v = self.json("POST", &path, Some(Body::Form(&form)))?;
                (
                    v["data"]["id"].as_i64().ok_or("the post answered no id")?,
                    true,
                )
            }
        };
        let edit = json!({
            "description": g.description,
            "sort": g.sort,
            "gmode": g.gmode,
            "color": g.color,
            "type": g.draw,
            "stype": g.stype,
            "ulimit": g.ulimit,
            "llimit": g.llimit,
            "sulimit": g.sulimit,
            "sllimit": g.sllimit,
            "adjust": g.adjust,
            "adjustval": g.adjustval,
            "unit": g.unit,
        });
        self.json(
            "POST",
            &format!("/json/edit/graph/{id}"),
            Some(Body::Json(edit)),
        )?;
        Ok((id, created))
    }

    fn complex(&self, c: &GfComplex, items: &[ComplexItem]) -> Result<bool, String> {
        let body = json!({
            "service_name": c.service,
            "section_name": c.section,
            "graph_name": c.graph,
            "description": c.description,
            "sort": c.sort,
            "sumup": c.sumup,
            "data": items.iter().map(|i| json!({
                "graph_id": i.graph_id,
                "type": i.draw,
                "gmode": i.gmode,
                "stack": i.stack,
            })).collect::<Vec<_>>(),
        });
        match self.existing("complex", &c.service, &c.section, &c.graph)? {
            Some(v) => {
                let id = v["id"].as_i64().ok_or("a complex graph without an id")?;
                self.json(
                    "POST",
                    &format!("/json/edit/complex/{id}"),
                    Some(Body::Json(body)),
                )?;
                Ok(false)
            }
            None => {
                self.json("POST", "/json/create/complex", Some(Body::Json(body)))?;
                Ok(true)
            }
        }
    }

    fn vrule(&self, v: &GfVrule) -> Result<bool, String> {
        let path: String = v
            .graph_path
            .split('/')
            .filter(|p| !p.is_empty())
            .map(|p| format!("/{}", seg(p)))
            .collect();
        let mut cache = self.vrules.lock().unwrap_or_else(|e| e.into_inner());
        if !cache.contains_key(&path) {
            let got = self.json("GET", &format!("/vrule/summary{path}?t=all"), None)?;
            cache.insert(path.clone(), got.as_array().cloned().unwrap_or_default());
        }
        let there = cache[&path].iter().any(|x| {
            x["graph_path"] == v.graph_path.as_str()
                && x["time"] == v.time
                && x["color"] == v.color.as_str()
                && x["description"] == v.description.as_str()
                && x["dashes"] == v.dashes.as_str()
        });
        if there {
            return Ok(false);
        }
        let time = v.time.to_string();
        let form = [
            ("time", time.as_str()),
            ("color", v.color.as_str()),
            ("description", v.description.as_str()),
            ("dashes", v.dashes.as_str()),
        ];
        let added = self.json(
            "POST",
            &format!("/vrule/api{path}"),
            Some(Body::Form(&form)),
        )?;
        if let Some(list) = cache.get_mut(&path) {
            list.push(added["data"].clone());
        }
        Ok(true)
    }
}

fn is_hex_color(c: &str) -> bool {
    c.len() == 7 && c.starts_with('#') && c[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Settings sumi refuses replaced by GrowthForecast's defaults; a note for each.
fn fix_graph(g: &mut GfGraph) -> Vec<String> {
    let mut notes = Vec::new();
    let mut fix = |what: &str, field: &mut String, ok: bool, default: &str| {
        if !ok {
            notes.push(format!(
                "{what} {field:?} is not valid, imported as {default:?}"
            ));
            *field = default.to_string();
        }
    };
    // "-": the mode GrowthForecast gave rows older than its mode column
    if g.mode == "-" {
        g.mode = "gauge".into();
    }
    let ok = matches!(g.mode.as_str(), "gauge" | "count" | "modified" | "derive");
    fix("mode", &mut g.mode, ok, "gauge");
    let ok = matches!(g.gmode.as_str(), "gauge" | "subtract" | "both");
    fix("gmode", &mut g.gmode, ok, "gauge");
    let ok = is_hex_color(&g.color);
    fix("color", &mut g.color, ok, "#00CC00");
    for (what, f) in [("type", &mut g.draw), ("stype", &mut g.stype)] {
        let ok = matches!(f.as_str(), "AREA" | "LINE1" | "LINE2");
        fix(what, f, ok, "AREA");
    }
    let ok = g.adjust == "*" || g.adjust == "/";
    fix("adjust", &mut g.adjust, ok, "*");
    let ok = g.adjustval.parse::<u64>().is_ok_and(|n| n > 0);
    fix("adjustval", &mut g.adjustval, ok, "1");
    if !(0..=19).contains(&g.sort) {
        let s = g.sort.clamp(0, 19);
        notes.push(format!("sort {} is outside 0-19, imported as {s}", g.sort));
        g.sort = s;
    }
    notes
}

/// Whether a graph's files hold a `DERIVE` (for graphs whose history an earlier run
/// imported); the row's mode when there is no file.
fn derive_of(dir: &Path, g: &GfGraph) -> bool {
    let (main, short) = gf::rrd_paths(dir, g.id);
    for p in [main, short] {
        if let Ok(rrd) = sumi_import::rrd::Rrd::open(&p) {
            if let Some(ds) = rrd.ds().iter().find(|d| d.name == "num") {
                return ds.dst == sumi_import::rrd::Dst::Derive;
            }
        }
    }
    g.mode == "derive"
}

/// The history's target, the store when opened directly, the metadata's target.
type Targets = (Box<dyn job::Target>, Option<Arc<Store>>, Box<dyn Meta>);

/// Runs the import; the job's summary (with the metadata's problems among its skips)
/// and the metadata counts.
pub(crate) fn run(
    gf_dir: &Path,
    mysql_dump: Option<&Path>,
    flags: &ImportFlags,
) -> Result<(job::Summary, MetaCounts)> {
    if !gf_dir.is_dir() {
        bail!("{} is not a directory", gf_dir.display());
    }
    let sqlite = gf_dir.join(gf::DB_FILE);
    let dump = match mysql_dump {
        Some(p) => Some(p.to_path_buf()),
        None if sqlite.is_file() => None,
        None => {
            let sql: Vec<PathBuf> = std::fs::read_dir(gf_dir)
                .with_context(|| format!("reading {}", gf_dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sql") && p.is_file())
                .collect();
            match sql.as_slice() {
                [one] => {
                    eprintln!(
                        "sumi import: no {} in {}; reading the mysqldump {}",
                        gf::DB_FILE,
                        gf_dir.display(),
                        one.display()
                    );
                    Some(one.clone())
                }
                _ => bail!(
                    "no {} in {} (the directory GrowthForecast ran with, its --data-dir); \
                     for GrowthForecast on MySQL pass a mysqldump of its database with --mysql-dump",
                    gf::DB_FILE,
                    gf_dir.display()
                ),
            }
        }
    };
    let (db_path, data) = match dump {
        Some(p) => {
            let d = gf::read_mysql_dump(&p).map_err(anyhow::Error::msg)?;
            (p, d)
        }
        None => {
            let d = gf::read_sqlite(&sqlite).map_err(anyhow::Error::msg)?;
            (sqlite, d)
        }
    };
    let mut data = data;
    let mut problems: Vec<Skip> = std::mem::take(&mut data.problems)
        .into_iter()
        .map(|(row, why)| Skip {
            path: db_path.clone(),
            reason: format!("{row}: {why}"),
        })
        .collect();

    let opts = job_options(flags, "growthforecast")?;

    let url = match &flags.url {
        Some(u) => Some(u.clone()),
        None => crate::import::cluster_node_url(
            flags,
            "graphs through the metadata log, points through the data topic",
        )?,
    };
    let (target, store, meta): Targets = match &url {
        Some(url) => {
            let token = token_from_file(flags.token_file.as_deref())?;
            let base = url.trim_end_matches('/').to_string();
            let agent = ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(300))
                .build();
            let target = HttpTarget {
                url: format!("{base}/api/v0/import"),
                token: token.clone(),
                agent: agent.clone(),
            };
            target.check()?;
            let meta = HttpMeta {
                base,
                token,
                agent,
                vrules: Mutex::new(HashMap::new()),
            };
            (Box::new(target), None, Box::new(meta))
        }
        None => {
            let config = Config::load(&ServeFlags::files(
                flags.config.clone(),
                flags.data_dir.clone(),
            ))?;
            let opts = sumi_server::store_options(&config)?;
            let store = Store::open(opts, Arc::new(SystemClock)).with_context(|| {
                format!(
                    "opening the store in {} (import into a running server with --url)",
                    config.data_dir().display()
                )
            })?;
            let db = Db::open(config.data_dir()).context("opening growthforecast.db")?;
            (
                Box::new(StoreTarget(store.clone())),
                Some(store),
                Box::new(DbMeta(db)),
            )
        }
    };

    // each graph's series: the one sumi has for its names, else the usual name
    let mut units: HashMap<PathBuf, (GfGraph, String)> = HashMap::new();
    let mut files = Vec::new();
    let mut graphs = Vec::new();
    for mut g in std::mem::take(&mut data.graphs) {
        let label = format!("graph {} ({}/{}/{})", g.id, g.service, g.section, g.graph);
        for n in fix_graph(&mut g) {
            problems.push(Skip {
                path: db_path.clone(),
                reason: format!("{label}: {n}"),
            });
        }
        let series = match meta.existing_series(&g) {
            Ok(s) => s.unwrap_or_else(|| series_name(&g.service, &g.section, &g.graph)),
            Err(e) => bail!("{label}: {e}"),
        };
        let rel = PathBuf::from(format!("{}.rrd", gf::md5_name(g.id)));
        files.push(rel.clone());
        units.insert(rel, (g.clone(), series.clone()));
        graphs.push((g, series));
    }
    files.sort();
    let derive: Mutex<HashMap<i64, bool>> = Mutex::new(HashMap::new());
    let read = |_path: &Path, rel: &Path| -> Result<Vec<job::SeriesData>, String> {
        let Some((g, series)) = units.get(rel) else {
            return Ok(Vec::new());
        };
        match gf::graph_series(gf_dir, g, series)? {
            Some((sd, d)) => {
                derive
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(g.id, d);
                Ok(vec![sd])
            }
            None => Ok(Vec::new()),
        }
    };
    let job_name = format!("growthforecast {}", absolute(gf_dir).display());
    let result = job::run(gf_dir, &files, &job_name, read, target.as_ref(), &opts);
    drop(target);
    let mut summary = match result {
        Ok(s) => s,
        Err(e) => {
            if let Some(store) = store {
                let _ = store.close();
            }
            return Err(e.into());
        }
    };
    let derive = derive.into_inner().unwrap_or_else(|e| e.into_inner());

    // the metadata, after the history (over --url, a graph's first post would create
    // its series with the server's archives otherwise)
    let mut counts = MetaCounts::default();
    let mut ids: HashMap<i64, i64> = HashMap::new();
    for (g, series) in &graphs {
        let d = derive
            .get(&g.id)
            .copied()
            .unwrap_or_else(|| derive_of(gf_dir, g));
        match meta.graph(g, series, d) {
            Ok((id, created)) => {
                ids.insert(g.id, id);
                counts.graphs += 1;
                counts.graphs_created += u64::from(created);
            }
            Err(e) => problems.push(Skip {
                path: db_path.clone(),
                reason: format!(
                    "graph {} ({}/{}/{}): {e}",
                    g.id, g.service, g.section, g.graph
                ),
            }),
        }
    }
    for c in &data.complexes {
        let label = format!(
            "complex graph {} ({}/{}/{})",
            c.id, c.service, c.section, c.graph
        );
        let mut items = Vec::new();
        for it in &c.items {
            match ids.get(&it.graph_id) {
                Some(&id) => items.push(ComplexItem {
                    graph_id: id,
                    draw: if matches!(it.draw.as_str(), "AREA" | "LINE1" | "LINE2") {
                        it.draw.clone()
                    } else {
                        "AREA".into()
                    },
                    gmode: if it.gmode == "subtract" {
                        "subtract".into()
                    } else {
                        "gauge".into()
                    },
                    stack: it.stack,
                }),
                None => problems.push(Skip {
                    path: db_path.clone(),
                    reason: format!("{label}: graph {} is not imported, left out", it.graph_id),
                }),
            }
        }
        if items.len() < 2 {
            problems.push(Skip {
                path: db_path.clone(),
                reason: format!("{label}: fewer than two of its graphs imported, skipped"),
            });
            continue;
        }
        let mut c = c.clone();
        if !(0..=19).contains(&c.sort) {
            c.sort = c.sort.clamp(0, 19);
        }
        match meta.complex(&c, &items) {
            Ok(created) => {
                counts.complexes += 1;
                counts.complexes_created += u64::from(created);
            }
            Err(e) => problems.push(Skip {
                path: db_path.clone(),
                reason: format!("{label}: {e}"),
            }),
        }
    }
    for v in &data.vrules {
        let ok = v.color.starts_with('#')
            && matches!(v.color.len(), 7 | 9)
            && v.color[1..].bytes().all(|b| b.is_ascii_hexdigit());
        if !ok {
            problems.push(Skip {
                path: db_path.clone(),
                reason: format!(
                    "vertical rule at {} on {}: color {:?} is not valid, skipped",
                    v.time, v.graph_path, v.color
                ),
            });
            continue;
        }
        match meta.vrule(v) {
            Ok(added) => {
                counts.vrules += 1;
                counts.vrules_added += u64::from(added);
            }
            Err(e) => problems.push(Skip {
                path: db_path.clone(),
                reason: format!("vertical rule at {} on {}: {e}", v.time, v.graph_path),
            }),
        }
    }
    drop(meta);
    if let Some(store) = store {
        store
            .close()
            .context("closing the store (what was imported is in its WAL)")?;
    }
    summary.skipped.extend(problems);
    Ok((summary, counts))
}
