"""Cluster mode (``run.py --cluster``): graphite-web 1.1.10 as a cluster front end of sumi.

graphite-web is started with ``CLUSTER_SERVERS`` naming sumi's HTTP port and no whisper
data of its own, so every answer it gives comes through graphite-web's cluster protocol:
``/metrics/find/?local=1&format=pickle`` for the metric tree and
``/render/?local=1&format=pickle&target=<pattern>&from&until&now`` for the data, read
back with graphite-web's own safe unpickler. A second front end does the same with
``format=msgpack`` (``CLUSTER_SERVERS = ['host:port?format=msgpack']``).

Each front end is asked a dashboard's worth of questions (plain paths, globs, functions
evaluated by graphite-web on sumi's data, ``/metrics/find`` as Grafana's tree asks it,
``/metrics/index.json``), and its answers are compared exactly with sumi's own answers
to the same questions. Points are generated and sent to sumi as in the main mode; no
whisper file is written.
"""

import os
import time

from . import compare, conf, gen, procs, servers
from .queries import Query, render_json, find

# what dashboards ask: paths and globs, and functions graphite-web evaluates on the data
# it fetched from sumi
DASHBOARD_TARGETS = [
    "diff.fine.web01.cpu.user",
    "diff.fine.web0*.cpu.*",
    "diff.mid.app.{alpha,beta}.rate",
    "diff.legacy.host?.load",
    "diff.wide.svc.*.*",
    "diff.nothing.*",
    "movingAverage(diff.mid.app.*.rate,'10min')",
    "aliasByNode(diff.fine.web0*.cpu.user,2)",
    "highestMax(diff.legacy.host*.load,2)",
    "nPercentile(diff.mid.app.alpha.rate,95)",
    "removeBelowValue(diff.fine.web01.cpu.*,40)",
    "aliasSub(diff.mid.app.beta.rate,'(^.*$)','\\1 A')",
    "holtWintersForecast(diff.mid.app.gamma.rate,'2h','1h')",
    "sortByMaxima(diff.fine.web01.*.*)",
    "legendValue(diff.legacy.host1.load,'avg','last')",
    "constantLine(100)",
]

RANGES = ["-30min", "-3h", "-2d"]

FIND = ["*", "diff.*", "diff.fine.*", "diff.mid.app.*", "diff.mid.leafbranch*", "diff.legacy.host1.*",
        "diff.nothing.*"]


def cluster_queries(now):
    out = []
    for rng in RANGES:
        for t in DASHBOARD_TARGETS:
            out.append(render_json([t], now, [("from", rng)]))
    out.append(render_json(DASHBOARD_TARGETS[:4], now, [("from", "-1h"), ("until", "-10min")]))
    out.append(render_json(["diff.fine.web01.cpu.user", "diff.mid.app.alpha.rate"], now,
                           [("from", "-6h"), ("maxDataPoints", "100")]))
    for q in FIND:
        out.append(find([("query", q)], now))
        out.append(find([("query", q), ("from", "-1h"), ("until", "now")], now))
    out.append(find([("query", "diff.fine."), ("format", "completer")], now, "completer"))
    out.append(Query("/metrics/index.json", [("now", str(now))], "index"))
    return out


class FrontEnd(servers.Graphite):
    """A graphite-web whose only storage is sumi, over the cluster protocol."""

    def __init__(self, work, venv, sumi_http_port, fmt):
        super().__init__(work, venv)
        host = "127.0.0.1:%d" % sumi_http_port
        if fmt != "pickle":
            host += "?format=%s" % fmt
        with open(os.path.join(self.settings_dir, "sumi_diff_settings.py"), "a") as f:
            f.write("CLUSTER_SERVERS = [%r]\n" % host)
            f.write("REMOTE_EXCLUDE_LOCAL = False\n")
            f.write("REMOTE_RETRY_DELAY = 0.0\n")


def main(run):
    """Runs cluster mode for run.py's Run; returns the exit code."""
    args = run.args
    schemas_path = os.path.join(run.work, "storage-schemas.conf")
    aggregation_path = os.path.join(run.work, "storage-aggregation.conf")
    with open(schemas_path, "w") as f:
        f.write(conf.STORAGE_SCHEMAS)
    with open(aggregation_path, "w") as f:
        f.write(conf.STORAGE_AGGREGATION)
    series = gen.make_series(schemas_path, aggregation_path, pickle=args.pickle)
    t0 = int(time.time())
    points = gen.generate(series, t0, args.seed)
    want = gen.expected_counts(points)
    run.say("cluster mode: t0=%d seed=%d work=%s: %d series, %d lines"
            % (t0, args.seed, run.work, len(series), len(points)))

    carbon, pickle, http, front_pickle, front_msgpack = procs.free_ports(5)
    sumi, sumi_base = servers.start_sumi(
        run.procs, os.path.abspath(args.sumi_bin), run.work, (carbon, pickle, http),
        schemas_path, aggregation_path,
    )
    run.say("sumi: up at %s" % sumi_base)
    feeds = [("plaintext", servers.feed_carbon(carbon, [p.line for p in points if not p.pickled]))]
    if args.pickle:
        feeds.append(("pickle", servers.feed_pickle(pickle, [p.pickled for p in points if p.pickled])))
    for what, (sent, error) in feeds:
        run.say("sumi: sent %d bytes over carbon %s" % (sent, what))
        if error:
            run.failures.append(error)

    fronts = []
    for fmt, port in (("pickle", front_pickle), ("msgpack", front_msgpack)):
        front = FrontEnd(os.path.join(run.work, "front-" + fmt), args.venv, http, fmt)
        fronts.append((fmt, front.start(run.procs, port, run.logs)))
        run.say("graphite-web cluster front end (%s): up at %s" % (fmt, fronts[-1][1]))

    stored_want = want[gen.STORE] + want[gen.FUTURE]
    counters = servers.wait_stored(sumi, sumi_base, stored_want, timeout=min(60, run.left()))
    if counters.get("stored") != stored_want:
        run.failures.append("sumi stored %s points, expected %d" % (counters.get("stored"), stored_want))

    qs = cluster_queries(t0)
    run.say("asking %d queries of each front end and of sumi" % len(qs))
    direct = [run.get(q.url(sumi_base)) for q in qs]
    results = []
    for fmt, base in fronts:
        # graphite-web's answer is the one compare parses strictly (its "expected" side)
        answers = [run.get(q.url(base)) for q in qs]
        results.append(compare_all("cluster " + fmt, qs, answers, direct))
        run.say("compared %d queries through the %s front end: %d differ"
                % (len(qs), fmt, len(results[-1][2])))
    return run.report(qs, results)


def compare_all(label, qs, front, direct):
    """(label, stats, mismatches, invalid) as run.py's report() takes them."""
    stats = compare.Stats()
    mismatches, invalid = [], []
    for i, (q, exp, got) in enumerate(zip(qs, front, direct)):
        try:
            compare.compare(q, exp, got, stats)
        except compare.Mismatch as e:
            mismatches.append((i, q, str(e)))
        except compare.Invalid as e:
            invalid.append((i, q, str(e)))
    return label, stats, mismatches, invalid
