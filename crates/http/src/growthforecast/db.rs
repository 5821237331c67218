//! The metadata database: GrowthForecast's graphs, complex graphs and vertical rules
//! in SQLite (`growthforecast.db` in the data directory), schema by `migrations.rs`.
//!
//! Points are not here: they are in the store. A graph row holds what
//! GrowthForecast's row holds (names, the current number, drawing settings) plus the
//! name of its sumi series. Every call blocks; handlers call them from blocking
//! threads. Reads and edits share one connection behind a mutex; posts have their
//! own connection in the writer thread (`writer.rs`); SQLite's WAL mode lets both
//! work at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::migrations;

/// The file name in the data directory.
pub const DB_FILE: &str = "growthforecast.db";

/// A failed database operation.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("growthforecast database: {op}: {source}")]
    Sql {
        op: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("growthforecast database: migration {version} failed: {source}")]
    Migration {
        version: u32,
        #[source]
        source: rusqlite::Error,
    },
    #[error("growthforecast database has schema version {found}, newer than this sumi knows ({known}); use a newer sumi")]
    TooNew { found: u32, known: u32 },
    #[error("cannot open growthforecast database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// A name that is taken (a 409 or a validation message).
    #[error("{0}")]
    Conflict(String),
}

impl DbError {
    pub(crate) fn sql(op: &'static str, source: rusqlite::Error) -> DbError {
        DbError::Sql { op, source }
    }
}

/// One graph, as its row holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    pub id: i64,
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
    /// The sumi series of the graph's points.
    pub series: String,
    /// The current number (after `count` added to it).
    pub number: f64,
    /// The mode of the last post.
    pub mode: String,
    /// Read as a per-second rate (the first post said `derive`).
    pub derive: bool,
    pub description: String,
    pub sort: i64,
    /// `gauge`, `subtract` or `both`: what the graph's pages draw.
    pub gmode: String,
    pub color: String,
    pub ulimit: f64,
    pub llimit: f64,
    pub sulimit: f64,
    pub sllimit: f64,
    /// `AREA`, `LINE1` or `LINE2` (GrowthForecast's `type`), and for the subtract view.
    pub draw: String,
    pub stype: String,
    /// `*` or `/`, by `adjustval`.
    pub adjust: String,
    pub adjustval: String,
    pub unit: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// The client's timestamp of the last post, if it gave one.
    pub timestamp: Option<i64>,
}

pub(crate) const GRAPH_COLUMNS: &str = "id, service_name, section_name, graph_name, series, \
     number, mode, derive, description, sort, gmode, color, ulimit, llimit, sulimit, sllimit, \
     type, stype, adjust, adjustval, unit, created_at, updated_at, timestamp";

pub(crate) fn graph_from_row(r: &Row<'_>) -> rusqlite::Result<Graph> {
    Ok(Graph {
        id: r.get(0)?,
        service_name: r.get(1)?,
        section_name: r.get(2)?,
        graph_name: r.get(3)?,
        series: r.get(4)?,
        number: r.get(5)?,
        mode: r.get(6)?,
        derive: r.get(7)?,
        description: r.get(8)?,
        sort: r.get(9)?,
        gmode: r.get(10)?,
        color: r.get(11)?,
        ulimit: r.get(12)?,
        llimit: r.get(13)?,
        sulimit: r.get(14)?,
        sllimit: r.get(15)?,
        draw: r.get(16)?,
        stype: r.get(17)?,
        adjust: r.get(18)?,
        adjustval: r.get(19)?,
        unit: r.get(20)?,
        created_at: r.get(21)?,
        updated_at: r.get(22)?,
        timestamp: r.get(23)?,
    })
}

/// One series of a complex graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComplexItem {
    pub graph_id: i64,
    /// `AREA`, `LINE1` or `LINE2`.
    pub draw: String,
    /// `gauge` or `subtract`.
    pub gmode: String,
    /// Stacked on the items before it (ignored for the first).
    pub stack: bool,
}

/// A graph drawn from the series of other graphs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Complex {
    pub id: i64,
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
    pub description: String,
    pub sort: i64,
    /// Show a `total` of the items in the legend.
    pub sumup: bool,
    pub items: Vec<ComplexItem>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a create or an edit of a complex graph sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComplexSpec {
    pub service_name: String,
    pub section_name: String,
    pub graph_name: String,
    pub description: String,
    pub sort: i64,
    pub sumup: bool,
    pub items: Vec<ComplexItem>,
}

/// A vertical rule: a mark at a time on every graph under `graph_path`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Vrule {
    pub id: i64,
    /// `/`, `/service`, `/service/section` or `/service/section/graph`.
    pub graph_path: String,
    pub time: i64,
    pub color: String,
    pub description: String,
    pub dashes: String,
}

/// An entry of a section's page: a graph or a complex graph.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    Graph(Box<Graph>),
    Complex(Complex),
}

impl Entry {
    /// The `sort` of the graph or complex graph.
    pub fn sort(&self) -> i64 {
        match self {
            Entry::Graph(g) => g.sort,
            Entry::Complex(c) => c.sort,
        }
    }
}

/// The database.
pub struct Db {
    path: PathBuf,
    conn: Mutex<Connection>,
}

pub(crate) fn connect(path: &Path) -> Result<Connection, DbError> {
    let open_err = |source| DbError::Open {
        path: path.to_path_buf(),
        source,
    };
    let conn = Connection::open(path).map_err(open_err)?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(open_err)?;
    // WAL: readers never wait for the writer; NORMAL: a commit is not an fsync (the
    // points themselves are in the store's WAL, fsynced by its own policy).
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(open_err)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(open_err)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(open_err)?;
    Ok(conn)
}

impl Db {
    /// Opens (or creates) the database in `dir` and brings its schema up to date.
    pub fn open(dir: &Path) -> Result<Db, DbError> {
        std::fs::create_dir_all(dir).map_err(|e| DbError::Open {
            path: dir.to_path_buf(),
            source: rusqlite::Error::InvalidPath(PathBuf::from(e.to_string())),
        })?;
        let path = dir.join(DB_FILE);
        let mut conn = connect(&path)?;
        migrations::migrate(&mut conn)?;
        Ok(Db {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes a consistent copy of the database to `to` (SQLite's `VACUUM INTO`, on a
    /// connection of its own: one read transaction, so the rows and the metadata
    /// log's offset stored with them agree). `to` must not exist.
    pub fn snapshot_into(&self, to: &Path) -> Result<(), DbError> {
        let conn = self.connect_again()?;
        let target = to.to_str().ok_or_else(|| DbError::Open {
            path: to.to_path_buf(),
            source: rusqlite::Error::InvalidPath(to.to_path_buf()),
        })?;
        conn.execute("VACUUM INTO ?1", [target])
            .map_err(|e| DbError::sql("copying the database", e))?;
        Ok(())
    }

    /// The same database on a connection of its own (the log applier's, whose
    /// transaction the methods' own savepoints then belong to).
    pub(crate) fn reopen(&self) -> Result<Db, DbError> {
        Ok(Db {
            path: self.path.clone(),
            conn: Mutex::new(self.connect_again()?),
        })
    }

    /// Runs `f` on the connection (the log applier's transaction statements).
    pub(crate) fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        f(&self.conn.lock())
    }

    /// A further connection to the same file (for the writer thread).
    pub(crate) fn connect_again(&self) -> Result<Connection, DbError> {
        connect(&self.path)
    }

    /// The graph with these names.
    pub fn graph(
        &self,
        service: &str,
        section: &str,
        graph: &str,
    ) -> Result<Option<Graph>, DbError> {
        let conn = self.conn.lock();
        graph_by_names(&conn, service, section, graph)
    }

    /// The graph with this id.
    pub fn graph_by_id(&self, id: i64) -> Result<Option<Graph>, DbError> {
        let conn = self.conn.lock();
        graph_by_id(&conn, id)
    }

    /// Every graph, in GrowthForecast's list order (service, section, graph descending).
    pub fn graphs(&self) -> Result<Vec<Graph>, DbError> {
        let conn = self.conn.lock();
        let sql = format!(
            "SELECT {GRAPH_COLUMNS} FROM graphs ORDER BY service_name, section_name, graph_name DESC"
        );
        let mut st = conn
            .prepare_cached(&sql)
            .map_err(|e| DbError::sql("listing graphs", e))?;
        let rows = st
            .query_map([], graph_from_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| DbError::sql("listing graphs", e))?;
        Ok(rows)
    }

    /// The series name of every graph.
    pub fn series_names(&self) -> Result<Vec<String>, DbError> {
        let conn = self.conn.lock();
        let mut st = conn
            .prepare("SELECT series FROM graphs")
            .map_err(|e| DbError::sql("listing series", e))?;
        let rows = st
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
            .map_err(|e| DbError::sql("listing series", e))?;
        Ok(rows)
    }

    /// Services of graphs and complex graphs, sorted.
    pub fn services(&self) -> Result<Vec<String>, DbError> {
        let conn = self.conn.lock();
        strings(
            &conn,
            "SELECT service_name FROM graphs UNION SELECT service_name FROM complex_graphs \
             ORDER BY 1",
            [],
        )
    }

    /// Sections of one service, sorted.
    pub fn sections(&self, service: &str) -> Result<Vec<String>, DbError> {
        let conn = self.conn.lock();
        strings(
            &conn,
            "SELECT section_name FROM graphs WHERE service_name = ?1 UNION \
             SELECT section_name FROM complex_graphs WHERE service_name = ?1 ORDER BY 1",
            [service],
        )
    }

    /// The graphs and complex graphs of a section, by `sort` descending (then name).
    pub fn section(&self, service: &str, section: &str) -> Result<Vec<Entry>, DbError> {
        let conn = self.conn.lock();
        let sql = format!(
            "SELECT {GRAPH_COLUMNS} FROM graphs WHERE service_name = ?1 AND section_name = ?2"
        );
        let mut st = conn
            .prepare_cached(&sql)
            .map_err(|e| DbError::sql("listing a section", e))?;
        let graphs = st
            .query_map([service, section], graph_from_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| DbError::sql("listing a section", e))?;
        let mut out: Vec<Entry> = graphs
            .into_iter()
            .map(|g| Entry::Graph(Box::new(g)))
            .collect();
        let ids: Vec<i64> = {
            let mut st = conn
                .prepare_cached(
                    "SELECT id FROM complex_graphs WHERE service_name = ?1 AND section_name = ?2",
                )
                .map_err(|e| DbError::sql("listing a section", e))?;
            let ids = st
                .query_map([service, section], |r| r.get(0))
                .and_then(|rows| rows.collect::<Result<Vec<i64>, _>>())
                .map_err(|e| DbError::sql("listing a section", e))?;
            ids
        };
        for id in ids {
            if let Some(c) = complex_by_id(&conn, id)? {
                out.push(Entry::Complex(c));
            }
        }
        out.sort_by(|a, b| {
            b.sort()
                .cmp(&a.sort())
                .then_with(|| entry_name(a).cmp(entry_name(b)))
        });
        Ok(out)
    }

    /// Applies an edit to a graph; the new names must not belong to another graph.
    pub fn update_graph(&self, g: &Graph) -> Result<(), DbError> {
        let conn = self.conn.lock();
        if let Some(other) = graph_by_names(&conn, &g.service_name, &g.section_name, &g.graph_name)?
        {
            if other.id != g.id {
                return Err(DbError::Conflict(format!(
                    "a graph {}/{}/{} already exists",
                    g.service_name, g.section_name, g.graph_name
                )));
            }
        }
        conn.execute(
            "UPDATE graphs SET service_name = ?1, section_name = ?2, graph_name = ?3, \
             description = ?4, sort = ?5, gmode = ?6, color = ?7, type = ?8, stype = ?9, \
             llimit = ?10, ulimit = ?11, sllimit = ?12, sulimit = ?13, adjust = ?14, \
             adjustval = ?15, unit = ?16 WHERE id = ?17",
            params![
                g.service_name,
                g.section_name,
                g.graph_name,
                g.description,
                g.sort,
                g.gmode,
                g.color,
                g.draw,
                g.stype,
                g.llimit,
                g.ulimit,
                g.sllimit,
                g.sulimit,
                g.adjust,
                g.adjustval,
                g.unit,
                g.id
            ],
        )
        .map_err(|e| DbError::sql("updating a graph", e))?;
        Ok(())
    }

    /// Removes a graph; `None` when there was none. Complex graphs that used it keep
    /// their other items.
    pub fn delete_graph(&self, id: i64) -> Result<Option<Graph>, DbError> {
        let mut conn = self.conn.lock();
        let Some(g) = graph_by_id(&conn, id)? else {
            return Ok(None);
        };
        // a savepoint: its own transaction, or part of the log applier's
        let tx = conn
            .savepoint()
            .map_err(|e| DbError::sql("deleting a graph", e))?;
        tx.execute("DELETE FROM graphs WHERE id = ?1", [id])
            .and_then(|_| tx.execute("DELETE FROM complex_items WHERE graph_id = ?1", [id]))
            .map_err(|e| DbError::sql("deleting a graph", e))?;
        tx.commit()
            .map_err(|e| DbError::sql("deleting a graph", e))?;
        Ok(Some(g))
    }

    /// The complex graph with these names.
    pub fn complex(
        &self,
        service: &str,
        section: &str,
        graph: &str,
    ) -> Result<Option<Complex>, DbError> {
        let conn = self.conn.lock();
        let id: Option<i64> = conn
            .query_row(
                "SELECT id FROM complex_graphs WHERE service_name = ?1 AND section_name = ?2 \
                 AND graph_name = ?3",
                [service, section, graph],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| DbError::sql("reading a complex graph", e))?;
        match id {
            Some(id) => complex_by_id(&conn, id),
            None => Ok(None),
        }
    }

    /// The complex graph with this id.
    pub fn complex_by_id(&self, id: i64) -> Result<Option<Complex>, DbError> {
        let conn = self.conn.lock();
        complex_by_id(&conn, id)
    }

    /// Every complex graph, in list order.
    pub fn complexes(&self) -> Result<Vec<Complex>, DbError> {
        let conn = self.conn.lock();
        let ids: Vec<i64> = {
            let mut st = conn
                .prepare(
                    "SELECT id FROM complex_graphs \
                     ORDER BY service_name, section_name, graph_name DESC",
                )
                .map_err(|e| DbError::sql("listing complex graphs", e))?;
            let ids = st
                .query_map([], |r| r.get(0))
                .and_then(|rows| rows.collect::<Result<Vec<i64>, _>>())
                .map_err(|e| DbError::sql("listing complex graphs", e))?;
            ids
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(c) = complex_by_id(&conn, id)? {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Creates a complex graph; its names must be free among graphs and complex graphs.
    pub fn create_complex(&self, spec: &ComplexSpec, now: i64) -> Result<Complex, DbError> {
        let mut conn = self.conn.lock();
        if complex_id_by_names(&conn, spec)?.is_some()
            || graph_by_names(
                &conn,
                &spec.service_name,
                &spec.section_name,
                &spec.graph_name,
            )?
            .is_some()
        {
            return Err(DbError::Conflict(format!(
                "graph path already exists: {}/{}/{}",
                spec.service_name, spec.section_name, spec.graph_name
            )));
        }
        let op = "creating a complex graph";
        let tx = conn.savepoint().map_err(|e| DbError::sql(op, e))?;
        tx.execute(
            "INSERT INTO complex_graphs (service_name, section_name, graph_name, description, \
             sort, sumup, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            params![
                spec.service_name,
                spec.section_name,
                spec.graph_name,
                spec.description,
                spec.sort,
                spec.sumup,
                now
            ],
        )
        .map_err(|e| DbError::sql(op, e))?;
        let id = tx.last_insert_rowid();
        insert_items(&tx, id, &spec.items)?;
        tx.commit().map_err(|e| DbError::sql(op, e))?;
        complex_by_id(&conn, id)?
            .ok_or_else(|| DbError::sql(op, rusqlite::Error::QueryReturnedNoRows))
    }

    /// Replaces a complex graph's settings and items.
    pub fn update_complex(
        &self,
        id: i64,
        spec: &ComplexSpec,
        now: i64,
    ) -> Result<Complex, DbError> {
        let mut conn = self.conn.lock();
        if let Some(other) = complex_id_by_names(&conn, spec)? {
            if other != id {
                return Err(DbError::Conflict(format!(
                    "a complex graph {}/{}/{} already exists",
                    spec.service_name, spec.section_name, spec.graph_name
                )));
            }
        }
        let op = "updating a complex graph";
        let tx = conn.savepoint().map_err(|e| DbError::sql(op, e))?;
        tx.execute(
            "UPDATE complex_graphs SET service_name = ?1, section_name = ?2, graph_name = ?3, \
             description = ?4, sort = ?5, sumup = ?6, updated_at = ?7 WHERE id = ?8",
            params![
                spec.service_name,
                spec.section_name,
                spec.graph_name,
                spec.description,
                spec.sort,
                spec.sumup,
                now,
                id
            ],
        )
        .and_then(|_| tx.execute("DELETE FROM complex_items WHERE complex_id = ?1", [id]))
        .map_err(|e| DbError::sql(op, e))?;
        insert_items(&tx, id, &spec.items)?;
        tx.commit().map_err(|e| DbError::sql(op, e))?;
        complex_by_id(&conn, id)?
            .ok_or_else(|| DbError::sql(op, rusqlite::Error::QueryReturnedNoRows))
    }

    /// Removes a complex graph (its graphs stay); `None` when there was none.
    pub fn delete_complex(&self, id: i64) -> Result<Option<Complex>, DbError> {
        let conn = self.conn.lock();
        let Some(c) = complex_by_id(&conn, id)? else {
            return Ok(None);
        };
        conn.execute("DELETE FROM complex_graphs WHERE id = ?1", [id])
            .map_err(|e| DbError::sql("deleting a complex graph", e))?;
        Ok(Some(c))
    }

    /// Imports a graph (`sumi import growthforecast`): a graph with the same names
    /// keeps its id, series, number, mode and points and takes `g`'s settings
    /// (description, sort, gmode, colour, types, limits, adjust, unit); otherwise `g`
    /// is inserted whole, under `g.id` when that id is free. Returns the graph's id and
    /// whether it was created.
    pub fn import_graph(&self, g: &Graph) -> Result<(i64, bool), DbError> {
        let conn = self.conn.lock();
        if let Some(mut old) =
            graph_by_names(&conn, &g.service_name, &g.section_name, &g.graph_name)?
        {
            old.description.clone_from(&g.description);
            old.sort = g.sort;
            old.gmode.clone_from(&g.gmode);
            old.color.clone_from(&g.color);
            old.draw.clone_from(&g.draw);
            old.stype.clone_from(&g.stype);
            old.llimit = g.llimit;
            old.ulimit = g.ulimit;
            old.sllimit = g.sllimit;
            old.sulimit = g.sulimit;
            old.adjust.clone_from(&g.adjust);
            old.adjustval.clone_from(&g.adjustval);
            old.unit.clone_from(&g.unit);
            drop(conn);
            self.update_graph(&old)?;
            return Ok((old.id, false));
        }
        let id = match graph_by_id(&conn, g.id)? {
            None if g.id > 0 => Some(g.id),
            _ => None,
        };
        conn.execute(
            "INSERT INTO graphs (id, service_name, section_name, graph_name, series, number, \
             mode, derive, description, sort, gmode, color, ulimit, llimit, sulimit, sllimit, \
             type, stype, adjust, adjustval, unit, created_at, updated_at, timestamp) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
             ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
            params![
                id,
                g.service_name,
                g.section_name,
                g.graph_name,
                g.series,
                g.number,
                g.mode,
                g.derive,
                g.description,
                g.sort,
                g.gmode,
                g.color,
                g.ulimit,
                g.llimit,
                g.sulimit,
                g.sllimit,
                g.draw,
                g.stype,
                g.adjust,
                g.adjustval,
                g.unit,
                g.created_at,
                g.updated_at,
                g.timestamp
            ],
        )
        .map_err(|e| DbError::sql("importing a graph", e))?;
        Ok((conn.last_insert_rowid(), true))
    }

    /// Imports a complex graph: one with the same names takes `spec`; otherwise it is
    /// created, under `id` when that id is free, with GrowthForecast's times. Returns
    /// its id and whether it was created.
    pub fn import_complex(
        &self,
        spec: &ComplexSpec,
        id: i64,
        created_at: i64,
        updated_at: i64,
    ) -> Result<(i64, bool), DbError> {
        let mut conn = self.conn.lock();
        if let Some(old) = complex_id_by_names(&conn, spec)? {
            drop(conn);
            self.update_complex(old, spec, updated_at)?;
            return Ok((old, false));
        }
        if graph_by_names(
            &conn,
            &spec.service_name,
            &spec.section_name,
            &spec.graph_name,
        )?
        .is_some()
        {
            return Err(DbError::Conflict(format!(
                "graph path already exists: {}/{}/{}",
                spec.service_name, spec.section_name, spec.graph_name
            )));
        }
        let free = complex_by_id(&conn, id)?.is_none() && id > 0;
        let op = "importing a complex graph";
        let tx = conn.transaction().map_err(|e| DbError::sql(op, e))?;
        tx.execute(
            "INSERT INTO complex_graphs (id, service_name, section_name, graph_name, \
             description, sort, sumup, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                free.then_some(id),
                spec.service_name,
                spec.section_name,
                spec.graph_name,
                spec.description,
                spec.sort,
                spec.sumup,
                created_at,
                updated_at
            ],
        )
        .map_err(|e| DbError::sql(op, e))?;
        let new_id = tx.last_insert_rowid();
        insert_items(&tx, new_id, &spec.items)?;
        tx.commit().map_err(|e| DbError::sql(op, e))?;
        Ok((new_id, true))
    }

    /// Adds a vertical rule.
    pub fn add_vrule(&self, v: &Vrule) -> Result<Vrule, DbError> {
        let conn = self.conn.lock();
        conn.execute(
            "INSERT INTO vrules (graph_path, time, color, description, dashes) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![v.graph_path, v.time, v.color, v.description, v.dashes],
        )
        .map_err(|e| DbError::sql("adding a vertical rule", e))?;
        Ok(Vrule {
            id: conn.last_insert_rowid(),
            ..v.clone()
        })
    }

    /// The vertical rules in `[from, until]` that apply to `graph_path` (those of the
    /// path itself and of every path above it).
    pub fn vrules(&self, graph_path: &str, from: i64, until: i64) -> Result<Vec<Vrule>, DbError> {
        let mut paths = vec!["/".to_string()];
        let mut acc = String::new();
        for part in graph_path
            .trim_start_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
        {
            acc.push('/');
            acc.push_str(part);
            paths.push(acc.clone());
        }
        let conn = self.conn.lock();
        let mut st = conn
            .prepare_cached(
                "SELECT id, graph_path, time, color, description, dashes FROM vrules \
                 WHERE time BETWEEN ?1 AND ?2 ORDER BY time, id",
            )
            .map_err(|e| DbError::sql("reading vertical rules", e))?;
        let all = st
            .query_map(params![from, until], |r| {
                Ok(Vrule {
                    id: r.get(0)?,
                    graph_path: r.get(1)?,
                    time: r.get(2)?,
                    color: r.get(3)?,
                    description: r.get(4)?,
                    dashes: r.get(5)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| DbError::sql("reading vertical rules", e))?;
        Ok(all
            .into_iter()
            .filter(|v| paths.contains(&v.graph_path))
            .collect())
    }
}

fn entry_name(e: &Entry) -> &str {
    match e {
        Entry::Graph(g) => &g.graph_name,
        Entry::Complex(c) => &c.graph_name,
    }
}

fn strings<P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    p: P,
) -> Result<Vec<String>, DbError> {
    let mut st = conn
        .prepare_cached(sql)
        .map_err(|e| DbError::sql("listing names", e))?;
    let rows = st
        .query_map(p, |r| r.get(0))
        .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
        .map_err(|e| DbError::sql("listing names", e))?;
    Ok(rows)
}

pub(crate) fn graph_by_names(
    conn: &Connection,
    service: &str,
    section: &str,
    graph: &str,
) -> Result<Option<Graph>, DbError> {
    let sql = format!(
        "SELECT {GRAPH_COLUMNS} FROM graphs \
         WHERE service_name = ?1 AND section_name = ?2 AND graph_name = ?3"
    );
    let mut st = conn
        .prepare_cached(&sql)
        .map_err(|e| DbError::sql("reading a graph", e))?;
    st.query_row([service, section, graph], graph_from_row)
        .optional()
        .map_err(|e| DbError::sql("reading a graph", e))
}

pub(crate) fn graph_by_id(conn: &Connection, id: i64) -> Result<Option<Graph>, DbError> {
    let sql = format!("SELECT {GRAPH_COLUMNS} FROM graphs WHERE id = ?1");
    let mut st = conn
        .prepare_cached(&sql)
        .map_err(|e| DbError::sql("reading a graph", e))?;
    st.query_row([id], graph_from_row)
        .optional()
        .map_err(|e| DbError::sql("reading a graph", e))
}

fn complex_id_by_names(conn: &Connection, spec: &ComplexSpec) -> Result<Option<i64>, DbError> {
    conn.query_row(
        "SELECT id FROM complex_graphs WHERE service_name = ?1 AND section_name = ?2 \
         AND graph_name = ?3",
        [&spec.service_name, &spec.section_name, &spec.graph_name],
        |r| r.get(0),
    )
    .optional()
    .map_err(|e| DbError::sql("reading a complex graph", e))
}

fn complex_by_id(conn: &Connection, id: i64) -> Result<Option<Complex>, DbError> {
    let op = "reading a complex graph";
    let mut st = conn
        .prepare_cached(
            "SELECT id, service_name, section_name, graph_name, description, sort, sumup, \
             created_at, updated_at FROM complex_graphs WHERE id = ?1",
        )
        .map_err(|e| DbError::sql(op, e))?;
    let head = st
        .query_row([id], |r| {
            Ok(Complex {
                id: r.get(0)?,
                service_name: r.get(1)?,
                section_name: r.get(2)?,
                graph_name: r.get(3)?,
                description: r.get(4)?,
                sort: r.get(5)?,
                sumup: r.get(6)?,
                items: Vec::new(),
                created_at: r.get(7)?,
                updated_at: r.get(8)?,
            })
        })
        .optional()
        .map_err(|e| DbError::sql(op, e))?;
    let Some(mut c) = head else {
        return Ok(None);
    };
    let mut st = conn
        .prepare_cached(
            "SELECT graph_id, type, gmode, stack FROM complex_items WHERE complex_id = ?1 \
             ORDER BY position",
        )
        .map_err(|e| DbError::sql(op, e))?;
    c.items = st
        .query_map([id], |r| {
            Ok(ComplexItem {
                graph_id: r.get(0)?,
                draw: r.get(1)?,
                gmode: r.get(2)?,
                stack: r.get(3)?,
            })
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| DbError::sql(op, e))?;
    Ok(Some(c))
}

fn insert_items(tx: &Connection, id: i64, items: &[ComplexItem]) -> Result<(), DbError> {
    let mut st = tx
        .prepare_cached(
            "INSERT INTO complex_items (complex_id, position, graph_id, type, gmode, stack) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(|e| DbError::sql("writing complex items", e))?;
    for (pos, it) in items.iter().enumerate() {
        st.execute(params![
            id,
            pos as i64,
            it.graph_id,
            it.draw,
            it.gmode,
            it.stack
        ])
        .map_err(|e| DbError::sql("writing complex items", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert_graph(db: &Db, s: &str, sec: &str, g: &str, sort: i64) -> i64 {
        let conn = db.conn.lock();
        conn.execute(
            "INSERT INTO graphs (service_name, section_name, graph_name, series, sort, \
             created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 0, 0)",
            params![s, sec, g, format!("{s}.{sec}.{g}"), sort],
        )
        .unwrap();
        conn.last_insert_rowid()
    }

    fn spec(name: &str, ids: &[i64]) -> ComplexSpec {
        ComplexSpec {
            service_name: "svc".into(),
            section_name: "sec".into(),
            graph_name: name.into(),
            description: "d".into(),
            sort: 5,
            sumup: true,
            items: ids
                .iter()
                .map(|&graph_id| ComplexItem {
                    graph_id,
                    draw: "AREA".into(),
                    gmode: "gauge".into(),
                    stack: true,
                })
                .collect(),
        }
    }

    #[test]
    fn graphs_sections_and_complexes() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let a = insert_graph(&db, "svc", "sec", "a", 1);
        let b = insert_graph(&db, "svc", "sec", "b", 9);
        insert_graph(&db, "svc", "other", "c", 0);
        insert_graph(&db, "alpha", "x", "y", 0);
        assert_eq!(db.services().unwrap(), ["alpha", "svc"]);
        assert_eq!(db.sections("svc").unwrap(), ["other", "sec"]);
        assert_eq!(db.graph("svc", "sec", "a").unwrap().unwrap().id, a);
        assert!(db.graph("svc", "sec", "zz").unwrap().is_none());

        let c = db.create_complex(&spec("both", &[a, b]), 100).unwrap();
        assert_eq!(c.items.len(), 2);
        assert!(c.sumup);
        assert!(matches!(
            db.create_complex(&spec("both", &[a, b]), 100),
            Err(DbError::Conflict(_))
        ));
        assert!(matches!(
            db.create_complex(&spec("a", &[a, b]), 100),
            Err(DbError::Conflict(_))
        ));
        // section order: sort descending: b (9), complex (5), a (1)
        let names: Vec<String> = db
            .section("svc", "sec")
            .unwrap()
            .iter()
            .map(|e| entry_name(e).to_string())
            .collect();
        assert_eq!(names, ["b", "both", "a"]);

        let mut changed = spec("both2", &[b]);
        changed.sumup = false;
        let c2 = db.update_complex(c.id, &changed, 200).unwrap();
        assert_eq!(
            (c2.graph_name.as_str(), c2.items.len(), c2.updated_at),
            ("both2", 1, 200)
        );

        // deleting a graph removes it from complex graphs
        assert!(db.delete_graph(b).unwrap().is_some());
        assert!(db.complex_by_id(c.id).unwrap().unwrap().items.is_empty());
        assert!(db.delete_graph(b).unwrap().is_none());
        assert!(db.delete_complex(c.id).unwrap().is_some());
        assert!(db.complexes().unwrap().is_empty());
    }

    #[test]
    fn renames_must_stay_unique() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let a = insert_graph(&db, "s", "t", "a", 0);
        insert_graph(&db, "s", "t", "b", 0);
        let mut g = db.graph_by_id(a).unwrap().unwrap();
        g.graph_name = "b".into();
        assert!(matches!(db.update_graph(&g), Err(DbError::Conflict(_))));
        g.graph_name = "renamed".into();
        g.unit = "req".into();
        db.update_graph(&g).unwrap();
        let back = db.graph_by_id(a).unwrap().unwrap();
        assert_eq!(back.graph_name, "renamed");
        assert_eq!(back.series, "s.t.a", "the series stays with the graph");
        assert_eq!(back.unit, "req");
    }

    #[test]
    fn vrules_apply_to_their_path_and_below() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        for (path, t) in [
            ("/", 10),
            ("/s", 20),
            ("/s/t", 30),
            ("/s/t/g", 40),
            ("/x", 50),
        ] {
            db.add_vrule(&Vrule {
                id: 0,
                graph_path: path.into(),
                time: t,
                color: "#FF0000".into(),
                description: String::new(),
                dashes: String::new(),
            })
            .unwrap();
        }
        let times: Vec<i64> = db
            .vrules("/s/t/g", 0, 100)
            .unwrap()
            .iter()
            .map(|v| v.time)
            .collect();
        assert_eq!(times, [10, 20, 30, 40]);
        assert_eq!(db.vrules("/s/t/g", 15, 35).unwrap().len(), 2);
        assert_eq!(db.vrules("/x", 0, 100).unwrap().len(), 2);
    }
}
