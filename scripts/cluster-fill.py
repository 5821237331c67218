#!/usr/bin/env python3
"""scripts/cluster-fill.py CARBON PARTITIONS PARTITION SERIES POINTS [PREFIX]

Fills one partition of a cluster with data that compresses badly, for timing the
move of a large partition (scripts/cluster-move-bench.sh, SUMI_MOVE_FILL=random):
sends SERIES series of POINTS points each, one a minute, the newest 10 minutes ago,
as carbon plaintext to CARBON (host:port, the ingest node). Only names that the
cluster places in PARTITION (FNV-1a-64 of the name mod PARTITIONS, docs/cluster.md
"Partitioning") are sent: `PREFIX.hNNNNNN.mMM` with the numbers that hash there, so
every point sent lands in that partition and the others get nothing.

Values are random doubles in [0, 100) printed with 17 significant digits (drawn from
a pool of 65,536 made with a fixed seed, so two neighbours share no bits worth
keeping): the engine's codec keeps about 8-9 bytes a point of them, against about
2 for agent-like series, so a GiB of sealed parts takes about 4 times fewer points to
send. A series is sent whole (its POINTS points in time order) before the next, like
a backfill. Prints the points sent and the seconds taken.
"""
import random
import socket
import sys
import time

carbon, partitions, partition, series, points = sys.argv[1], *map(int, sys.argv[2:6])
prefix = sys.argv[6] if len(sys.argv) > 6 else "movefill"


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def names():
    i = 0
    while True:
        name = "%s.h%06d.m%02d" % (prefix, i // 100, i % 100)
        i += 1
        if fnv1a64(name) % partitions == partition:
            yield name


rng = random.Random(42)
pool = ["%.17g" % (rng.random() * 100) for _ in range(1 << 16)]
end = (int(time.time()) - 600) // 60 * 60
stamps = [" %d\n" % (end - 60 * (points - 1 - k)) for k in range(points)]
host, port = carbon.rsplit(":", 1)
sock = socket.create_connection((host, int(port)))
t0 = time.time()
sent = 0
gen = names()
pick = rng.getrandbits
for _ in range(series):
    name = next(gen) + " "
    sock.sendall("".join([name + pool[pick(16)] + ts for ts in stamps]).encode())
    sent += points
sock.shutdown(socket.SHUT_WR)
sock.recv(1)
sock.close()
print("%d points in %d series to partition %d of %d, %.1f s" % (sent, series, partition, partitions, time.time() - t0))
