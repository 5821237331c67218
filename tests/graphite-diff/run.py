#!/usr/bin/env python3
"""Differential test: sumi against graphite-web 1.1.10 + whisper 1.1.10 on the same points.

    tests/graphite-diff/setup.sh                      # once: the reference venv
    tests/graphite-diff/run.py --sumi-bin target/debug/sumi [--keep] [--no-pickle]
    tests/graphite-diff/run.py --self-check           # graphite-web against itself
    tests/graphite-diff/run.py --sumi-bin target/debug/sumi --kafka-cluster
                                                      # plain cases: a Kafka cluster vs one node

Writes generated points into whisper files (as carbon would) and into a running sumi
(over carbon plaintext), asks both servers the same /render and /metrics/* questions
with the same ``now``, and compares the answers value by value; then restarts sumi on
its data directory and compares again. Exits 0 only when every
answer is identical; prints a compact diff of each difference otherwise. See README.md.

Python standard library only, plus whisper from the venv (the script re-executes itself
with the venv's interpreter when started with another one).
"""

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_VENV = os.environ.get("SUMI_GRAPHITE_VENV") or os.path.join(REPO, "target", "graphite-venv")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    side = ap.add_mutually_exclusive_group(required=True)
    side.add_argument("--sumi-bin", help="the sumi binary to test")
    side.add_argument(
        "--self-check",
        action="store_true",
        help="compare graphite-web with itself (validates the harness; no sumi needed)",
    )
    ap.add_argument("--venv", default=DEFAULT_VENV, help="the venv setup.sh made (default %(default)s)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (data, logs)")
    ap.add_argument("--work-dir", help="use this (empty or new) directory instead of a temporary one")
    ap.add_argument("--seed", type=int, default=20251121, help="data generator seed")
    ap.add_argument(
        "--no-pickle",
        dest="pickle",
        action="store_false",
        help="send every series as plaintext (by default three go over carbon's pickle protocol)",
    )
    ap.add_argument(
        "--cluster",
        action="store_true",
        help="cluster mode: graphite-web fronting sumi over its cluster protocol (gdiff/cluster.py)",
    )
    ap.add_argument(
        "--kafka-cluster",
        action="store_true",
        help="the plain cases through a sumi cluster on Kafka vs a single sumi node (gdiff/kafka.py)",
    )
    ap.add_argument("--dump", help="write every query and both answers under this directory")
    ap.add_argument("--show", type=int, default=30, help="print at most this many mismatches in full")
    ap.add_argument("--deadline", type=float, default=900, help="give up after this many seconds")
    return ap.parse_args()


def ensure_venv(venv):
    """Re-executes this script with the venv's python unless already running in it."""
    python = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    if os.environ.get("SUMI_GRAPHITE_DIFF_REEXEC"):
        sys.exit("graphite-diff: still not inside %s after re-executing" % venv)
    if not os.access(python, os.X_OK):
        sys.exit("graphite-diff: no venv at %s: run tests/graphite-diff/setup.sh first" % venv)
    os.environ["SUMI_GRAPHITE_DIFF_REEXEC"] = "1"
    os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])


class Run:
    def __init__(self, args):
        from gdiff import procs

        self.args = args
        self.started = time.monotonic()
        self.failures = []  # problems outside the per-query comparison
        if args.work_dir:
            os.makedirs(args.work_dir, exist_ok=True)
            self.work = os.path.abspath(args.work_dir)
        else:
            self.work = tempfile.mkdtemp(prefix="sumi-graphite-diff-")
        self.logs = os.path.join(self.work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.procs = procs.Procs(self.logs)

    def say(self, msg):
        print("[%6.1fs] %s" % (time.monotonic() - self.started, msg), flush=True)

    def left(self):
        return self.args.deadline - (time.monotonic() - self.started)

    def main(self):
        from gdiff import conf, gen, procs, queries, servers, wsp

        args = self.args
        schemas_path = os.path.join(self.work, "storage-schemas.conf")
        aggregation_path = os.path.join(self.work, "storage-aggregation.conf")
        with open(schemas_path, "w") as f:
            f.write(conf.STORAGE_SCHEMAS)
        with open(aggregation_path, "w") as f:
            f.write(conf.STORAGE_AGGREGATION)

        series = gen.make_series(schemas_path, aggregation_path, pickle=args.pickle)
        t0 = int(time.time())
        points = gen.generate(series, t0, args.seed)
        want = gen.expected_counts(points)
        self.say(
            "t0=%d seed=%d work=%s: %d series, %d lines (%s)"
            % (t0, args.seed, self.work, len(series), len(points),
               ", ".join("%s %d" % kv for kv in sorted(want.items())))
        )

        graphite = servers.Graphite(self.work, args.venv)
        written = wsp.write(graphite.whisper_dir, series, points, now=t0)
        self.say("whisper: %d files, %s" % (len(set(p.name for p in points if p.fate != gen.BAD)), written))

        def start_sumi(ports):
            return servers.start_sumi(
                self.procs, os.path.abspath(args.sumi_bin), self.work, ports,
                schemas_path, aggregation_path,
            )

        gw_port, carbon, pickle, http = procs.free_ports(4)
        if not args.self_check:
            # sumi first: it fails fast, and digests the lines while graphite-web starts
            sumi, sumi_base = start_sumi((carbon, pickle, http))
            self.say("sumi: up at %s" % sumi_base)
            feeds = [("plaintext", servers.feed_carbon(carbon, [p.line for p in points if not p.pickled]))]
            if args.pickle:
                feeds.append(("pickle", servers.feed_pickle(pickle, [p.pickled for p in points if p.pickled])))
            for what, (sent, error) in feeds:
                self.say("sumi: sent %d bytes over carbon %s" % (sent, what))
                if error:
                    self.failures.append(error)

        gw = graphite.start(self.procs, gw_port, self.logs)
        self.say("graphite-web: up at %s" % gw)

        if args.self_check:
            other = gw
        else:
            stored_want = want[gen.STORE] + want[gen.FUTURE]
            counters = servers.wait_stored(sumi, sumi_base, stored_want, timeout=min(60, self.left()))
            self.say("sumi: counters %s" % counters)
            self.check_counters(counters, stored_want, want[gen.TOO_OLD], want[gen.TOO_NEW])
            other = sumi_base

        qs = queries.all_queries(t0)
        self.say("asking %d queries of graphite-web and %s" % (len(qs), "itself" if args.self_check else "sumi"))
        expected = [self.get(q.url(gw)) for q in qs]
        results = [self.ask_all("", qs, expected, other)]
        if not args.self_check:
            # the same answers after a restart: the store reopened from its WAL and parts
            self.procs.stop(sumi)
            self.say("sumi: stopped; restarting on the same data directory")
            ports = procs.free_ports(3)
            sumi, sumi_base = start_sumi(ports)
            self.say("sumi: up again at %s" % sumi_base)
            results.append(self.ask_all("after restart", qs, expected, sumi_base))
            results += self.tag_phase(graphite, gw, (sumi, sumi_base, ports[0]), start_sumi,
                                      schemas_path, aggregation_path, t0)
        return self.report(qs, results)

    def tag_phase(self, graphite, gw, sumi_side, start_sumi, schemas_path, aggregation_path, t0):
        """Tagged series to both sides, then the tag API and seriesByTag compared, a
        delSeries, and the same after a restart of sumi (gdiff/tags.py)."""
        from gdiff import compare, procs, servers, tags

        sumi, sumi_base, carbon = sumi_side
        pts = tags.points(t0)
        tags.write_whisper(graphite.whisper_dir, schemas_path, aggregation_path, pts, t0)
        before = servers.sumi_counters(sumi_base).get("stored") or 0
        sent, error = servers.feed_carbon(carbon, tags.lines(pts))
        if error:
            self.failures.append(error)
        counters = servers.wait_stored(sumi, sumi_base, before + len(pts), timeout=min(60, self.left()))
        if counters.get("stored") != before + len(pts):
            self.failures.append("tagged points: sumi_points_stored_total is %s, expected %d"
                                 % (counters.get("stored"), before + len(pts)))
        self.say("tags: %d tagged points in whisper and sent to sumi (%d bytes)" % (len(pts), sent))

        def post_both(path, form):
            exp = tags.post(gw, path, form)
            got = tags.post(sumi_base, path, form)
            try:
                e = compare.strict_json(exp.body)
                if exp.status != 200:
                    raise compare.Invalid("graphite-web answered %d: %r" % (exp.status, exp.body[:200]))
                if got.status != 200:
                    raise compare.Mismatch("sumi answered %d: %r" % (got.status, got.body[:200]))
                compare.same_json(e, compare.strict_json(got.body))
            except (compare.Mismatch, compare.Invalid) as err:
                self.failures.append("POST %s: %s" % (path, err))

        post_both("/tags/tagMultiSeries", tags.register())
        qs = tags.queries(t0)
        expected = [self.get(q.url(gw)) for q in qs]
        # the comparison means little if graphite-web found nothing: its renders must
        # all have series, but those meant to find none (tags.NO_SERIES), which must not
        for q, exp in zip(qs, expected):
            if q.kind != "render-json":
                continue
            empty = exp.body.strip() in (b"", b"[]")
            if empty and tags.NO_SERIES not in q.notes:
                self.failures.append("graphite-web found no series for %s" % q.show())
            if not empty and tags.NO_SERIES in q.notes:
                self.failures.append("graphite-web found series for %s" % q.show())
        results = [self.ask_all("tags", qs, expected, sumi_base)]
        post_both("/tags/delSeries", tags.DELETE)
        # graphite-web's cache is Django's DummyCache here: find_series is not cached
        after = tags.after_delete(t0)
        expected = [self.get(q.url(gw)) for q in after]
        results.append(self.ask_all("tags after delSeries", after, expected, sumi_base))
        self.procs.stop(sumi)
        sumi, sumi_base = start_sumi(procs.free_ports(3))
        results.append(self.ask_all("tags after delSeries and restart", after, expected, sumi_base))
        return results

    def get(self, url):
        from gdiff import procs

        if self.left() <= 0:
            raise procs.HarnessError("deadline of %ss reached" % self.args.deadline)
        return procs.http_get(url, timeout=min(30.0, max(1.0, self.left())))

    def check_counters(self, counters, stored, too_old, too_new):
        if counters.get("stored") != stored:
            self.failures.append(
                "sumi_points_stored_total is %s, expected %d (the points both sides keep)"
                % (counters.get("stored"), stored)
            )
        if counters.get("too_old") != too_old:
            self.failures.append(
                'sumi_points_rejected_total{reason="too_old"} is %s, expected %d'
                % (counters.get("too_old"), too_old)
            )
        if counters.get("too_new") is None:
            self.say('note: no sumi_points_rejected_total{reason="too_new"} sample (expected %d)' % too_new)
        elif counters["too_new"] != too_new:
            self.failures.append(
                'sumi_points_rejected_total{reason="too_new"} is %s, expected %d'
                % (counters["too_new"], too_new)
            )

    def ask_all(self, label, qs, expected, other):
        """Asks `other` every query and compares with graphite-web's answers."""
        from gdiff import compare

        stats = compare.Stats()
        mismatches, invalid = [], []
        for i, (q, exp) in enumerate(zip(qs, expected)):
            got = self.get(q.url(other))
            if self.args.dump:
                self.dump(label, i, q, exp, got)
            try:
                compare.compare(q, exp, got, stats)
            except compare.Mismatch as e:
                mismatches.append((i, q, str(e)))
            except compare.Invalid as e:
                invalid.append((i, q, str(e)))
        self.say("compared %d queries%s: %d differ" % (len(qs), " " + label if label else "", len(mismatches)))
        return label, stats, mismatches, invalid

    def dump(self, label, i, q, exp, got):
        d = os.path.join(self.args.dump, (label or "first").replace(" ", "-"), "%03d" % i)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "query.txt"), "w") as f:
            f.write(q.show() + "\n")
        for name, r in (("graphite-web", exp), ("other", got)):
            with open(os.path.join(d, name + ".body"), "wb") as f:
                f.write(r.body)
            with open(os.path.join(d, name + ".status"), "w") as f:
                f.write("%s %s\n" % (r.status, r.content_type))

    def report(self, qs, results):
        shown = 0
        for label, stats, mismatches, invalid in results:
            tag = " (%s)" % label if label else ""
            for i, q, msg in invalid:
                print("\nHARNESS PROBLEM%s [query %d] %s\n  %s" % (tag, i, q.show(), msg.replace("\n", "\n  ")))
            for n, (i, q, msg) in enumerate(mismatches):
                if shown >= self.args.show:
                    print("\n... %d more mismatches%s (--show N prints more)" % (len(mismatches) - n, tag))
                    break
                shown += 1
                print("\nMISMATCH%s %d/%d [query %d] GET %s\n  %s"
                      % (tag, n + 1, len(mismatches), i, q.show(), msg.replace("\n", "\n  ")))
        for f in self.failures:
            print("\nFAILURE %s" % f)
        notes = [n for _, stats, _, _ in results for n in stats.notes]
        if notes:
            print("\nnote: %d answers spell numbers or lines differently with equal values, e.g.:" % len(notes))
            for note in notes[:3]:
                print("  " + note)
        values = sum(stats.values for _, stats, _, _ in results)
        bad = sum(len(m) for _, _, m, _ in results)
        problems = sum(len(inv) for _, _, _, inv in results)
        ok = not bad and not problems and not self.failures
        print(
            "\nsummary: %d queries x %d passes, %d values compared, %d mismatched, "
            "%d harness problems, %d other failures: %s"
            % (len(qs), len(results), values, bad, problems, len(self.failures),
               "all identical" if ok else "DIFFERENT")
        )
        return 0 if ok else 1

    def close(self):
        self.procs.stop_all()
        if self.args.keep:
            print("kept %s (logs in %s)" % (self.work, self.logs))
        elif not self.args.work_dir:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    args = parse_args()
    ensure_venv(os.path.abspath(args.venv))
    sys.path.insert(0, HERE)
    from gdiff import cluster, conf, kafka, procs

    # a SIGTERM/SIGINT still runs the cleanup below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run = Run(args)
    try:
        if args.cluster:
            code = cluster.main(run)
        elif args.kafka_cluster:
            code = kafka.main(run)
        else:
            code = run.main()
    except (procs.HarnessError, conf.ConfigError) as e:
        print("\ngraphite-diff: error: %s" % e, flush=True)
        code = 2
    finally:
        run.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
