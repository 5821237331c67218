"""The series and points of the test, generated relative to the real current time ``t0``.

Every series gets points in the age range of each of its archives (the ones older than
archive 0's retention go straight to a coarser archive, as in whisper), with gaps, several
raw timestamps in one slot, duplicate writes to one slot (the last write wins), late and
out-of-order arrivals, a few points older than the longest retention (both sides drop
them) and, for a few series, points in the near future.

Each point has a *fate*:

- ``store``: both sides keep it (whisper through ``whisper.update``).
- ``future``: up to 40 minutes ahead. sumi accepts up to 1 h ahead; whisper's ``update``
  refuses any future point but carbon writes through ``update_many``, which accepts
  them, so the whisper side uses ``update_many`` for these (what carbon does).
- ``too_old``: older than the longest retention; carbon drops it, sumi counts it as
  ``too_old``.
- ``too_new``: more than 1 h ahead; sumi refuses it (``too_new``). carbon would keep it,
  so this is a deliberate difference: the whisper side leaves it out and a query at a
  later ``now`` checks that sumi refused it.
- ``bad``: a malformed line; carbon logs and skips it, and creates no file.

Every point stays at least ``SAFETY`` plus two coarse steps away from each retention
boundary, so the seconds the test takes, and the gap between carbon's clock and sumi's,
never move a point across one.
"""

import random
import struct
from dataclasses import dataclass

from . import conf

MIN = 60
HOUR = 3600
DAY = 86400

# Distance kept from every retention boundary (on top of two coarse steps).
SAFETY = 15 * MIN

# Near-future points: accepted by both. Far-future: only carbon would keep them.
FUTURE_AGES = (-40 * MIN, -15 * MIN)
TOO_NEW_AGES = (-100 * MIN, -75 * MIN)

STORE, FUTURE, TOO_OLD, TOO_NEW, BAD = "store", "future", "too_old", "too_new", "bad"


@dataclass(frozen=True)
class Spec:
    """What to generate for one series."""

    name: str
    kind: str  # gauge counter ints big neg mixed edge cycle
    density: float = 0.85
    future: bool = False  # gets near- and far-future points
    stale: bool = False  # gets only points older than the longest retention
    formats: bool = False  # its lines use carbon's accepted spelling variants
    pickle: bool = False  # sent over carbon's pickle protocol instead of plaintext
    gaps: tuple = ()  # (age_lo, age_hi) windows left empty


SPECS = [
    # 10s:1h,1m:1d,10m:7d
    Spec("diff.fine.web01.cpu.user", "gauge"),
    Spec("diff.fine.web01.cpu.system", "gauge", density=0.6),
    Spec("diff.fine.web02.cpu.user", "gauge", gaps=((20 * MIN, 26 * MIN), (2 * HOUR, 3 * HOUR))),
    Spec("diff.fine.web03.cpu.user", "gauge", density=0.4),
    Spec("diff.fine.web01.requests.count", "counter"),
    Spec("diff.fine.web01.requests.sum", "ints", density=0.5),
    Spec("diff.fine.web01.latency.min", "gauge"),
    Spec("diff.fine.web01.latency.max", "gauge", density=0.9),
    Spec("diff.fine.web01.latency.last", "gauge", density=0.7),
    Spec("diff.fine.web01.queue.avgzero", "ints", density=0.45),
    Spec("diff.fine.web01.temp.absmax", "mixed"),
    Spec("diff.fine.web01.temp.absmin", "mixed", density=0.55),
    Spec("diff.fine.web01.disk.lastonly", "gauge", density=0.5),
    Spec("diff.fine.web01.disk.sparse0", "gauge", density=0.2),
    Spec("diff.fine.web01.disk.strict", "gauge", density=0.95),
    Spec("diff.fine.ratio.xff03", "cycle"),
    Spec("diff.fine.ratio.xff01", "cycle"),
    Spec("diff.fine.big.values", "big"),
    Spec("diff.fine.neg.values", "neg"),
    Spec("diff.fine.edge.sum", "edge"),
    Spec("diff.fine.edge.avg", "edge"),
    Spec("diff.fine.formats.gauge", "gauge", formats=True),
    # 1m:6h,5m:2d
    Spec("diff.mid.app.alpha.rate", "gauge", future=True),
    Spec("diff.mid.app.alpha.errors.count", "counter", density=0.7),
    Spec("diff.mid.app.alpha.errors.min", "neg"),
    Spec("diff.mid.app.alpha.errors.max", "ints", density=0.8),
    Spec("diff.mid.app.alpha.errors.last", "gauge"),
    Spec("diff.mid.app.alpha.errors.absmax", "mixed"),
    Spec("diff.mid.app.alpha.errors.avgzero", "ints", density=0.3),
    Spec("diff.mid.app.beta.rate", "gauge"),
    Spec("diff.mid.app.beta.sparse", "gauge", density=0.3),
    Spec("diff.mid.app.gamma.rate", "big", density=0.6),
    Spec("diff.mid.app.under_score-dash.rate", "gauge"),
    Spec("diff.mid.pickled.gauge", "gauge", pickle=True),
    Spec("diff.mid.pickled.count", "counter", density=0.7, pickle=True),
    Spec("diff.mid.pickled.big", "big", pickle=True),
    Spec("diff.mid.leafbranch", "gauge"),  # a leaf ...
    Spec("diff.mid.leafbranch.child", "ints"),  # ... and a branch
    # 60:1440
    Spec("diff.legacy.host1.load", "gauge", future=True),
    Spec("diff.legacy.host2.load", "gauge", density=0.5),
    Spec("diff.legacy.host10.load", "neg"),
    Spec("diff.legacy.host1.mem.sum", "counter"),
    Spec("diff.legacy.stale.load", "gauge", stale=True),
    # 30s:2h, 5min:1d, 1h:30d
    Spec("diff.wide.svc.a.gauge", "gauge"),
    Spec("diff.wide.svc.b.count", "ints", density=0.6),
    Spec("diff.wide.svc.c.max", "mixed", density=0.9),
    # no schema matches: carbon's 60:10080
    Spec("diff.other.gauge", "gauge", density=0.12),
    Spec("misc.unmatched.gauge", "neg", density=0.1),
    Spec("toplevel", "ints", density=0.1),
]

# Lines carbon's plaintext receiver skips (and for which it creates no file).
BAD_LINES = [
    "diff.bad.word notanumber {t}",
    "diff.bad.twofields 1.0",
    "diff.bad.fourfields 1.0 {t} extra",
    "diff.bad.nan nan {t}",
    "diff.bad.hex 0x10 {t}",
    "diff.bad.when 1.0 yesterday",
    "",
    "   ",
]


# Entries of a pickle message carbon skips (one by one, the rest of the message is kept).
BAD_PICKLED = [
    ("diff.bad.pickle.notatuple", "1.0"),
    ("diff.bad.pickle.word", (1795000000, "notanumber")),
    ("diff.bad.pickle.none", (1795000000, None)),
    ("diff.bad.pickle.nan", (1795000000, float("nan"))),
    ("diff.bad.pickle.short", (1795000000,)),
]


@dataclass
class Series:
    spec: Spec
    archives: list  # [(step, points)], finest first
    xff: object  # float, or None for whisper's default (0.5)
    method: object  # str, or None for whisper's default (average)

    @property
    def name(self):
        return self.spec.name

    def margin(self, k):
        """Distance kept on both sides of archive k's retention boundary."""
        coarse = self.archives[min(k + 1, len(self.archives) - 1)][0]
        return SAFETY + 2 * coarse

    def retention(self, k):
        return self.archives[k][0] * self.archives[k][1]


@dataclass
class Point:
    name: str
    ts: int  # the timestamp carbon and whisper use: int(float(text))
    value: float
    line: bytes
    fate: str
    pickled: object = None  # (name, (ts, value)) for the pickle protocol, else None
    arrival: float = 0.0  # sort key of the send order
    seq: int = 0  # generation order, the tie-break


class Values:
    """The value stream of one series, as the text a client would send."""

    def __init__(self, kind, rng):
        self.kind = kind
        self.rng = rng
        self.level = rng.uniform(10, 90)
        self.count = rng.randrange(0, 10**6)

    def next(self, ts):
        r = self.rng
        if self.kind == "gauge":
            self.level += r.gauss(0, 1.5)
            return "%.2f" % self.level
        if self.kind == "neg":
            self.level += 0.05 * (-500 - self.level) + r.gauss(0, 4)  # around -500
            return "%.2f" % self.level
        if self.kind == "counter":
            self.count = 0 if r.random() < 0.002 else self.count + r.randrange(0, 500)
            return str(self.count)
        if self.kind in ("ints", "cycle"):
            return str(r.randrange(0, 10000))
        if self.kind == "mixed":
            if r.random() < 0.15:  # ties on |v|: absmax/absmin keep the first
                return r.choice(["5", "-5", "3.25", "-3.25", "0", "-0.0"])
            return "%.2f" % r.uniform(-100, 100)
        if self.kind == "big":
            if r.random() < 0.1:
                return r.choice(
                    ["9007199254740993", "12345678901234567890", "99999999999999999999999", "1e20",
                     "-3.5e18", "4.5e15"]
                )
            return "%.3f" % r.uniform(1e14, 9e15)
        if self.kind == "edge":
            # one kind of value per minute, so that coarse slots see runs of each
            window = (ts // 60) % 5
            choices = [
                ["-0.0", "-0", "-0.00"],  # Python's sum() turns -0.0 into 0.0
                ["1e308", "1.5e308", "8.9e307"],  # sums overflow to inf
                ["5e-324", "2.5e-310", "1e-7", "-1e-7"],  # subnormals, tiny
                ["0.1", "0.2", "0.3", "0.7"],  # binary rounding
                ["123456789.123456789", "-98765.4321", "4503599627370497.5"],
            ][window]
            return r.choice(choices)
        raise ValueError("unknown kind %r" % self.kind)


def spelling(rng, value_text, ts):
    """A carbon-acceptable spelling of one line: the same float and int(ts) for carbon."""
    v = float(value_text)
    forms = [value_text, repr(v), "%e" % v, "%E" % v]
    if not value_text.startswith("-"):
        forms.append("+" + value_text)
    if value_text.startswith("0."):
        forms.append(value_text[1:])
    if value_text.startswith("-0."):
        forms.append("-" + value_text[2:])
    if "." not in value_text and "e" not in value_text:
        forms.append(value_text + ".")
    forms = [f for f in forms if struct.pack("<d", float(f)) == struct.pack("<d", v)]
    ts_text = rng.choice([str(ts), "%d.0" % ts, "%d.%d" % (ts, rng.randrange(1, 10))])
    sep = rng.choice([" ", "  ", "\t", " \t "])
    eol = rng.choice(["\n", "\r\n"])
    lead = rng.choice(["", "", " "])
    return "%s%%s%s%s%s%s" % (lead, sep, rng.choice(forms), sep, ts_text) + eol


class Generator:
    def __init__(self, series, t0, seed):
        self.series = series
        self.t0 = t0
        self.rng = random.Random(seed)
        self.points = []

    def add(self, series, ts, text, fate, line_format=None):
        point = Point(series.name, int(ts), float(text), b"", fate, seq=len(self.points))
        if series.spec.pickle:
            point.pickled = (series.name, (self.pickle_ts(ts), self.pickle_value(text)))
        else:
            point.line = ((line_format or "%%s %s %d\n" % (text, ts)) % series.name).encode()
        self.points.append(point)

    def pickle_ts(self, ts):
        # clients send ints or floats; carbon takes float() of either
        return ts if self.rng.random() < 0.7 else ts + self.rng.randrange(0, 10) / 10

    def pickle_value(self, text):
        v, r = float(text), self.rng.random()
        if r < 0.2 and text.lstrip("-").isdigit():
            return int(text)  # an int, perhaps beyond 64 bits: carbon takes float()
        if r < 0.15:
            return text  # a string: carbon's float() accepts it too
        return v

    def excluded(self, s, age):
        """Ages where no point may go: near a boundary, in a gap, in a clobber zone."""
        for k in range(len(s.archives)):
            ret, m = s.retention(k), s.margin(k)
            if ret - m < age < ret + m:
                return True
            if s.spec.future:
                # whisper's archives are rings: a point d ahead overwrites the slot
                # of age retention - d. Keep those slots empty.
                step = s.archives[k][0]
                lo = ret + FUTURE_AGES[0] - step - 5 * MIN
                hi = ret + FUTURE_AGES[1] + step + 5 * MIN
                if lo < age < hi:
                    return True
        return any(lo <= age <= hi for lo, hi in s.spec.gaps)

    def present(self, s, k, slot, ts_step):
        """Whether a slot of archive k gets points."""
        if s.spec.kind == "cycle" and k + 1 < len(s.archives):
            # exactly c of the r finer slots of each coarse slot, c cycling 0..r:
            # the known fraction hits every value, 1/10 and 3/10 included
            coarse = s.archives[k + 1][0]
            ratio = coarse // ts_step
            window = slot // coarse
            known = window % (ratio + 1)
            chosen = random.Random(window * 7919 + k).sample(range(ratio), known)
            return (slot % coarse) // ts_step in chosen
        return self.rng.random() < s.spec.density

    def series_points(self, s):
        rng, t0 = self.rng, self.t0
        values = Values(s.spec.kind, rng)
        fmt = (lambda text, ts: spelling(rng, text, ts)) if s.spec.formats else (lambda t, ts: None)
        if not s.spec.stale:
            for k, (step, _) in enumerate(s.archives):
                lo_age = 0 if k == 0 else s.retention(k - 1)
                hi_age = s.retention(k)
                first = (t0 - hi_age) - (t0 - hi_age) % step + step
                for slot in range(first, t0 + 1, step):
                    if t0 - slot < lo_age or not self.present(s, k, slot, step):
                        continue
                    n = 1 if rng.random() > 0.06 else rng.randrange(2, 4)
                    for _ in range(n):
                        ts = slot + rng.randrange(0, step)
                        age = t0 - ts
                        if ts > t0 or age < lo_age or age > hi_age or self.excluded(s, age):
                            continue
                        text = values.next(ts)
                        self.add(s, ts, text, STORE, fmt(text, ts))
                        if rng.random() < 0.03:  # rewrite of the same slot, later
                            self.add(s, ts, values.next(ts), STORE)
                            self.points[-1].arrival = ts + rng.uniform(1, 2 * HOUR)
        oldest = s.retention(len(s.archives) - 1) + s.margin(len(s.archives) - 1)
        for _ in range(4 if s.spec.stale else rng.randrange(0, 3)):
            ts = t0 - oldest - rng.randrange(0, 2 * DAY)
            self.add(s, ts, values.next(ts), TOO_OLD)
        if s.spec.future:
            for _ in range(4):
                ts = t0 - rng.randrange(*FUTURE_AGES)
                self.add(s, ts, values.next(ts), FUTURE)
            for _ in range(2):
                ts = t0 - rng.randrange(*TOO_NEW_AGES)
                self.add(s, ts, values.next(ts), TOO_NEW)

    def bad_lines(self):
        for template in BAD_LINES:
            line = template.format(t=self.t0 - 120) + "\n"
            ts = self.t0 - self.rng.randrange(0, 2 * HOUR)
            self.points.append(Point("", ts, 0.0, line.encode(), BAD, seq=len(self.points)))
        for entry in BAD_PICKLED if any(s.spec.pickle for s in self.series) else []:
            ts = self.t0 - self.rng.randrange(0, 2 * HOUR)
            self.points.append(Point("", ts, 0.0, b"", BAD, entry, seq=len(self.points)))

    def run(self):
        for s in self.series:
            self.series_points(s)
        self.bad_lines()
        for p in self.points:
            if p.arrival:
                continue
            p.arrival = p.ts
            if self.rng.random() < 0.04:  # late: arrives after newer points
                p.arrival += self.rng.uniform(30, 3 * HOUR)
        self.points.sort(key=lambda p: (p.arrival, p.seq))
        return self.points


def make_series(schemas_path, aggregation_path, specs=SPECS, pickle=True):
    """The series of specs with carbon's config for each; pickle=False leaves out the
    series sent over the pickle protocol."""
    schemas = conf.load_schemas(schemas_path)
    aggregation = conf.load_aggregation(aggregation_path)
    out = []
    for spec in specs:
        if spec.pickle and not pickle:
            continue
        archives, xff, method = conf.series_config(spec.name, schemas, aggregation)
        out.append(Series(spec, archives, xff, method))
    return out


def generate(series, t0, seed):
    """All points in send order."""
    return Generator(series, t0, seed).run()


def expected_counts(points):
    counts = {STORE: 0, FUTURE: 0, TOO_OLD: 0, TOO_NEW: 0, BAD: 0}
    for p in points:
        counts[p.fate] += 1
    return counts
