"""The whisper side: the files carbon-cache would create, written one point at a time.

carbon lays a metric out as ``<WHISPER_DIR>/<name with . as />.wsp`` and creates the
file, with the archives, xFilesFactor and method of its config rules, when the first
parsed (non-NaN) point of the metric arrives, even one too old to be kept. Points are
then applied in send order with ``whisper.update`` (so the last write to a slot wins,
as in sumi), except near-future points: ``whisper.update`` refuses any future timestamp,
while carbon writes through ``update_many``, which keeps them, so those go through
``update_many`` as carbon would write them.
"""

import os

import whisper

from . import gen


def metric_path(whisper_dir, name):
    return os.path.join(whisper_dir, *name.split(".")) + ".wsp"


def write(whisper_dir, series, points, now):
    """Creates the files and applies ``points`` as of time ``now``; returns {fate: count}."""
    by_name = {s.name: s for s in series}
    created = set()
    written = {}
    for p in points:
        if p.fate == gen.BAD:
            continue
        s = by_name[p.name]
        path = metric_path(whisper_dir, p.name)
        if p.name not in created:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            whisper.create(path, s.archives, xFilesFactor=s.xff, aggregationMethod=s.method)
            created.add(p.name)
        if p.fate == gen.STORE:
            whisper.update(path, p.value, p.ts, now=now)
        elif p.fate == gen.FUTURE:
            whisper.update_many(path, [(p.ts, p.value)], now=now)
        else:
            # too_old: carbon's update_many drops it silently.
            # too_new: carbon would keep it; sumi refuses it (see gen).
            continue
        written[p.fate] = written.get(p.fate, 0) + 1
    return written
