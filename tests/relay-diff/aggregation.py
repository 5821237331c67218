"""carbon 1.1.10's own aggregator and relay rules, for sumi relay's differential test.

Reads one JSON object on stdin:

    {"aggregation_rules": "<text of aggregation-rules.conf>",
     "rounds": [{"now": 1700000000, "points": [["name", ts, value], ...]}, ...],
     "relay_rules": "<text of relay-rules.conf>", "names": ["a.b", ...]}

Aggregation: each round's points go through carbon's AggregationProcessor (rules
from carbon.aggregator.rules, buffers from carbon.aggregator.buffers); then, with
time.time() set to the round's "now", every buffer computes once (what its
LoopingCall does every `frequency` seconds). Writes, per round, the points forwarded
and the aggregates generated.

Relay rules: carbon.relayrules.loadRelayRules and RelayRulesRouter give each name's
destinations.
"""
import json
import os
import sys
import tempfile
import time

from carbon import state
import carbon.events
import carbon.instrumentation

# carbon's daemons set these up at start; the processor and buffers need them.
state.events = carbon.events
state.instrumentation = carbon.instrumentation

from carbon.aggregator.buffers import BufferManager  # noqa: E402
from carbon.aggregator.processor import AggregationProcessor  # noqa: E402
from carbon.aggregator.rules import RuleManager  # noqa: E402
from carbon.routers import RelayRulesRouter  # noqa: E402


def main():
    spec = json.load(sys.stdin)
    tmp = tempfile.mkdtemp()
    result = {}

    agg_path = os.path.join(tmp, "aggregation-rules.conf")
    with open(agg_path, "w") as f:
        f.write(spec["aggregation_rules"])
    RuleManager.rules_file = agg_path
    RuleManager.read_rules()
    generated = []
    carbon.events.metricGenerated.addHandler(
        lambda metric, dp: generated.append([metric, dp[0], repr(float(dp[1]))]))
    processor = AggregationProcessor()
    rounds = []
    for r in spec["rounds"]:
        forwarded = []
        for name, ts, value in r["points"]:
            # Values travel as text both ways: JSON numbers need not round-trip.
            for metric, (t, v) in processor.process(name, (ts, float(value))):
                forwarded.append([metric, t, repr(v)])
        del generated[:]
        real_time = time.time
        time.time = lambda: r["now"]
        try:
            for buf in list(BufferManager.buffers.values()):
                buf.compute_value()
        finally:
            time.time = real_time
        rounds.append({"forwarded": forwarded, "generated": list(generated)})
    result["rounds"] = rounds

    rules_path = os.path.join(tmp, "relay-rules.conf")
    with open(rules_path, "w") as f:
        f.write(spec["relay_rules"])
    router = RelayRulesRouter({"relay-rules": rules_path})
    for d in spec["destinations"]:
        from carbon.util import parseDestination
        router.addDestination(parseDestination(d))
    index = {}
    from carbon.util import parseDestination
    for n, d in enumerate(spec["destinations"]):
        index[parseDestination(d)] = n
    result["routes"] = [[index[d] for d in router.getDestinations(name)] for name in spec["names"]]
    json.dump(result, sys.stdout)


main()
