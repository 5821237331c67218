"""Kafka cluster mode (``run.py --kafka-cluster``): the plain cases through a sumi cluster.

The points of the main mode (every schema and archive, too old and future points,
pickled series) are sent to a single sumi node and to the ingest node of a sumi cluster
on Apache Kafka started by the repository's own ``scripts/cluster-up.sh`` (one broker,
one ingest node, three storage nodes, every partition on two of them). The plain cases
(``queries.render_queries``: every glob over every archive's range, several targets;
``queries.find_queries``: the metric tree in every format) are then asked of the single
node and, with the same ``now``, of the cluster's ingest node (which stores nothing)
and of one storage node (which stores two thirds of the series), and the answers are
compared as the main mode compares graphite-web's with sumi's.

The single node is what the main mode holds to graphite-web and whisper, so equal answers
here carry that comparison over to the cluster: series spread over nodes and read back
through the fan-out (docs/cluster.md) answer like one node holding everything. No
graphite-web is started.
"""

import os
import subprocess
import time

from . import conf, gen, procs as P, queries, servers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def _env(path):
    out = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                out[k] = v
    return out


def _cluster_stored(bases):
    total = 0.0
    for base in bases:
        total += servers.sumi_counters(base).get("stored") or 0.0
    return total


def main(run):
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
    stored_want = want[gen.STORE] + want[gen.FUTURE]
    run.say("t0=%d seed=%d: %d series, %d lines" % (t0, args.seed, len(series), len(points)))

    sumi_bin = os.path.abspath(args.sumi_bin)
    single_ports = P.free_ports(3)
    single, single_base = servers.start_sumi(
        run.procs, sumi_bin, run.work, single_ports, schemas_path, aggregation_path)
    run.say("single node: up at %s" % single_base)

    cdir = os.path.join(run.work, "cluster")
    env = dict(os.environ)
    env["SUMI_BIN"] = sumi_bin
    env["SUMI_SERVE_ARGS"] = "--no-selfmon --storage-schemas %s --storage-aggregation %s" % (
        schemas_path, aggregation_path)
    up = subprocess.run([os.path.join(REPO, "scripts", "cluster-up.sh"), cdir], env=env,
                        capture_output=True, text=True, timeout=max(30, run.left()))
    try:
        if up.returncode != 0:
            raise P.HarnessError("cluster-up.sh failed:\n%s%s" % (up.stdout, up.stderr))
        cenv = _env(os.path.join(cdir, "cluster.env"))
        ingest = "http://" + cenv["INGEST_HTTP"]
        nodes = ["http://" + cenv["NODE%d_HTTP" % n] for n in (1, 2, 3)]
        run.say("cluster: up, ingest node at %s" % ingest)

        receivers = [
            ("single node", single_ports[0], single_ports[1]),
            ("cluster", int(cenv["INGEST_CARBON"].rsplit(":", 1)[1]),
             int(cenv["INGEST_PICKLE"].rsplit(":", 1)[1])),
        ]
        for label, carbon, pickle_port in receivers:
            feeds = [("plaintext", servers.feed_carbon(carbon, [p.line for p in points if not p.pickled]))]
            if args.pickle:
                feeds.append(("pickle", servers.feed_pickle(pickle_port, [p.pickled for p in points if p.pickled])))
            for what, (sent, error) in feeds:
                run.say("%s: sent %d bytes over carbon %s" % (label, sent, what))
                if error:
                    run.failures.append("%s: %s" % (label, error))

        counters = servers.wait_stored(single, single_base, stored_want, timeout=min(60, run.left()))
        if counters.get("stored") != stored_want:
            run.failures.append("single node: sumi_points_stored_total is %s, expected %d"
                                % (counters.get("stored"), stored_want))
        # every point is stored by the two replicas of its partition
        deadline = time.monotonic() + min(90, run.left())
        while _cluster_stored(nodes) < 2 * stored_want and time.monotonic() < deadline:
            time.sleep(0.2)
        got = _cluster_stored(nodes)
        if got != 2 * stored_want:
            run.failures.append("cluster: the storage nodes stored %s points, expected %d (twice %d)"
                                % (got, 2 * stored_want, stored_want))
        run.say("stored: single node %s, cluster %s (two replicas)" % (counters.get("stored"), got))

        plain = queries.render_queries(t0) + queries.find_queries(t0)
        # `local=1` asks a node for its own data only (graphite-web's cluster protocol;
        # a cluster node honours it too): not a question for the whole cluster
        qs = [q for q in plain if ("local", "1") not in q.params]
        run.say("asking %d plain queries of the single node and the cluster (%d with local=1 left out)"
                % (len(qs), len(plain) - len(qs)))
        expected = [run.get(q.url(single_base)) for q in qs]
        results = [
            run.ask_all("cluster ingest node", qs, expected, ingest),
            run.ask_all("cluster storage node 2", qs, expected, nodes[1]),
        ]
        return run.report(qs, results)
    finally:
        subprocess.run([os.path.join(REPO, "scripts", "cluster-down.sh"), cdir],
                       capture_output=True, timeout=120)

