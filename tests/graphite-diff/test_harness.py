"""Tests of the harness itself: the comparison must catch every kind of difference, and
the generated data must keep the promises the comparison relies on.

    target/graphite-venv/bin/python -m unittest discover -s tests/graphite-diff
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gdiff import compare, conf, gen, queries  # noqa: E402
from gdiff.procs import Response  # noqa: E402
from gdiff.servers import prom_sum  # noqa: E402


def ok(body, content_type="application/json"):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return Response(200, content_type, body)


def series(name, points):
    return {"target": name, "tags": {"name": name}, "datapoints": points}


def render_query(**kw):
    return queries.Query("/render", [], "render-json", **kw)


class CompareRender(unittest.TestCase):
    def check(self, exp, got, query=None):
        compare.compare(query or render_query(), ok(exp), ok(got), compare.Stats())

    def test_identical_answers_pass_and_values_are_counted(self):
        doc = [series("a.b", [[1.5, 10], [None, 20]]), series("a.c", [[-2.0, 10]])]
        stats = compare.Stats()
        compare.compare(render_query(), ok(doc), ok(doc), stats)
        self.assertEqual(stats.values, 3)

    def test_negative_zero_differs_from_zero(self):
        with self.assertRaisesRegex(compare.Mismatch, r"-0\.0"):
            self.check([series("a", [[-0.0, 10]])], [series("a", [[0.0, 10]])])

    def test_last_bit_differs(self):
        with self.assertRaises(compare.Mismatch):
            self.check([series("a", [[0.1 + 0.2, 10]])], [series("a", [[0.3, 10]])])

    def test_null_differs_from_a_value(self):
        with self.assertRaisesRegex(compare.Mismatch, "null"):
            self.check([series("a", [[None, 10]])], [series("a", [[0.0, 10]])])

    def test_integer_spelling_of_a_float_is_the_same_value(self):
        self.check([series("a", [[3.0, 10]])], [series("a", [[3, 10]])])

    def test_timestamps_must_match_and_be_integers(self):
        with self.assertRaisesRegex(compare.Mismatch, "@ 20"):
            self.check([series("a", [[1.0, 10]])], [series("a", [[1.0, 20]])])
        with self.assertRaisesRegex(compare.Mismatch, "not an integer"):
            self.check([series("a", [[1.0, 10]])], [series("a", [[1.0, 10.0]])])

    def test_missing_or_extra_points(self):
        with self.assertRaisesRegex(compare.Mismatch, "graphite-web has 1 more"):
            self.check([series("a", [[1.0, 10], [2.0, 20]])], [series("a", [[1.0, 10]])])

    def test_series_order_and_names(self):
        a, b = series("a", [[1.0, 10]]), series("b", [[1.0, 10]])
        with self.assertRaisesRegex(compare.Mismatch, "series differ"):
            self.check([a, b], [b, a])
        with self.assertRaisesRegex(compare.Mismatch, "missing in sumi"):
            self.check([a, b], [a])

    def test_tags_are_compared(self):
        a = series("a", [[1.0, 10]])
        b = dict(a, tags={})
        with self.assertRaisesRegex(compare.Mismatch, "tags"):
            self.check([a], [b])

    def test_infinity_spelled_as_graphite_web_does(self):
        exp = b'[{"target": "a", "tags": {"name": "a"}, "datapoints": [[1e9999, 10]]}]'
        compare.compare(render_query(), ok(exp), ok(exp), compare.Stats())
        bare = exp.replace(b"1e9999", b"Infinity")
        with self.assertRaisesRegex(compare.Mismatch, "does not parse"):
            compare.compare(render_query(), ok(exp), ok(bare), compare.Stats())

    def test_jsonp_wrapping(self):
        q = render_query(jsonp="cb")
        body = b'cb([{"target": "a", "tags": {"name": "a"}, "datapoints": []}])'
        compare.compare(q, ok(body, "text/javascript"), ok(body, "text/javascript"), compare.Stats())
        with self.assertRaises(compare.Mismatch):
            compare.compare(q, ok(body, "text/javascript"), ok(body[3:-1], "text/javascript"),
                            compare.Stats())

    def test_status_and_content_type(self):
        doc = ok([])
        with self.assertRaisesRegex(compare.Mismatch, "sumi answered 500"):
            compare.compare(render_query(), doc, Response(500, "text/plain", b"boom"), compare.Stats())
        with self.assertRaisesRegex(compare.Mismatch, "content type"):
            compare.compare(render_query(), doc, ok([], "text/plain"), compare.Stats())

    def test_expected_errors(self):
        q = render_query(error=True)
        bad = Response(400, "text/plain", b"no")
        compare.compare(q, bad, Response(422, "text/plain", b"no"), compare.Stats())
        with self.assertRaisesRegex(compare.Mismatch, "refuses"):
            compare.compare(q, bad, ok([]), compare.Stats())
        # sumi must refuse too, not fail: a 5xx is a difference, even against a 5xx
        for status in (500, 502, 503):
            with self.assertRaisesRegex(compare.Mismatch, "sumi fails with %d" % status):
                compare.compare(q, bad, Response(status, "text/plain", b"boom"), compare.Stats())
            with self.assertRaisesRegex(compare.Mismatch, "sumi fails"):
                compare.compare(q, Response(500, "text/plain", b"x"), Response(status, "text/plain", b"boom"), compare.Stats())
        with self.assertRaises(compare.Invalid):
            compare.compare(q, ok([]), ok([]), compare.Stats())


class CompareText(unittest.TestCase):
    def test_csv_values_compared_as_numbers_with_a_note_on_spelling(self):
        q = queries.Query("/render", [], "render-csv")
        exp = b"a,2025-01-01 00:00:10,1.0\r\na,2025-01-01 00:00:20,\r\n"
        got = b"a,2025-01-01 00:00:10,1\r\na,2025-01-01 00:00:20,\r\n"
        stats = compare.Stats()
        compare.compare(q, ok(exp, "text/csv"), ok(got, "text/csv"), stats)
        self.assertEqual(stats.values, 2)
        self.assertEqual(len(stats.notes), 1)
        with self.assertRaises(compare.Mismatch):
            compare.compare(q, ok(exp, "text/csv"), ok(got.replace(b",\r", b",0\r"), "text/csv"),
                            compare.Stats())

    def test_raw_header_and_values(self):
        q = queries.Query("/render", [], "render-raw")
        exp = b"a.b,100,130,10|1.5,None,-0.0\n"
        compare.compare(q, ok(exp, "text/plain"), ok(exp, "text/plain"), compare.Stats())
        for got in (b"a.b,100,140,10|1.5,None,-0.0\n", b"a.b,100,130,10|1.5,None,0.0\n",
                    b"a.b,100,130,10|1.5,None\n"):
            with self.assertRaises(compare.Mismatch, msg=got):
                compare.compare(q, ok(exp, "text/plain"), ok(got, "text/plain"), compare.Stats())


class CompareFind(unittest.TestCase):
    def test_treejson_is_strict_about_types(self):
        q = queries.Query("/metrics/find", [], "treejson")
        node = {"text": "a", "id": "a", "leaf": 1, "expandable": 0, "allowChildren": 0}
        compare.compare(q, ok([node]), ok([node]), compare.Stats())
        with self.assertRaisesRegex(compare.Mismatch, "leaf"):
            compare.compare(q, ok([node]), ok([dict(node, leaf=True)]), compare.Stats())
        with self.assertRaisesRegex(compare.Mismatch, "elements"):
            compare.compare(q, ok([node]), ok([node, node]), compare.Stats())

    def test_completer_allows_any_order_among_equal_names_only(self):
        q = queries.Query("/metrics/find", [], "completer")
        x = {"path": "a.x.cpu", "name": "cpu", "is_leaf": "1"}
        y = {"path": "a.y.cpu", "name": "cpu", "is_leaf": "1"}
        z = {"path": "a.z.disk", "name": "disk", "is_leaf": "1"}
        compare.compare(q, ok({"metrics": [x, y, z]}), ok({"metrics": [y, x, z]}), compare.Stats())
        with self.assertRaisesRegex(compare.Mismatch, "names in order"):
            compare.compare(q, ok({"metrics": [x, y, z]}), ok({"metrics": [z, x, y]}), compare.Stats())

    def test_find_json_ignores_intervals_only(self):
        q = queries.Query("/metrics/find", [], "find-json")
        a = [{"path": "a", "is_leaf": True, "intervals": [{"start": 1.5, "end": 2.5}]}]
        b = [{"path": "a", "is_leaf": True, "intervals": []}]
        compare.compare(q, ok(a), ok(b), compare.Stats())
        with self.assertRaises(compare.Mismatch):
            compare.compare(q, ok(a), ok([{"path": "a", "is_leaf": False}]), compare.Stats())


class Generated(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        s = os.path.join(cls.dir.name, "schemas.conf")
        a = os.path.join(cls.dir.name, "aggregation.conf")
        with open(s, "w") as f:
            f.write(conf.STORAGE_SCHEMAS)
        with open(a, "w") as f:
            f.write(conf.STORAGE_AGGREGATION)
        cls.series = gen.make_series(s, a)
        cls.t0 = 1_800_000_007
        cls.points = gen.generate(cls.series, cls.t0, 7)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def config(self, name):
        return next(s for s in self.series if s.name == name)

    def test_carbon_rules(self):
        fine = self.config("diff.fine.web01.cpu.user")
        self.assertEqual(fine.archives, [(10, 360), (60, 1440), (600, 1008)])
        self.assertEqual((fine.xff, fine.method), (0.5, "average"))
        wide = self.config("diff.wide.svc.b.count")
        self.assertEqual(wide.archives, [(30, 240), (300, 288), (3600, 720)])
        self.assertEqual((wide.xff, wide.method), (0, "sum"))
        self.assertEqual(self.config("diff.fine.web01.disk.lastonly").xff, None)
        self.assertEqual(self.config("diff.fine.web01.disk.sparse0").method, None)
        other = self.config("misc.unmatched.gauge")
        self.assertEqual((other.archives, other.xff, other.method), ([(60, 10080)], None, None))

    def test_points_keep_away_from_every_retention_boundary(self):
        by_name = {s.name: s for s in self.series}
        for p in self.points:
            if p.fate not in (gen.STORE, gen.FUTURE, gen.TOO_OLD):
                continue
            s, age = by_name[p.name], self.t0 - p.ts
            for k in range(len(s.archives)):
                self.assertGreaterEqual(abs(age - s.retention(k)), gen.SAFETY, (p.name, age))

    def test_fates_follow_the_age(self):
        by_name = {s.name: s for s in self.series}
        fates = gen.expected_counts(self.points)
        self.assertTrue(all(fates[f] > 0 for f in fates), fates)
        for p in self.points:
            if p.fate == gen.BAD:
                continue
            s, age = by_name[p.name], self.t0 - p.ts
            longest = s.retention(len(s.archives) - 1)
            expected = {
                gen.STORE: 0 <= age < longest,
                gen.FUTURE: -3600 < age < 0,
                gen.TOO_OLD: age > longest,
                gen.TOO_NEW: age < -3600,
            }[p.fate]
            self.assertTrue(expected, (p.fate, p.name, age))

    def test_lines_parse_as_carbon_parses_them(self):
        pickled = 0
        for p in self.points:
            if p.fate == gen.BAD:
                continue
            if p.pickled is not None:
                # carbon's pickle receiver: (metric, (ts, value)), float() of each
                pickled += 1
                self.assertEqual(p.line, b"")
                name, (ts, value) = p.pickled
            else:
                name, value, ts = p.line.decode().strip().split()
            self.assertEqual((name, int(float(ts))), (p.name, p.ts))
            self.assertEqual(repr(float(value)), repr(p.value))
        self.assertGreater(pickled, 100)

    def test_generation_is_deterministic_for_a_seed(self):
        again = gen.generate(self.series, self.t0, 7)
        self.assertEqual([p.line for p in again], [p.line for p in self.points])

    def test_send_order_has_late_points_and_rewrites(self):
        late = sum(1 for a, b in zip(self.points, self.points[1:])
                   if a.name == b.name and b.ts < a.ts)
        self.assertGreater(late, 100)
        slots = {}
        rewrites = 0
        for p in self.points:
            if p.fate == gen.STORE and p.name == "diff.fine.web01.cpu.user":
                key = p.ts // 10
                rewrites += key in slots
                slots[key] = p
        self.assertGreater(rewrites, 0)


class Prometheus(unittest.TestCase):
    def test_sums_samples_and_filters_labels(self):
        text = (
            "# TYPE sumi_points_stored_total counter\n"
            "sumi_points_stored_total 12\n"
            'sumi_points_rejected_total{reason="too_old"} 3\n'
            'sumi_points_rejected_total{reason="too_new",shard="1"} 2\n'
            'sumi_points_rejected_total{reason="too_new",shard="2"} 1\n'
        )
        self.assertEqual(prom_sum(text, "sumi_points_stored_total"), 12)
        self.assertEqual(prom_sum(text, "sumi_points_rejected_total", ("reason", "too_old")), 3)
        self.assertEqual(prom_sum(text, "sumi_points_rejected_total", ("reason", "too_new")), 3)
        self.assertIsNone(prom_sum(text, "sumi_points_dropped_total"))


if __name__ == "__main__":
    unittest.main()
