"""The GrowthForecast side of `cargo test -p sumi --test import_gf`.

    /usr/bin/python3 import_gf_gen.py GF_DATA_DIR DUMP_FILE

Leaves GF_DATA_DIR as a GrowthForecast server (kazeburo/GrowthForecast, SQLite
back end) leaves its --data-dir, built the way GrowthForecast builds it:

- gforecast.db with GrowthForecast's tables (graphs, prev_graphs, prev_short_graphs,
  complex_graphs, vrules) and their columns, graph settings in `meta` as JSON, complex
  graphs' items in `meta` as `type-1`/`path-1`/`gmode-1` and `type-2`/`path-2`/
  `gmode-2`/`stack-2`;
- per graph, `<md5 of the id>.rrd` (step 300, DS num and sub, AVERAGE and MAX RRAs of
  1, 6, 24 and 288 steps) and `<md5>_s.rrd` (step 60, AVERAGE and MAX of 4800 rows),
  written with Debian's rrdtool (python3-rrdtool) by a simulated worker that samples
  each graph's number every 5 minutes and every minute, with the difference from the
  previous sample in `sub`, as GrowthForecast's workers do; DERIVE for a graph whose
  first post said derive.

The same tables are also written to DUMP_FILE as `mysqldump` writes GrowthForecast's
MySQL database (--mysql): settings comments, `CREATE TABLE` with the MySQL columns,
`LOCK TABLES`, one extended `INSERT` a table with MySQL's string escapes.

Posts are simulated relative to the real current time, seeded. Then rrdtool fetches
each graph's files over the ranges the test reads, and one JSON document goes to
stdout:

    {"t0": T0, "graphs": [{"id", "service", "section", "graph", "mode", "derive",
       "fetch": {"60": rows, "1800": rows, "7200": rows, "86400": rows,
                 "sub1800": rows, "sub7200": rows, "sub86400": rows}}]}

rows: [[t, value-bits or null], ...], t the end of the row's interval (what rrdtool
fetch prints), a value as the 16 hex digits of its IEEE-754 bits. The numbers are
`num`'s AVERAGE RRAs (of the 1-minute file for 60), the `sub…` ones `sub`'s (the
subtract view).
"""

import json
import math
import os
import random
import sqlite3
import struct
import sys
import time
from hashlib import md5

import rrdtool

MIN, HOUR, DAY = 60, 3600, 86400
HISTORY = 430 * DAY  # of the 5-minute file
SHORT = 4 * DAY  # of the 1-minute file (it keeps 80 hours)

SCHEMA = """
CREATE TABLE graphs (
    id           INTEGER NOT NULL PRIMARY KEY,
    service_name VARCHAR(255) NOT NULL,
    section_name VARCHAR(255) NOT NULL,
    graph_name   VARCHAR(255) NOT NULL,
    number       INT NOT NULL DEFAULT 0,
    mode         VARCHAR(255) NOT NULL DEFAULT 'gauge',
    description  VARCHAR(255) NOT NULL DEFAULT '',
    sort         UNSIGNED INT NOT NULL DEFAULT 0,
    gmode        VARCHAR(255) NOT NULL DEFAULT 'gauge',
    color        VARCHAR(255) NOT NULL DEFAULT '#00CC00',
    ulimit       INT NOT NULL DEFAULT 1000000000000000,
    llimit       INT NOT NULL DEFAULT 0,
    sulimit      INT NOT NULL DEFAULT 100000,
    sllimit      INT NOT NULL DEFAULT 0,
    type         VARCHAR(255) NOT NULL DEFAULT 'AREA',
    stype        VARCHAR(255) NOT NULL DEFAULT 'AREA',
    meta         TEXT,
    created_at   UNSIGNED INT NOT NULL,
    updated_at   UNSIGNED INT NOT NULL,
    timestamp    UNSIGNED INT DEFAULT NULL,
    UNIQUE  (service_name, section_name, graph_name)
);
CREATE TABLE prev_graphs (
    graph_id INT NOT NULL, number INT NOT NULL DEFAULT 0, subtract INT,
    updated_at UNSIGNED INT NOT NULL, PRIMARY KEY (graph_id)
);
CREATE TABLE prev_short_graphs (
    graph_id INT NOT NULL, number INT NOT NULL DEFAULT 0, subtract INT,
    updated_at UNSIGNED INT NOT NULL, PRIMARY KEY (graph_id)
);
CREATE TABLE complex_graphs (
    id           INTEGER NOT NULL PRIMARY KEY,
    service_name VARCHAR(255) NOT NULL,
    section_name VARCHAR(255) NOT NULL,
    graph_name   VARCHAR(255) NOT NULL,
    number       INT NOT NULL DEFAULT 0,
    description  VARCHAR(255) NOT NULL DEFAULT '',
    sort         UNSIGNED INT NOT NULL DEFAULT 0,
    meta         TEXT,
    created_at   UNSIGNED INT NOT NULL,
    updated_at   UNSIGNED INT NOT NULL,
    UNIQUE  (service_name, section_name, graph_name)
);
CREATE TABLE vrules (
    id           INTEGER NOT NULL PRIMARY KEY,
    graph_path   VARCHAR(255) NOT NULL,
    time         INT UNSIGNED NOT NULL,
    color        VARCHAR(255) NOT NULL DEFAULT '#FF0000',
    description  TEXT,
    dashes       VARCHAR(255) NOT NULL DEFAULT ''
);
CREATE INDEX time_graph_path on vrules (time, graph_path);
"""

# id, service, section, graph, mode, settings (columns and meta), the posts:
# (kind, mean seconds between posts)
GRAPHS = [
    (1, "web", "access", "pv", "count", {}, ("count", 7 * MIN)),
    (2, "web", "access", "uu", "gauge",
     {"color": "#3366cc", "sort": 12, "description": "unique users (\"UU\"), it's daily",
      "gmode": "both", "type": "LINE1", "stype": "LINE2"}, ("walk", 11 * MIN)),
    (3, "web", "latency", "p99", "gauge",
     {"ulimit": 900, "llimit": 0, "color": "#cc3399",
      "meta": {"adjust": "/", "adjustval": "1000", "unit": "s"}}, ("walk", 3 * MIN)),
    (4, "batch", "jobs", "bytes", "derive", {"description": "bytes copied"},
     ("counter", 5 * MIN)),
    (5, "batch", "jobs", "state", "modified", {"sort": 3}, ("levels", 90 * MIN)),
    (6, "ユーザー", "load avg", "50%", "gauge", {"sort": 19}, ("walk", 30 * MIN)),
    # a graph the worker never wrote: metadata only
    (7, "batch", "jobs", "never", "gauge", {}, None),
    # damaged: its 5-minute file is cut short
    (8, "batch", "broken", "cut", "gauge", {}, ("walk", 10 * MIN)),
]


def bits(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return struct.pack(">d", float(v)).hex()


def posts(rng, kind, every, t_from, t_to):
    """(time, number posted) of one graph, in time order."""
    out = []
    t = t_from + rng.randrange(every)
    level = rng.randrange(100, 1000)
    while t < t_to:
        if kind == "count":
            out.append((t, rng.randrange(1, 50)))
        elif kind == "walk":
            # a walk pulled back towards 500
            level = max(0, level + rng.randrange(-40, 41) + (500 - level) // 50)
            out.append((t, level))
        elif kind == "counter":
            level += rng.randrange(0, 300000)
            out.append((t, level))
        elif kind == "levels":
            out.append((t, rng.choice([0, 1, 2, 3])))
        t += rng.randrange(every // 2, every * 3 // 2 + 1)
    return out


class Graph:
    """A graph's row as GrowthForecast's Data.pm keeps it while posts arrive."""

    def __init__(self, mode):
        self.mode = mode
        self.number = 0
        self.updated_at = None

    def post(self, t, n):
        if self.mode == "count":
            self.number += n
            self.updated_at = t
        elif self.mode == "modified":
            if self.updated_at is None or n != self.number:
                self.number = n
                self.updated_at = t
        else:
            self.number = n
            self.updated_at = t


def work(path, step, heartbeat, rra_rows, dst, created, t_end, timeline, mode):
    """A worker writing one RRD file: at each multiple of step, the number and the
    subtract (GrowthForecast's get_by_id_for_rrdupdate[_short])."""
    args = ["--start", str(created - 10), "--step", str(step),
            "DS:num:%s:%d:U:U" % (dst, heartbeat)]
    for cf in ("AVERAGE", "MAX"):
        for pdp, rows in rra_rows:
            args.append("RRA:%s:0.5:%d:%d" % (cf, pdp, rows))
    args.append("DS:sub:%s:%d:U:U" % (dst, heartbeat))
    rrdtool.create(path, *args)
    prev = None  # (number, subtract, updated_at)
    i = 0
    g = Graph(mode)
    batch = []
    t = created - created % step + step
    while t <= t_end:
        while i < len(timeline) and timeline[i][0] <= t:
            g.post(*timeline[i])
            i += 1
        if g.updated_at is not None:
            if prev is None:
                sub = "U"
                prev = (g.number, None, g.updated_at)
            elif g.updated_at != prev[2]:
                sub = g.number - prev[0]
                prev = (g.number, sub, g.updated_at)
            elif mode in ("gauge", "modified"):
                sub = "U" if prev[1] is None else prev[1]
            else:
                sub = 0
            batch.append("%d:%s:%s" % (t, g.number, sub))
            if len(batch) >= 2000:
                rrdtool.update(path, "-t", "num:sub", *batch)
                batch = []
        t += step
    if batch:
        rrdtool.update(path, "-t", "num:sub", *batch)
    return g


def fetch(path, step, start, end, ds="num"):
    (first, _last, res), names, rows = rrdtool.fetch(
        path, "AVERAGE", "-r", str(step), "-s", str(start), "-e", str(end))
    assert res == step, (path, step, res)
    col = names.index(ds)
    return [[first + (k + 1) * res, bits(r[col])] for k, r in enumerate(rows)]


MYSQL_TYPES = {
    "id": "int(10) unsigned NOT NULL AUTO_INCREMENT",
    "number": "bigint(20) NOT NULL DEFAULT '0'",
    "sort": "int(10) unsigned NOT NULL DEFAULT '0'",
    "time": "int(10) unsigned NOT NULL",
    "created_at": "int(10) unsigned NOT NULL",
    "updated_at": "int(10) unsigned NOT NULL",
    "timestamp": "int(10) unsigned DEFAULT NULL",
    "meta": "text",
    "description": "varchar(255) NOT NULL DEFAULT ''",
}


def sql_value(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    out = []
    for c in v:
        out.append({"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n",
                    "\r": "\\r", "\0": "\\0", "\x1a": "\\Z"}.get(c, c))
    return "'" + "".join(out) + "'"


def write_dump(db, path):
    """The tables as mysqldump 10.13 writes them (default options)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("-- MySQL dump 10.13  Distrib 5.7.44, for Linux (x86_64)\n--\n"
                "-- Host: localhost    Database: growthforecast\n"
                "-- ------------------------------------------------------\n\n"
                "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n"
                "/*!40101 SET NAMES utf8 */;\n/*!40103 SET TIME_ZONE='+00:00' */;\n\n")
        for table in ("graphs", "prev_graphs", "complex_graphs", "vrules"):
            cur = db.execute("SELECT * FROM %s ORDER BY rowid" % table)
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
            f.write("--\n-- Table structure for table `%s`\n--\n\n" % table)
            f.write("DROP TABLE IF EXISTS `%s`;\n" % table)
            f.write("CREATE TABLE `%s` (\n" % table)
            for c in cols:
                t = MYSQL_TYPES.get(c, "varchar(255) COLLATE utf8_bin NOT NULL DEFAULT ''")
                f.write("  `%s` %s,\n" % (c, t))
            f.write("  PRIMARY KEY (`%s`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8;\n\n" % cols[0])
            f.write("LOCK TABLES `%s` WRITE;\n" % table)
            f.write("/*!40000 ALTER TABLE `%s` DISABLE KEYS */;\n" % table)
            if rows:
                f.write("INSERT INTO `%s` VALUES %s;\n" % (table, ",".join(
                    "(" + ",".join(sql_value(v) for v in r) + ")" for r in rows)))
            f.write("/*!40000 ALTER TABLE `%s` ENABLE KEYS */;\nUNLOCK TABLES;\n\n" % table)
        f.write("-- Dump completed on 2026-11-27  9:00:00\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(2011)
    t0 = int(time.time())
    # the last post well before the last samples, so the row's number is the last one
    last_post = t0 - t0 % 300 - 600
    db = sqlite3.connect(os.path.join(out, "gforecast.db"))
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(SCHEMA)
    report = []
    for gid, service, section, name, mode, settings, how in GRAPHS:
        created = t0 - HISTORY
        timeline = posts(rng, how[0], how[1], created, last_post) if how else []
        md = md5(str(gid).encode()).hexdigest()
        dst = "DERIVE" if mode == "derive" else "GAUGE"
        g = Graph(mode)
        if how:
            g = work(os.path.join(out, md + ".rrd"), 300, 600,
                     [(1, 1440), (6, 1008), (24, 1344), (288, 2500)],
                     dst, created, t0, timeline, mode)
            work(os.path.join(out, md + "_s.rrd"), 60, 120, [(1, 4800)],
                 dst, t0 - SHORT, t0, timeline, mode)
        cols = {
            "id": gid, "service_name": service, "section_name": section,
            "graph_name": name, "number": g.number, "mode": mode,
            "llimit": -1000000000, "sllimit": -100000,
            "created_at": created, "updated_at": g.updated_at or created,
        }
        meta = settings.get("meta")
        for k, v in settings.items():
            if k != "meta":
                cols[k] = v
        if meta is not None:
            cols["meta"] = json.dumps(meta)
        keys = sorted(cols)
        db.execute("INSERT INTO graphs (%s) VALUES (%s)" % (
            ",".join(keys), ",".join("?" * len(keys))), [cols[k] for k in keys])
        if gid == 8:
            p = os.path.join(out, md + ".rrd")
            with open(p, "r+b") as f:
                f.truncate(os.path.getsize(p) // 2)
        if not how or gid == 8:
            continue
        fetches = {}
        short = os.path.join(out, md + "_s.rrd")
        main_f = os.path.join(out, md + ".rrd")
        fetches["60"] = fetch(short, 60, t0 - 33 * HOUR, t0)
        fetches["1800"] = fetch(main_f, 1800, t0 - 8 * DAY, t0)
        fetches["7200"] = fetch(main_f, 7200, t0 - 35 * DAY, t0)
        fetches["86400"] = fetch(main_f, 86400, t0 - 400 * DAY, t0)
        # the subtract: what GrowthForecast drew for gmode=subtract
        for step, span in ((1800, 8 * DAY), (7200, 35 * DAY), (86400, 400 * DAY)):
            fetches["sub%d" % step] = fetch(main_f, step, t0 - span, t0, "sub")
        report.append({
            "id": gid, "service": service, "section": section, "graph": name,
            "mode": mode, "derive": mode == "derive", "number": g.number,
            "fetch": fetches,
        })
    # a row GrowthForecast could not read either: meta that is not JSON
    db.execute(
        "INSERT INTO graphs (id, service_name, section_name, graph_name, meta, "
        "created_at, updated_at) VALUES (9, 'web', 'access', 'bad', '{not json', ?, ?)",
        (t0, t0))
    complex_meta = {
        "type-1": "AREA", "path-1": "1", "gmode-1": "gauge",
        "type-2": ["LINE1", "AREA"], "path-2": ["2", "6"],
        "gmode-2": ["subtract", "gauge"], "stack-2": ["0", "1"], "sumup": "1",
    }
    db.execute(
        "INSERT INTO complex_graphs (id, service_name, section_name, graph_name, "
        "description, sort, meta, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
        (3, "web", "access", "overview", "pv, uu and load", 15,
         json.dumps(complex_meta), t0 - DAY, t0 - HOUR))
    for path, t, color, desc, dashes in [
        ("/web", t0 - 2 * DAY, "#FF0000", "deploy", ""),
        ("/batch/jobs/bytes", t0 - 5 * HOUR, "#0000FF", "restart", "2,4"),
    ]:
        db.execute(
            "INSERT INTO vrules (graph_path, time, color, description, dashes) "
            "VALUES (?,?,?,?,?)", (path, t, color, desc, dashes))
    db.commit()
    write_dump(db, sys.argv[2])
    db.close()
    json.dump({"t0": t0, "graphs": report}, sys.stdout)


if __name__ == "__main__":
    main()
