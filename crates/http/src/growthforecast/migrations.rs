//! The metadata database's schema, as numbered migrations.
//!
//! The database records its version in SQLite's `PRAGMA user_version`. Opening it
//! applies, in order and each in its own transaction, every migration with a higher
//! number; a database newer than this binary (a downgrade) is refused rather than
//! guessed at. A migration is never edited once released: changes are new entries.

use rusqlite::Connection;

use super::db::DbError;

/// `(version, SQL)`; versions start at 1 and have no gaps.
const MIGRATIONS: &[(u32, &str)] = &[(
    1,
    "
CREATE TABLE graphs (
    id           INTEGER PRIMARY KEY,
    service_name TEXT NOT NULL,
    section_name TEXT NOT NULL,
    graph_name   TEXT NOT NULL,
    -- the sumi series the points go to; kept when the graph is renamed
    series       TEXT NOT NULL,
    number       REAL NOT NULL DEFAULT 0,
    mode         TEXT NOT NULL DEFAULT 'gauge',
    -- 1 when the first post said derive: read as a per-second rate ever after
    derive       INTEGER NOT NULL DEFAULT 0,
    description  TEXT NOT NULL DEFAULT '',
    sort         INTEGER NOT NULL DEFAULT 0,
    gmode        TEXT NOT NULL DEFAULT 'gauge',
    color        TEXT NOT NULL DEFAULT '#00CC00',
    ulimit       REAL NOT NULL DEFAULT 1000000000000000,
    llimit       REAL NOT NULL DEFAULT -1000000000,
    sulimit      REAL NOT NULL DEFAULT 100000,
    sllimit      REAL NOT NULL DEFAULT -100000,
    type         TEXT NOT NULL DEFAULT 'AREA',
    stype        TEXT NOT NULL DEFAULT 'AREA',
    adjust       TEXT NOT NULL DEFAULT '*',
    adjustval    TEXT NOT NULL DEFAULT '1',
    unit         TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    timestamp    INTEGER,
    UNIQUE (service_name, section_name, graph_name)
);
CREATE TABLE complex_graphs (
    id           INTEGER PRIMARY KEY,
    service_name TEXT NOT NULL,
    section_name TEXT NOT NULL,
    graph_name   TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    sort         INTEGER NOT NULL DEFAULT 0,
    sumup        INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (service_name, section_name, graph_name)
);
CREATE TABLE complex_items (
    complex_id   INTEGER NOT NULL REFERENCES complex_graphs(id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    graph_id     INTEGER NOT NULL,
    type         TEXT NOT NULL DEFAULT 'AREA',
    gmode        TEXT NOT NULL DEFAULT 'gauge',
    stack        INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (complex_id, position)
);
CREATE TABLE vrules (
    id           INTEGER PRIMARY KEY,
    graph_path   TEXT NOT NULL,
    time         INTEGER NOT NULL,
    color        TEXT NOT NULL DEFAULT '#FF0000',
    description  TEXT NOT NULL DEFAULT '',
    dashes       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX vrules_time_path ON vrules (time, graph_path);
",
)];

/// The version a database has once every migration is applied.
pub(crate) fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |(v, _)| *v)
}

/// Brings the database to [`latest`].
pub(crate) fn migrate(conn: &mut Connection) -> Result<u32, DbError> {
    let current: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| DbError::sql("reading the schema version", e))?;
    if current > latest() {
        return Err(DbError::TooNew {
            found: current,
            known: latest(),
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        let migration_error = |source| DbError::Migration {
            version: *version,
            source,
        };
        let tx = conn.transaction().map_err(migration_error)?;
        tx.execute_batch(sql).map_err(migration_error)?;
        tx.pragma_update(None, "user_version", version)
            .map_err(migration_error)?;
        tx.commit().map_err(migration_error)?;
    }
    Ok(latest())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive() {
        for (i, (v, _)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*v as usize, i + 1);
        }
    }

    #[test]
    fn migrates_once_and_refuses_newer() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), latest());
        // a second open applies nothing (CREATE TABLE would fail if it did)
        assert_eq!(migrate(&mut conn).unwrap(), latest());
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 4);
        conn.pragma_update(None, "user_version", latest() + 1)
            .unwrap();
        assert!(matches!(migrate(&mut conn), Err(DbError::TooNew { .. })));
    }
}
