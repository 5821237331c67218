//! GrowthForecast's data directory: the graphs, complex graphs and vertical rules of
//! its SQLite database (`gforecast.db`), and each graph's history in its RRD files
//! (`<md5>.rrd` every 5 minutes, `<md5>_s.rrd` every minute, where `<md5>` is the MD5
//! of the graph's id in decimal), as the series sumi stores a graph in.
//!
//! The mapping (`docs/migration.md`, "From GrowthForecast"):
//!
//! - a graph's series gets one archive per AVERAGE RRA of the data source `num` of
//!   both files, finest first (60 s × 4800 from `_s.rrd`, then 300 s × 1440, 1800 s ×
//!   1008, 7200 s × 1344 and 86400 s × 2500 as GrowthForecast creates them), rolled
//!   up by average with xFilesFactor 0 as every GrowthForecast graph in sumi;
//! - each row becomes a point at the time `rrdtool fetch` labels it (the end of its
//!   interval: the number GrowthForecast's worker sampled then), unknown rows are
//!   gaps;
//! - a `DERIVE` graph's rows are rates, and sumi stores the counter: the counter is
//!   rebuilt per archive (each known rate times the step, added up; a point one step
//!   before each known row that follows a gap, so a gap reads as a rate of 0) and
//!   shifted so that its last value is the graph's current number, so that posts
//!   after the import continue it;
//! - the `sub` data source and the MAX RRAs are not imported: sumi computes the
//!   subtract view from the numbers, and `cf=MAX` from the stored averages.
//!
//! A row of the database that cannot be read (a wrong type, an empty name, `meta` that
//! is not JSON) is left out and reported; a damaged RRD file makes its graph's history
//! a reported skip while the graph itself is still imported.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use md5::{Digest, Md5};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};
use sumi_model::{AggMethod, Archive, Retention, SeriesConfig};

use crate::job::SeriesData;
use crate::rrd::{Cf, Dst, Rrd};

/// The database file in GrowthForecast's data directory.
pub const DB_FILE: &str = "gforecast.db";

/// A graph row (GrowthForecast's `graphs` table, `meta` unpacked).
#[derive(Clone, Debug, PartialEq)]
pub struct GfGraph {
    pub id: i64,
    pub service: String,
    pub section: String,
    pub graph: String,
    pub number: f64,
    pub mode: String,
    pub description: String,
    pub sort: i64,
    pub gmode: String,
    pub color: String,
    pub ulimit: f64,
    pub llimit: f64,
    pub sulimit: f64,
    pub sllimit: f64,
    /// `type`: AREA, LINE1 or LINE2.
    pub draw: String,
    pub stype: String,
    pub adjust: String,
    pub adjustval: String,
    pub unit: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub timestamp: Option<i64>,
}

/// One series of a complex graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GfComplexItem {
    /// The id of the graph in GrowthForecast's database.
    pub graph_id: i64,
    pub draw: String,
    pub gmode: String,
    pub stack: bool,
}

/// A complex graph row (`complex_graphs`, its `meta` unpacked into items).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GfComplex {
    pub id: i64,
    pub service: String,
    pub section: String,
    pub graph: String,
    pub description: String,
    pub sort: i64,
    pub sumup: bool,
    pub items: Vec<GfComplexItem>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A vertical rule (`vrules`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GfVrule {
    pub graph_path: String,
    pub time: i64,
    pub color: String,
    pub description: String,
    pub dashes: String,
}

/// Everything read from the database, and the rows that could not be read.
#[derive(Clone, Debug, Default)]
pub struct GfData {
    pub graphs: Vec<GfGraph>,
    pub complexes: Vec<GfComplex>,
    pub vrules: Vec<GfVrule>,
    /// `(row, reason)` for each row left out.
    pub problems: Vec<(String, String)>,
}

/// The file name stem GrowthForecast gives a graph's RRD files: the MD5 of its id.
pub fn md5_name(id: i64) -> String {
    let digest = Md5::digest(id.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A column's value as text (numbers in their decimal form).
fn text(v: ValueRef<'_>) -> Result<Option<String>, String> {
    Ok(match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) => Some(
            std::str::from_utf8(t)
                .map_err(|_| "text that is not UTF-8".to_string())?
                .to_string(),
        ),
        ValueRef::Blob(_) => return Err("a blob where text belongs".into()),
    })
}

fn number(v: ValueRef<'_>) -> Result<Option<f64>, String> {
    Ok(match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Real(f) => Some(f),
        ValueRef::Text(t) => Some(
            std::str::from_utf8(t)
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|f| f.is_finite())
                .ok_or_else(|| format!("{:?} is not a number", String::from_utf8_lossy(t)))?,
        ),
        ValueRef::Blob(_) => return Err("a blob where a number belongs".into()),
    })
}

fn integer(v: ValueRef<'_>) -> Result<Option<i64>, String> {
    match number(v)? {
        None => Ok(None),
        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
        Some(f) => Err(format!("{f} is not a whole number")),
    }
}

/// Reads the columns of a row by name; a missing column reads as NULL.
struct Cols<'a, 'r> {
    row: &'a Row<'r>,
    names: &'a [String],
}

impl Cols<'_, '_> {
    fn get(&self, name: &str) -> ValueRef<'_> {
        match self.names.iter().position(|n| n.eq_ignore_ascii_case(name)) {
            Some(i) => self.row.get_ref(i).unwrap_or(ValueRef::Null),
            None => ValueRef::Null,
        }
    }

    fn text(&self, name: &str, default: &str) -> Result<String, String> {
        text(self.get(name))
            .map(|t| t.unwrap_or_else(|| default.to_string()))
            .map_err(|e| format!("{name}: {e}"))
    }

    fn name(&self, name: &str) -> Result<String, String> {
        let t = self.text(name, "")?;
        if t.is_empty() {
            return Err(format!("{name} is empty"));
        }
        Ok(t)
    }

    fn number(&self, name: &str, default: f64) -> Result<f64, String> {
        number(self.get(name))
            .map(|n| n.unwrap_or(default))
            .map_err(|e| format!("{name}: {e}"))
    }

    fn integer(&self, name: &str) -> Result<Option<i64>, String> {
        integer(self.get(name)).map_err(|e| format!("{name}: {e}"))
    }
}

/// A JSON value as the text GrowthForecast's forms stored (strings as they are,
/// numbers in decimal).
fn json_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
        _ => None,
    }
}

fn meta(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    if text.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(_) => Err("meta is not a JSON object".into()),
        Err(e) => Err(format!("meta is not JSON: {e}")),
    }
}

/// A graph's `meta`: `adjust`, `adjustval` and `unit` (GrowthForecast's defaults
/// `*`, `1` and empty).
pub fn graph_meta(text: &str) -> Result<(String, String, String), String> {
    let m = meta(text)?;
    let field = |k: &str, default: &str| -> Result<String, String> {
        match m.get(k) {
            None | Some(serde_json::Value::Null) => Ok(default.to_string()),
            Some(v) => json_text(v).ok_or_else(|| format!("meta {k} is not text")),
        }
    };
    Ok((
        field("adjust", "*")?,
        field("adjustval", "1")?,
        field("unit", "")?,
    ))
}

/// A complex graph's `meta`: `sumup` and its items (`type-1`, `path-1`, `gmode-1`
/// for the first; `type-2`, `path-2`, `gmode-2`, `stack-2`, each a value or a list,
/// for the rest).
pub fn complex_meta(text: &str) -> Result<(bool, Vec<GfComplexItem>), String> {
    let m = meta(text)?;
    let one = |k: &str| -> Result<String, String> {
        m.get(k)
            .and_then(json_text)
            .ok_or_else(|| format!("meta has no {k}"))
    };
    let list = |k: &str| -> Result<Vec<String>, String> {
        match m.get(k) {
            None | Some(serde_json::Value::Null) => Ok(Vec::new()),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| json_text(v).ok_or_else(|| format!("meta {k} holds a non-value")))
                .collect(),
            Some(v) => Ok(vec![
                json_text(v).ok_or_else(|| format!("meta {k} is not a value"))?
            ]),
        }
    };
    let id = |s: &str, k: &str| -> Result<i64, String> {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("meta {k} {s:?} is not a graph id"))
    };
    let sumup = match m.get("sumup").and_then(json_text) {
        None => false,
        Some(s) => s != "0" && !s.is_empty(),
    };
    let mut items = vec![GfComplexItem {
        graph_id: id(&one("path-1")?, "path-1")?,
        draw: one("type-1")?,
        gmode: one("gmode-1")?,
        stack: false,
    }];
    let (types, paths, gmodes, stacks) = (
        list("type-2")?,
        list("path-2")?,
        list("gmode-2")?,
        list("stack-2")?,
    );
    if types.len() != paths.len() || gmodes.len() != paths.len() || stacks.len() != paths.len() {
        return Err(format!(
            "meta lists {} types, {} paths, {} gmodes and {} stacks",
            types.len(),
            paths.len(),
            gmodes.len(),
            stacks.len()
        ));
    }
    for i in 0..paths.len() {
        items.push(GfComplexItem {
            graph_id: id(&paths[i], "path-2")?,
            draw: types[i].clone(),
            gmode: gmodes[i].clone(),
            stack: stacks[i] != "0" && !stacks[i].is_empty(),
        });
    }
    Ok((sumup, items))
}

fn graph_row(c: &Cols<'_, '_>) -> Result<GfGraph, String> {
    let (adjust, adjustval, unit) = graph_meta(&c.text("meta", "")?)?;
    Ok(GfGraph {
        id: c.integer("id")?.ok_or("id is NULL")?,
        service: c.name("service_name")?,
        section: c.name("section_name")?,
        graph: c.name("graph_name")?,
        number: c.number("number", 0.0)?,
        mode: c.text("mode", "gauge")?,
        description: c.text("description", "")?,
        sort: c.integer("sort")?.unwrap_or(0),
        gmode: c.text("gmode", "gauge")?,
        color: c.text("color", "#00CC00")?,
        ulimit: c.number("ulimit", 1e15)?,
        llimit: c.number("llimit", 0.0)?,
        sulimit: c.number("sulimit", 100_000.0)?,
        sllimit: c.number("sllimit", 0.0)?,
        draw: c.text("type", "AREA")?,
        stype: c.text("stype", "AREA")?,
        adjust,
        adjustval,
        unit,
        created_at: c.integer("created_at")?.unwrap_or(0),
        updated_at: c.integer("updated_at")?.unwrap_or(0),
        timestamp: c.integer("timestamp")?,
    })
}

fn complex_row(c: &Cols<'_, '_>) -> Result<GfComplex, String> {
    let (sumup, items) = complex_meta(&c.text("meta", "")?)?;
    Ok(GfComplex {
        id: c.integer("id")?.ok_or("id is NULL")?,
        service: c.name("service_name")?,
        section: c.name("section_name")?,
        graph: c.name("graph_name")?,
        description: c.text("description", "")?,
        sort: c.integer("sort")?.unwrap_or(0),
        sumup,
        items,
        created_at: c.integer("created_at")?.unwrap_or(0),
        updated_at: c.integer("updated_at")?.unwrap_or(0),
    })
}

fn vrule_row(c: &Cols<'_, '_>) -> Result<GfVrule, String> {
    Ok(GfVrule {
        graph_path: c.name("graph_path")?,
        time: c.integer("time")?.ok_or("time is NULL")?,
        color: c.text("color", "#FF0000")?,
        description: c.text("description", "")?,
        dashes: c.text("dashes", "")?,
    })
}

/// Reads every row of `table` with `f`; rows `f` refuses go to `problems`. A table
/// that does not exist reads as empty unless `required`.
fn rows<T>(
    conn: &Connection,
    table: &str,
    required: bool,
    problems: &mut Vec<(String, String)>,
    f: impl Fn(&Cols<'_, '_>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let exists: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| format!("reading the schema: {e}"))?
        > 0;
    if !exists {
        return if required {
            Err(format!("no table {table}: not a GrowthForecast database"))
        } else {
            Ok(Vec::new())
        };
    }
    let mut st = conn
        .prepare(&format!("SELECT rowid, * FROM \"{table}\" ORDER BY rowid"))
        .map_err(|e| format!("reading {table}: {e}"))?;
    let names: Vec<String> = st.column_names().iter().map(|s| s.to_string()).collect();
    let mut q = st.query([]).map_err(|e| format!("reading {table}: {e}"))?;
    let mut out = Vec::new();
    loop {
        let row = match q.next() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => return Err(format!("reading {table}: {e}")),
        };
        let cols = Cols { row, names: &names };
        match f(&cols) {
            Ok(v) => out.push(v),
            Err(e) => {
                let rowid = row.get::<_, i64>(0).unwrap_or(-1);
                problems.push((format!("{table} row {rowid}"), e));
            }
        }
    }
    Ok(out)
}

/// Reads GrowthForecast's SQLite database (read-only). `Err` when the file is not a
/// GrowthForecast database at all; single rows that cannot be read are
/// [`GfData::problems`].
pub fn read_sqlite(path: &Path) -> Result<GfData, String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    read_connection(&conn, path)
}

/// The columns of GrowthForecast's MySQL tables in its `CREATE TABLE` order, for a
/// dump whose `INSERT`s name none and that holds no `CREATE TABLE`.
const MYSQL_COLUMNS: [(&str, &[&str]); 3] = [
    (
        "graphs",
        &[
            "id",
            "service_name",
            "section_name",
            "graph_name",
            "number",
            "mode",
            "description",
            "sort",
            "gmode",
            "color",
            "ulimit",
            "llimit",
            "sulimit",
            "sllimit",
            "type",
            "stype",
            "meta",
            "created_at",
            "updated_at",
            "timestamp",
        ],
    ),
    (
        "complex_graphs",
        &[
            "id",
            "service_name",
            "section_name",
            "graph_name",
            "number",
            "description",
            "sort",
            "meta",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "vrules",
        &["id", "graph_path", "time", "color", "description", "dashes"],
    ),
];

/// Reads a `mysqldump` of GrowthForecast's MySQL database (`--mysql`): the tables
/// `graphs`, `complex_graphs` and `vrules` ([`crate::mysqldump`]), read as the SQLite
/// database is. Where the dump could not be read further is one of the problems.
pub fn read_mysql_dump(path: &Path) -> Result<GfData, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dump = crate::mysqldump::parse_dump(&text);
    let conn = Connection::open_in_memory().map_err(|e| format!("an in-memory database: {e}"))?;
    for (table, default_cols) in MYSQL_COLUMNS {
        let Some(t) = dump.tables.get(table) else {
            continue;
        };
        let cols: Vec<String> = if t.columns.is_empty() {
            default_cols.iter().map(|c| c.to_string()).collect()
        } else {
            t.columns.clone()
        };
        let quoted: Vec<String> = cols
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        conn.execute_batch(&format!("CREATE TABLE {table} ({})", quoted.join(", ")))
            .map_err(|e| format!("{}: table {table}: {e}", path.display()))?;
        let mut st = conn
            .prepare(&format!(
                "INSERT INTO {table} VALUES ({})",
                vec!["?"; cols.len()].join(", ")
            ))
            .map_err(|e| format!("{}: table {table}: {e}", path.display()))?;
        for row in &t.rows {
            if row.len() != cols.len() {
                continue;
            }
            let values = row.iter().map(|v| match v {
                crate::mysqldump::SqlValue::Null => rusqlite::types::Value::Null,
                crate::mysqldump::SqlValue::Int(i) => rusqlite::types::Value::Integer(*i),
                crate::mysqldump::SqlValue::Real(f) => rusqlite::types::Value::Real(*f),
                crate::mysqldump::SqlValue::Text(t) => rusqlite::types::Value::Text(t.clone()),
            });
            st.execute(rusqlite::params_from_iter(values))
                .map_err(|e| format!("{}: table {table}: {e}", path.display()))?;
        }
    }
    let mut d = read_connection(&conn, path)?;
    if let Some((at, why)) = dump.problem {
        d.problems.push((
            format!("the dump at byte {at}"),
            format!("{why}; read no further"),
        ));
    }
    Ok(d)
}

fn read_connection(conn: &Connection, path: &Path) -> Result<GfData, String> {
    let mut d = GfData::default();
    let mut problems = Vec::new();
    d.graphs = rows(conn, "graphs", true, &mut problems, graph_row)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    d.complexes = rows(conn, "complex_graphs", false, &mut problems, complex_row)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    d.vrules = rows(conn, "vrules", false, &mut problems, vrule_row)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    d.problems.extend(problems);
    Ok(d)
}

/// The two RRD files of a graph in `dir`.
pub fn rrd_paths(dir: &Path, id: i64) -> (PathBuf, PathBuf) {
    let md5 = md5_name(id);
    (
        dir.join(format!("{md5}.rrd")),
        dir.join(format!("{md5}_s.rrd")),
    )
}

/// One archive read from a file: its step, rows and `(time, value)` of `num`.
struct Level {
    step: i64,
    rows: u64,
    points: Vec<(i64, f64)>,
}

fn levels_of(path: &Path) -> Result<(Vec<Level>, bool), String> {
    let rrd = Rrd::open(path).map_err(|e| e.to_string())?;
    let ds = rrd
        .ds()
        .iter()
        .position(|d| d.name == "num")
        .ok_or_else(|| format!("{}: no data source \"num\"", path.display()))?;
    let derive = match rrd.ds()[ds].dst {
        Dst::Gauge => false,
        Dst::Derive => true,
        other => {
            return Err(format!(
                "{}: data source num is {}, not GAUGE or DERIVE",
                path.display(),
                other.name()
            ))
        }
    };
    let mut out = Vec::new();
    for (i, def) in rrd.rras().iter().enumerate() {
        if def.cf != Cf::Average {
            continue;
        }
        let points = rrd
            .rra_rows(i)
            .filter_map(|(t, row)| row.get(ds).copied().filter(|v| !v.is_nan()).map(|v| (t, v)))
            .collect();
        out.push(Level {
            step: rrd.rra_step(i),
            rows: def.rows,
            points,
        });
    }
    Ok((out, derive))
}

/// Rebuilds a counter from the rates of one archive (see the module's notes), its
/// last value `last`.
pub fn counter_from_rates(step: i64, rates: &[(i64, f64)], last: f64) -> Vec<(i64, f64)> {
    let mut out: Vec<(i64, f64)> = Vec::with_capacity(rates.len() + 1);
    let mut c = 0.0;
    let mut prev: Option<i64> = None;
    for &(t, r) in rates {
        if prev != Some(t - step) {
            out.push((t - step, c));
        }
        c += r * step as f64;
        out.push((t, c));
        prev = Some(t);
    }
    let shift = last - c;
    if shift.is_finite() {
        for p in &mut out {
            p.1 += shift;
        }
    }
    out
}

/// The history of graph `g` from its RRD files in `dir`, as the series `series`; and
/// whether its `num` is a `DERIVE` (a rate graph). `Ok(None)` when it has no files (a
/// graph GrowthForecast's worker never wrote).
pub fn graph_series(
    dir: &Path,
    g: &GfGraph,
    series: &str,
) -> Result<Option<(SeriesData, bool)>, String> {
    let (main, short) = rrd_paths(dir, g.id);
    let mut levels: Vec<Level> = Vec::new();
    let mut derive = None;
    for p in [&short, &main] {
        if !p.exists() {
            continue;
        }
        let (ls, d) = levels_of(p)?;
        if derive.is_some_and(|x| x != d) {
            return Err(format!(
                "{} and {} disagree on GAUGE or DERIVE",
                short.display(),
                main.display()
            ));
        }
        derive = Some(d);
        for l in ls {
            // the 5-minute file wins a step both files have
            levels.retain(|x| x.step != l.step);
            levels.push(l);
        }
    }
    let Some(derive) = derive else {
        return Ok(None);
    };
    if levels.is_empty() {
        return Err(format!("{}: no AVERAGE archive", main.display()));
    }
    levels.sort_by_key(|l| l.step);
    let archives = levels
        .iter()
        .map(|l| Archive {
            step_secs: u32::try_from(l.step).unwrap_or(u32::MAX),
            points: u32::try_from(l.rows).unwrap_or(u32::MAX),
        })
        .collect();
    let retention = Retention::new(archives)
        .map_err(|e| format!("the AVERAGE archives make no whisper-style archives: {e}"))?;
    let archives = levels
        .into_iter()
        .map(|l| {
            if derive {
                counter_from_rates(l.step, &l.points, g.number)
            } else {
                l.points
            }
        })
        .collect();
    Ok(Some((
        SeriesData {
            name: series.to_string(),
            config: SeriesConfig {
                retention: Arc::new(retention),
                method: AggMethod::Average,
                xff: 0.0,
            },
            archives,
        },
        derive,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_of_the_id() {
        // md5_hex("1"), as GrowthForecast names graph 1's files
        assert_eq!(md5_name(1), "c4ca4238a0b923820dcc509a6f75849b");
    }

    #[test]
    fn metas() {
        assert_eq!(
            graph_meta("").unwrap(),
            ("*".into(), "1".into(), String::new())
        );
        assert_eq!(
            graph_meta(r#"{"adjust":"/","adjustval":1000,"unit":"ms"}"#).unwrap(),
            ("/".into(), "1000".into(), "ms".into())
        );
        assert!(graph_meta("{").is_err());
        assert!(graph_meta("[1]").is_err());
        let (sumup, items) = complex_meta(
            r#"{"type-1":"AREA","path-1":"3","gmode-1":"gauge","type-2":"LINE1",
                "path-2":"4","gmode-2":"subtract","stack-2":"1","sumup":"1"}"#,
        )
        .unwrap();
        assert!(sumup);
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[1],
            GfComplexItem {
                graph_id: 4,
                draw: "LINE1".into(),
                gmode: "subtract".into(),
                stack: true
            }
        );
        let (_, items) = complex_meta(
            r#"{"type-1":"AREA","path-1":3,"gmode-1":"gauge","type-2":["AREA","AREA"],
                "path-2":[4,5],"gmode-2":["gauge","gauge"],"stack-2":["0","1"]}"#,
        )
        .unwrap();
        assert_eq!(
            items.iter().map(|i| i.graph_id).collect::<Vec<_>>(),
            [3, 4, 5]
        );
        assert!(complex_meta(r#"{"type-1":"AREA","path-1":"x","gmode-1":"gauge"}"#).is_err());
        assert!(complex_meta(
            r#"{"type-1":"AREA","path-1":"1","gmode-1":"gauge","type-2":["AREA"],"path-2":[]}"#
        )
        .is_err());
    }

    #[test]
    fn counters_from_rates_end_at_the_number() {
        let c = counter_from_rates(60, &[(120, 1.0), (180, 2.0), (300, 0.5)], 1000.0);
        // a point a step before the first row and before the row after the gap
        let times: Vec<i64> = c.iter().map(|p| p.0).collect();
        assert_eq!(times, [60, 120, 180, 240, 300]);
        assert_eq!(c.last().unwrap().1, 1000.0);
        let d: Vec<f64> = c.windows(2).map(|w| (w[1].1 - w[0].1) / 60.0).collect();
        assert_eq!(d, [1.0, 2.0, 0.0, 0.5]);
    }
}

#[cfg(test)]
mod db_tests {
    use super::*;

    #[test]
    fn rows_of_wrong_types_are_problems_and_the_rest_is_read() {
        let dir = std::env::temp_dir().join(format!("sumi-gf-db-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(DB_FILE);
        let conn = Connection::open(&path).unwrap();
        // an old GrowthForecast: no mode, timestamp or vrules; sort typed loosely
        conn.execute_batch(
            "CREATE TABLE graphs (id INTEGER PRIMARY KEY, service_name, section_name, \
             graph_name, number, sort, meta, created_at, updated_at);
             INSERT INTO graphs VALUES (1, 's', 't', 'ok', 2.5, '7', NULL, 10, 20);
             INSERT INTO graphs VALUES (2, 's', 't', 'bad sort', 1, 'high', NULL, 10, 20);
             INSERT INTO graphs VALUES (3, 's', '', 'no section', 1, 0, NULL, 10, 20);
             INSERT INTO graphs VALUES (4, 's', 't', 'blob', X'00', 0, NULL, 10, 20);",
        )
        .unwrap();
        drop(conn);
        let d = read_sqlite(&path).unwrap();
        assert_eq!(d.graphs.len(), 1);
        let g = &d.graphs[0];
        assert_eq!((g.number, g.sort, g.mode.as_str()), (2.5, 7, "gauge"));
        assert_eq!((g.adjust.as_str(), g.timestamp), ("*", None));
        let rows: Vec<&str> = d.problems.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(rows, ["graphs row 2", "graphs row 3", "graphs row 4"]);
        assert!(d.problems[0].1.contains("sort"), "{:?}", d.problems);
        assert!(d.complexes.is_empty() && d.vrules.is_empty());
        // not a GrowthForecast database at all
        std::fs::write(dir.join("other.db"), b"").unwrap();
        assert!(read_sqlite(&dir.join("other.db"))
            .unwrap_err()
            .contains("no table graphs"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
