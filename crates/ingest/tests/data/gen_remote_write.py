#!/usr/bin/env python3
"""Writes tests/data/remote_write/: a Prometheus remote-write 1.0 request serialized by
Google's own protobuf library (request.pb, uncompressed: the Rust test compresses it
with snappy), and expected.json, the points sumi must make of it under the label
mapping documented in src/remote_write/labels.rs, computed here independently.

The schema is prometheus/prompb (remote.proto, types.proto), built at run time from a
descriptor so that no protoc is needed. Run with any Python that has `protobuf`:
    python3 -m venv /tmp/pbvenv && /tmp/pbvenv/bin/pip install protobuf
    /tmp/pbvenv/bin/python crates/ingest/tests/data/gen_remote_write.py
"""

import json
import math
import os
import struct

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "remote_write")
F = descriptor_pb2.FieldDescriptorProto


def schema():
    fd = descriptor_pb2.FileDescriptorProto(name="prompb.proto", package="prometheus", syntax="proto3")

    def message(name, fields):
        m = fd.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = ".prometheus." + type_name

    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("Label", [("name", 1, F.TYPE_STRING, opt, None), ("value", 2, F.TYPE_STRING, opt, None)])
    message("Sample", [("value", 1, F.TYPE_DOUBLE, opt, None), ("timestamp", 2, F.TYPE_INT64, opt, None)])
    message("Exemplar", [
        ("labels", 1, F.TYPE_MESSAGE, rep, "Label"),
        ("value", 2, F.TYPE_DOUBLE, opt, None),
        ("timestamp", 3, F.TYPE_INT64, opt, None),
    ])
    message("Histogram", [
        ("count_int", 1, F.TYPE_UINT64, opt, None),
        ("sum", 3, F.TYPE_DOUBLE, opt, None),
        ("schema", 4, F.TYPE_SINT32, opt, None),
        ("positive_deltas", 12, F.TYPE_SINT64, rep, None),
        ("timestamp", 15, F.TYPE_INT64, opt, None),
    ])
    message("TimeSeries", [
        ("labels", 1, F.TYPE_MESSAGE, rep, "Label"),
        ("samples", 2, F.TYPE_MESSAGE, rep, "Sample"),
        ("exemplars", 3, F.TYPE_MESSAGE, rep, "Exemplar"),
        ("histograms", 4, F.TYPE_MESSAGE, rep, "Histogram"),
    ])
    message("MetricMetadata", [
        ("type", 1, F.TYPE_INT32, opt, None),
        ("metric_family_name", 2, F.TYPE_STRING, opt, None),
        ("help", 4, F.TYPE_STRING, opt, None),
        ("unit", 5, F.TYPE_STRING, opt, None),
    ])
    message("WriteRequest", [
        ("timeseries", 1, F.TYPE_MESSAGE, rep, "TimeSeries"),
        ("metadata", 3, F.TYPE_MESSAGE, rep, "MetricMetadata"),
    ])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName("prometheus." + name))


STALE = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]

SERIES = [
    ({"__name__": "node_cpu_seconds_total", "cpu": "0", "mode": "idle", "instance": "web01:9100", "job": "node"},
     [(1234.5, 1_700_000_000_123), (1240.25, 1_700_000_015_000)]),
    ({"__name__": "up", "job": "node", "instance": "web01:9100"}, [(1.0, 1_700_000_000_000), (STALE, 1_700_000_300_000)]),
    ({"__name__": "http_request_duration_seconds_bucket", "le": "+Inf", "path": "/api;v1?q=50%", "name": "checkout"},
     [(17.0, 1_700_000_000_500)]),
    ({"__name__": "http.server.duration", "service.name": "cart", "tilde": "~home", "empty": ""}, [(0.25, -1500)]),
    ({"__name__": "weird name/with*glob", "k": "tab\there"}, [(float("inf"), 0), (float("nan"), 1000)]),
    ({"job": "no_name"}, [(1.0, 1000)]),
    ({"__name__": "caf\u00e9_\u6e29\u5ea6"}, [(5e-324, 2_000_000_000_000)]),
]


def escape(text, keep, tilde=False):
    out = []
    for i, c in enumerate(text):
        if keep(c) and not (tilde and i == 0 and c == "~"):
            out.append(c)
        else:
            out.extend("%%%02X" % b for b in c.encode("utf-8"))
    return "".join(out)


def is_py_space(c):
    return c.isspace() or c in "\x1c\x1d\x1e\x1f"


def keep_metric(c):
    return (c.isascii() and (c.isalnum() or c in "_:.-")) or (not c.isascii() and not 0x80 <= ord(c) <= 0x9F and not is_py_space(c))


def keep_tag(c):
    return c not in ";!^=%" and not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)


def keep_value(c):
    return c not in ";%" and not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)


def graphite_name(labels):
    metric = labels.get("__name__", "")
    if not metric:
        return None
    tags = {}
    for k, v in labels.items():
        if k == "__name__" or v == "":
            continue
        k = escape(k, keep_tag)
        if k == "name":
            k = "exported_name"
        tags[k] = escape(v, keep_value, tilde=True)
    name = escape(metric, keep_metric)
    name = ".".join(n for n in name.split(".") if n)
    return name + "".join(sorted(";%s=%s" % kv for kv in tags.items()))


def bits(f):
    return struct.unpack("<Q", struct.pack("<d", f))[0]


def main():
    cls = schema()
    req = cls("WriteRequest")()
    expected = []
    for labels, samples in SERIES:
        ts = req.timeseries.add()
        for k, v in labels.items():
            ts.labels.add(name=k, value=v)
        for v, t in samples:
            ts.samples.add(value=v, timestamp=t)
        name = graphite_name(labels)
        for v, t in samples:
            if name is None or math.isnan(v):
                continue
            expected.append([name, int(t / 1000), bits(v)])
    # a series with an exemplar and two native histograms, and metadata
    ts = req.timeseries.add()
    ts.labels.add(name="__name__", value="rpc_latency")
    ts.samples.add(value=3.5, timestamp=1_700_000_000_000)
    ex = ts.exemplars.add(value=3.4, timestamp=1_700_000_000_001)
    ex.labels.add(name="trace_id", value="abc123")
    ts.histograms.add(count_int=10, sum=12.5, schema=-1, positive_deltas=[1, -2, 3], timestamp=1_700_000_000_000)
    ts.histograms.add(count_int=1, timestamp=1_700_000_015_000)
    expected.append(["rpc_latency", 1_700_000_000, bits(3.5)])
    req.metadata.add(type=1, metric_family_name="rpc_latency", help="latency", unit="seconds")

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "request.pb"), "wb") as fh:
        fh.write(req.SerializeToString())
    with open(os.path.join(OUT, "expected.json"), "w") as fh:
        json.dump({
            "points": expected,
            "refused": {"stale_marker": 1, "nan_value": 1, "invalid_element": 1, "histogram_sample": 2},
        }, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    print("wrote %d points to %s" % (len(expected), OUT))


if __name__ == "__main__":
    main()
