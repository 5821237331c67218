"""Placement by carbon 1.1.10's own ConsistentHashingRouter, for sumi relay's
differential test. Reads one JSON object on stdin:

    {"cases": [{"destinations": ["host:port[:instance]", ...], "replication_factor": 2,
                "diverse_replicas": true, "hash_type": "carbon_ch", "names": [...]}]}

and writes, per case, per name, the indices (into "destinations") that carbon's
router yields, in its order: {"placements": [[[0, 2], ...], ...]}.
"""
import json
import sys

from carbon.routers import ConsistentHashingRouter
from carbon.util import parseDestinations


class Settings(dict):
    def __getattr__(self, key):
        return self[key]


def main():
    spec = json.load(sys.stdin)
    out = []
    for case in spec["cases"]:
        router = ConsistentHashingRouter(Settings(
            REPLICATION_FACTOR=case["replication_factor"],
            DIVERSE_REPLICAS=case["diverse_replicas"],
            ROUTER_HASH_TYPE=case["hash_type"],
        ))
        dests = parseDestinations(case["destinations"])
        for d in dests:
            router.addDestination(d)
        index = {(h, i): n for n, (h, _p, i) in enumerate(dests)}
        out.append([
            [index[(h, i)] for (h, _p, i) in router.getDestinations(name)]
            for name in case["names"]
        ])
    json.dump({"placements": out}, sys.stdout)


main()
