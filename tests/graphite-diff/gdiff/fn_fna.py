"""Render-function cases: Combine and Transform (graphite-web's groups), with
``consolidateBy`` and ``setXFilesFactor``, asked of both servers as ``format=json`` on
the harness's data.

Every function of these groups has at least one case, the important ones several, with
the edge cases they meet in practice: null points (sparse series), globs matching
nothing, series of different steps in one list (10 s, 30 s and 1 min, aligned to their
least common multiple), series of different lengths (ranges where one archive is
clamped by its retention), values that overflow (``diff.fine.edge.*``), counters that
reset, ``maxDataPoints`` over consolidated results.

Nothing here is random or reads the wall clock except ``timeSlice`` with relative
bounds (excluded below; its absolute form is compared).

``EXCLUDED`` lists requests left out of the exact comparison, each with the reason:
graphite-web fails on them with a server error (or never answers), and sumi answers
sensibly instead, as documented at each function in ``crates/query/src/functions``.
``ERRORS_BOTH`` are requests both refuse (graphite-web sometimes with a 500 where sumi
answers 400); they are compared as errors.
"""

from .queries import render_json

F1 = "diff.fine.web01.cpu.user"  # 10s:1h,1m:1d,10m:7d
F2 = "diff.fine.web02.cpu.user"  # with gaps
F3 = "diff.fine.web03.cpu.user"  # sparse
CPU = "diff.fine.web0*.cpu.user"  # three series
FINE = "diff.fine.web01.*.*"  # ten series of every rollup method
COUNTER = "diff.fine.web01.requests.count"  # a counter with rare resets
INTS = "diff.fine.web01.requests.sum"
RATES = "diff.mid.app.*.rate"  # 1m:6h,5m:2d
ALPHA = "diff.mid.app.alpha.rate"
SPARSE = "diff.mid.app.beta.sparse"
ERRORS = "diff.mid.app.alpha.errors.*"
LOADS = "diff.legacy.host*.load"  # 60:1440
WIDE = "diff.wide.svc.*.*"  # 30s:2h,5min:1d,1h:30d
MIX = "diff.{fine.web01.cpu,mid.app.alpha}.{user,rate}"  # 10 s and 1 min
MIX3 = "diff.{fine.web01.cpu.user,mid.app.alpha.rate,wide.svc.a.gauge}"  # 10 s, 1 min, 30 s
EDGE = "diff.fine.edge.*"  # -0.0, 1e308, subnormals
BIG = "diff.fine.big.values"
NEG = "diff.fine.neg.values"
NOTHING = "diff.nothing.*"


def targets(now):
    """(target, from, extra params) for every case, in order."""
    abs_50m, abs_20m = str(now - 50 * 60), str(now - 20 * 60)
    return [
        # ---- aggregate() and its named forms ----
        ("sumSeries(%s)" % CPU, "-30min", ()),
        ("sumSeries(%s)" % CPU, "-2h", ()),
        ("sumSeries(%s)" % MIX, "-1h", ()),
        ("sumSeries(%s)" % MIX3, "-1h", ()),
        ("sumSeries(%s,%s)" % (F1, ALPHA), "-7h", ()),  # 1 min and 5 min archives
        ("sumSeries(%s)" % NOTHING, "-1h", ()),
        ("sumSeries(%s,%s)" % (F1, NOTHING), "-30min", ()),
        ("sumSeries(%s)" % EDGE, "-30min", ()),  # overflows to inf
        ("sumSeries(%s)" % FINE, "-1h", (("maxDataPoints", "40"),)),
        ("sum(%s)" % LOADS, "-3h", ()),
        ("averageSeries(%s)" % CPU, "-1h", ()),
        ("averageSeries(%s)" % WIDE, "-1d", ()),
        ("avg(%s)" % MIX, "-1h", ()),
        ("minSeries(%s)" % RATES, "-3h", ()),
        ("maxSeries(%s)" % EDGE, "-30min", ()),
        ("maxSeries(%s,%s)" % (NEG, F3), "-1h", ()),
        ("diffSeries(%s)" % CPU, "-1h", ()),
        ("diffSeries(%s,%s)" % (F3, F1), "-1h", ()),
        ("stddevSeries(%s)" % RATES, "-3h", ()),
        ("stddevSeries(%s)" % EDGE, "-30min", ()),
        ("rangeOfSeries(%s)" % FINE, "-1h", ()),
        ("multiplySeries(%s)" % CPU, "-1h", ()),
        ("multiplySeries(%s)" % F1, "-1h", ()),
        ("multiplySeries(%s,%s)" % (NEG, ALPHA), "-1h", ()),
        ("countSeries(%s)" % CPU, "-1h", ()),
        ("countSeries(%s)" % MIX3, "-1h", ()),
        ("countSeries(%s)" % NOTHING, "-1h", ()),
        ("countSeries()", "-1h", ()),
        ("aggregate(%s,'sum')" % CPU, "-1h", ()),
        ("aggregate(%s,'avg_zero')" % CPU, "-1h", ()),
        ("aggregate(%s,'median')" % FINE, "-1h", ()),
        ("aggregate(%s,'median')" % RATES, "-3h", ()),
        ("aggregate(%s,'count')" % RATES, "-3h", ()),
        ("aggregate(%s,'last')" % CPU, "-1h", ()),
        ("aggregate(%s,'current')" % LOADS, "-3h", ()),
        ("aggregate(%s,'total')" % WIDE, "-1h", ()),
        ("aggregate(%s,'rangeOf')" % ERRORS, "-3h", ()),
        ("aggregate(%s,'range')" % EDGE, "-30min", ()),
        ("aggregate(%s,'multiply')" % ERRORS, "-3h", ()),
        ("aggregate(%s,'diff')" % RATES, "-3h", ()),
        ("aggregate(%s,'stddev')" % MIX, "-1h", ()),
        ("aggregate(%s,'maxSeries')" % CPU, "-1h", ()),
        ("aggregate(%s,'average',0.5)" % CPU, "-1h", ()),
        ("aggregate(%s,'sum',1)" % CPU, "-2h", ()),
        ("aggregate(%s,'avg',0.75)" % MIX, "-1h", ()),
        ("aggregate(%s,'sum')" % NOTHING, "-1h", ()),
        ("sumSeries(setXFilesFactor(%s,0.5))" % CPU, "-1h", ()),
        ("sumSeries(xFilesFactor(%s,1),%s)" % (F3, F1), "-1h", ()),
        ("averageSeries(%s)" % CPU, "-3h", (("xFilesFactor", "0.6"),)),
        ("sumSeries(%s)" % MIX, "-1h", (("maxDataPoints", "13"), ("xFilesFactor", "0.5"))),
        # evaluated as a stream by sumi (a chunk of series at a time): every series of
        # the harness (three schemas, steps of 10 s, 30 s and 1 min, nulls, overflows)
        # under per-series functions
        ("sumSeries(isNonNull(diff.*.*.*.*))", "-1h", ()),
        ("averageSeries(transformNull(diff.*.*.*.*,0))", "-3h", ()),
        ("maxSeries(absolute(scale(diff.*.*.*.*,-1)))", "-1h", ()),
        ("aggregate(offset(diff.*.*.*.*,1),'sum',0.5)", "-1d", ()),
        ("aggregate(diff.*.*.*.*,'avg_zero',0.1)", "-7h", ()),
        ("countSeries(isNonNull(diff.*.*.*.*))", "-1h", ()),
        ("multiplySeries(isNonNull(%s))" % F1, "-1h", ()),
        ("rangeOfSeries(diff.*.*.*.*)", "-7h", ()),
        ("minSeries(diff.*.*.*.*)", "-2d", (("xFilesFactor", "0.3"),)),
        ("sumSeriesWithWildcards(isNonNull(diff.*.*.*.*),1,3)", "-3h", ()),
        ("groupByNode(diff.*.*.*.*,1,'sumSeries')", "-7h", ()),
        ("groupByNodes(transformNull(diff.*.*.*.*,-1),'max',1,4)", "-1h", ()),
        # several lists, streamed list after list (the benchmark harness's count)
        ("sumSeries(isNonNull(diff.*.*.*),isNonNull(diff.*.*.*.*))", "-1h", ()),
        ("stddevSeries(%s,scale(diff.mid.*.*.*,2),%s)" % (WIDE, NOTHING), "-7h", ()),
        ("diffSeries(%s,offset(%s,1),%s)" % (ALPHA, CPU, F1), "-1h", (("xFilesFactor", "0.5"),)),
        ("countSeries(%s,%s,isNonNull(%s))" % (NOTHING, LOADS, MIX3), "-3h", ()),
        ("multiplySeries(%s,%s)" % (F1, NOTHING), "-1h", ()),
        # ---- pairwise lists ----
        ("sumSeriesLists(%s,%s)" % (CPU, "diff.fine.web0*.cpu.user"), "-1h", ()),
        ("diffSeriesLists(diff.fine.web0{1,2}.cpu.user,diff.mid.app.{alpha,beta}.rate)", "-1h", ()),
        ("multiplySeriesLists(%s,%s)" % (RATES, RATES), "-3h", ()),
        ("aggregateSeriesLists(%s,%s,'max')" % (F1, ALPHA), "-1h", ()),
        ("aggregateSeriesLists(%s,%s,'avg_zero',0.5)" % (CPU, CPU), "-1h", ()),
        ("sumSeriesLists(%s,%s)" % (NOTHING, NOTHING), "-1h", ()),
        # ---- wildcards ----
        ("sumSeriesWithWildcards(%s,2)" % CPU, "-1h", ()),
        ("sumSeriesWithWildcards(diff.*.*.*.*,1,2)", "-3h", ()),
        ("averageSeriesWithWildcards(%s,4)" % FINE, "-1h", ()),
        ("averageSeriesWithWildcards(%s,3)" % RATES, "-3h", ()),
        ("multiplySeriesWithWildcards(%s,4)" % ERRORS, "-3h", ()),
        ("aggregateWithWildcards(%s,'max',2)" % LOADS, "-3h", ()),
        ("aggregateWithWildcards(%s,'median',3,4)" % WIDE, "-1d", ()),
        ("sumSeriesWithWildcards(%s)" % CPU, "-1h", ()),
        ("sumSeriesWithWildcards(%s,1)" % NOTHING, "-1h", ()),
        # a float position (graphite-web 1.1.10 does not enforce parameter types): it
        # is compared with `in`, so 2.0 is node 2 and 2.5 no node at all
        ("sumSeriesWithWildcards(%s,2.0)" % CPU, "-1h", ()),
        ("aggregateWithWildcards(%s,'max',2.5)" % LOADS, "-3h", ()),
        # ---- percentiles, powers, group ----
        ("percentileOfSeries(%s,50)" % CPU, "-1h", ()),
        ("percentileOfSeries(%s,90,true)" % FINE, "-1h", ()),
        ("percentileOfSeries(%s,25)" % MIX3, "-1h", ()),
        ("percentileOfSeries(%s,100)" % RATES, "-3h", ()),
        ("percentileOfSeries(%s,50)" % NOTHING, "-1h", ()),
        ("powSeries(%s,%s)" % (F1, "diff.fine.web01.queue.avgzero"), "-30min", ()),
        ("powSeries(%s)" % ERRORS, "-3h", ()),
        ("powSeries(%s,%s)" % (NEG, ALPHA), "-1h", ()),
        ("group(%s,%s,%s)" % (F1, NOTHING, ALPHA), "-30min", ()),
        ("group()", "-30min", ()),
        # ---- asPercent ----
        ("asPercent(%s)" % CPU, "-1h", ()),
        ("asPercent(%s)" % MIX, "-1h", ()),  # the sum at 1 min, each series' own step kept
        ("asPercent(%s,100)" % LOADS, "-3h", ()),
        ("asPercent(%s,%s)" % (CPU, F1), "-1h", ()),
        ("asPercent(%s,%s)" % (CPU, ALPHA), "-1h", ()),
        ("asPercent(%s,%s)" % (RATES, RATES), "-3h", ()),
        ("asPercent(%s,%s)" % (F1, ALPHA), "-1h", ()),
        ("asPercent(%s,None,3)" % FINE, "-1h", ()),
        ("asPercent(diff.fine.web0*.cpu.*,diff.fine.web0*.cpu.user,2)", "-1h", ()),
        ("asPercent(%s,None,2)" % ERRORS, "-3h", ()),
        ("asPercent(diff.fine.web0*.*.*,%s,2)" % F1, "-1h", ()),  # MISSING ones after a pair
        ("pct(%s,0)" % F1, "-30min", ()),
        ("pct(%s,2.5)" % LOADS, "-1h", ()),
        ("asPercent(%s)" % NOTHING, "-1h", ()),
        ("asPercent(%s)" % EDGE, "-30min", ()),
        # ---- divideSeries ----
        ("divideSeries(%s,%s)" % (CPU, F1), "-1h", ()),
        ("divideSeries(%s,%s)" % (F1, ALPHA), "-1h", ()),
        ("divideSeries(%s,%s)" % (CPU, NOTHING), "-30min", ()),
        ("divideSeries(%s,diff.fine.web01.queue.avgzero)" % F1, "-1h", ()),  # zeros
        ("divideSeries(%s,%s)" % (RATES, ALPHA), "-7h", ()),
        ("divideSeriesLists(%s,%s)" % (RATES, RATES), "-3h", ()),
        ("divideSeriesLists(diff.fine.web0{1,2}.cpu.user,diff.mid.app.{alpha,beta}.rate)", "-1h", ()),
        # ---- weightedAverage ----
        ("weightedAverage(%s,%s,3)" % (CPU, CPU), "-1h", ()),
        ("weightedAverage(%s,%s,3)" % (RATES, RATES), "-3h", ()),
        ("weightedAverage(%s,%s)" % (CPU, CPU), "-1h", ()),
        ("weightedAverage(%s,%s,2)" % (NOTHING, NOTHING), "-1h", ()),
        # ---- groupings ----
        ("groupByNode(%s,2)" % CPU, "-1h", ()),
        ("groupByNode(%s,4,'sum')" % FINE, "-1h", ()),
        ("groupByNode(diff.*.*.*.*,1,'sumSeries')", "-3h", ()),
        ("groupByNode(%s,2,'avg')" % LOADS, "-3h", ()),
        ("groupByNode(%s,-1,'count')" % ERRORS, "-3h", ()),
        ("groupByNode(%s,3,'median')" % WIDE, "-1d", ()),
        ("groupByNode(scale(%s,2),2)" % CPU, "-1h", ()),
        ("groupByNode(%s,3,'maxSeries')" % MIX, "-1h", ()),
        ("groupByNode(%s,1,'asPercent')" % RATES, "-3h", ()),
        ("groupByNodes(%s,'avg',1,2)" % MIX3, "-1h", ()),
        ("groupByNodes(%s,'max',3,4)" % FINE, "-1h", ()),
        ("groupByNodes(%s,'sum')" % CPU, "-1h", ()),
        ("groupByNodes(%s,'diffSeries',0,4)" % ERRORS, "-3h", ()),
        ("groupByNode(%s,1)" % NOTHING, "-1h", ()),
        ("groupByTags(%s,'sum','name')" % CPU, "-1h", ()),
        ("groupByTags(%s,'max','name')" % RATES, "-3h", ()),
        ("reduceSeries(mapSeries(diff.fine.web01.cpu.*,3),'asPercent',4,'user','system')", "-1h", ()),
        ("reduceSeries(mapSeries(diff.fine.web01.latency.*,2),'diffSeries',4,'max','min')", "-1h", ()),
        ("reduce(map(%s,1),'sumSeries',4,'user')" % CPU, "-1h", ()),
        ("reduceSeries(mapSeries(%s,1),'sumSeries',2,'x')" % NOTHING, "-1h", ()),
        ("applyByNode(%s,2,'sumSeries(%%.cpu.*)')" % CPU, "-1h", ()),
        ("applyByNode(%s,3,'maxSeries(%%.*)','%%.top')" % ERRORS, "-3h", ()),
        ("applyByNode(%s,1,'countSeries(%%.*.*.*)')" % RATES, "-3h", ()),
        ("applyByNode(%s,2,'sumSeries(%%.*)')" % NOTHING, "-1h", ()),
        # ---- pointwise transforms ----
        ("scale(%s,2.5)" % CPU, "-1h", ()),
        ("scale(%s,-1)" % EDGE, "-30min", ()),
        ("scale(%s,1e300)" % RATES, "-3h", ()),  # overflows to inf
        ("scaleToSeconds(%s,1)" % COUNTER, "-1h", ()),
        ("scaleToSeconds(%s,60)" % RATES, "-7h", ()),
        ("scaleToSeconds(%s,2.5)" % WIDE, "-1d", ()),
        ("add(%s,5)" % CPU, "-1h", ()),
        ("add(%s,-1.5)" % EDGE, "-30min", ()),
        ("offset(%s,-1.5)" % LOADS, "-3h", ()),
        ("offset(%s,1e6)" % F1, "-1h", ()),
        ("offsetToZero(%s)" % NEG, "-1h", ()),
        ("offsetToZero(%s)" % SPARSE, "-3h", ()),
        ("pow(%s,2)" % NEG, "-1h", ()),
        ("pow(%s,0.5)" % NEG, "-1h", ()),
        ("pow(%s,400)" % F1, "-1h", ()),  # overflow: null
        ("pow(%s,-1)" % "diff.fine.web01.queue.avgzero", "-1h", ()),  # 0 ** -1: null
        ("squareRoot(%s)" % NEG, "-1h", ()),
        ("squareRoot(%s)" % EDGE, "-30min", ()),
        ("invert(%s)" % "diff.fine.web01.queue.avgzero", "-1h", ()),
        ("invert(%s)" % EDGE, "-30min", ()),
        ("absolute(%s)" % NEG, "-1h", ()),
        ("absolute(%s)" % EDGE, "-30min", ()),
        ("exp(%s)" % "diff.fine.web01.temp.absmin", "-30min", ()),  # -100..100
        ("log(%s)" % CPU, "-1h", ()),
        ("log(%s,2)" % NEG, "-1h", ()),
        ("log(%s,3)" % EDGE, "-30min", ()),
        ("log(%s,2.5)" % CPU, "-1h", ()),  # a float base, as written in the name
        ("log(%s,10.0)" % NEG, "-1h", ()),
        ("sigmoid(%s)" % NEG, "-1h", ()),
        ("sigmoid(%s)" % "diff.fine.web01.temp.absmax", "-1h", ()),
        ("logit(scale(%s,0.01))" % CPU, "-1h", ()),
        ("round(%s)" % CPU, "-1h", ()),
        ("round(%s,1)" % LOADS, "-3h", ()),
        ("round(%s,-2)" % INTS, "-1h", ()),
        ("round(%s,3)" % EDGE, "-30min", ()),
        ("minMax(%s)" % CPU, "-1h", ()),
        ("minMax(%s)" % SPARSE, "-3h", ()),
        ("minMax(%s)" % EDGE, "-30min", ()),
        ("isNonNull(%s)" % CPU, "-1h", ()),
        ("isNonNull(%s)" % MIX, "-1h", (("maxDataPoints", "20"),)),
        ("sumSeries(isNonNull(%s))" % FINE, "-1h", ()),
        # ---- rates and running totals ----
        ("derivative(%s)" % CPU, "-1h", ()),
        ("derivative(%s)" % EDGE, "-30min", ()),  # inf - inf
        ("nonNegativeDerivative(%s)" % COUNTER, "-1h", ()),
        ("nonNegativeDerivative(%s)" % COUNTER, "-1d", ()),
        ("nonNegativeDerivative(%s)" % "diff.mid.app.alpha.errors.count", "-7h", ()),
        ("nonNegativeDerivative(%s)" % CPU, "-1h", ()),
        ("perSecond(%s)" % COUNTER, "-1h", ()),
        ("perSecond(%s)" % COUNTER, "-3h", ()),
        ("perSecond(%s)" % RATES, "-7h", ()),
        ("integral(%s)" % CPU, "-1h", ()),
        ("integral(%s)" % EDGE, "-30min", ()),
        ("integralByInterval(%s,'10min')" % COUNTER, "-1h", ()),
        ("integralByInterval(%s,'1h')" % RATES, "-7h", ()),
        # ---- gaps ----
        ("keepLastValue(%s)" % F3, "-1h", ()),
        ("keepLastValue(%s,3)" % SPARSE, "-3h", ()),
        ("keepLastValue(%s,2.5)" % SPARSE, "-3h", ()),  # compared with a count as it is
        ("interpolate(%s,1.5)" % SPARSE, "-3h", ()),
        ("keepLastValue(%s)" % MIX, "-1h", ()),
        ("interpolate(%s)" % F3, "-1h", ()),
        ("interpolate(%s,2)" % SPARSE, "-3h", ()),
        ("interpolate(%s)" % F2, "-3h", ()),
        ("transformNull(%s)" % CPU, "-1h", ()),
        ("transformNull(%s,-1)" % SPARSE, "-3h", ()),
        ("transformNull(%s,0,%s)" % (F3, F2), "-3h", ()),
        ("transformNull(%s,0,%s)" % (F3, ALPHA), "-1h", ()),  # reference of another step
        ("transformNull(%s)" % NOTHING, "-1h", ()),
        ("compressPeriodicGaps(%s)" % CPU, "-1h", ()),
        ("compressPeriodicGaps(%s)" % SPARSE, "-3h", ()),
        ("delay(%s,3)" % CPU, "-1h", ()),
        ("delay(%s,-2)" % RATES, "-3h", ()),
        ("delay(%s,1000)" % F1, "-30min", ()),
        # ---- buckets ----
        ("summarize(%s,'5min')" % CPU, "-1h", ()),
        ("summarize(%s,'10min','avg')" % RATES, "-3h", ()),
        ("summarize(%s,'7min','max',true)" % F3, "-1h", ()),
        ("summarize(%s,'1h','last')" % LOADS, "-1d", ()),
        ("summarize(%s,'15min','median')" % MIX, "-2h", ()),
        ("summarize(%s,'1d','sum')" % WIDE, "-20d", ()),
        ("summarize(%s,'5min','count')" % SPARSE, "-3h", ()),
        ("summarize(%s,'2min','avg_zero')" % F3, "-1h", ()),
        ("summarize(%s,'5min','sum')" % F3, "-1h", (("xFilesFactor", "0.5"),)),
        ("summarize(%s,'45s','sum')" % F1, "-30min", ()),
        ("summarize(%s,'5min')" % EDGE, "-30min", ()),
        ("smartSummarize(%s,'5min')" % CPU, "-1h", ()),
        ("smartSummarize(%s,'7min','avg')" % RATES, "-3h", ()),
        ("smartSummarize(%s,'1h','sum','hours')" % LOADS, "-1d", ()),
        ("smartSummarize(%s,'10min','max','minutes')" % F1, "-1h", ()),
        ("smartSummarize(%s,'1d','avg','days')" % WIDE, "-20d", ()),
        ("smartSummarize(%s,'1w','avg','weeks')" % WIDE, "-25d", ()),
        ("hitcount(%s,'5min')" % CPU, "-1h", ()),
        ("hitcount(%s,'7min')" % RATES, "-3h", ()),
        ("hitcount(%s,'10min',true)" % F1, "-1h", ()),
        ("hitcount(%s,'1h',true)" % LOADS, "-1d", ()),
        ("hitcount(%s,'45s')" % MIX, "-30min", ()),
        # ---- time ----
        ("timeShift(%s,'10min')" % CPU, "-1h", ()),
        ("timeShift(%s,'-1h')" % RATES, "-3h", ()),
        ("timeShift(%s,'+30min')" % F1, "-2h", ()),
        ("timeShift(%s,'1d',false)" % LOADS, "-3h", ()),
        ("timeShift(%s,'2h')" % F1, "-1h", ()),  # the shifted interval reads the 1m archive
        ("timeShift(sumSeries(%s),'5min')" % CPU, "-1h", ()),
        ("timeShift(%s,'1h')" % NOTHING, "-1h", ()),
        ("timeStack(%s,'10min',0,3)" % F1, "-30min", ()),
        ("timeStack(%s,'10min',0.9,2.5)" % F1, "-30min", ()),  # int() of each
        ("timeStack(%s,'1h',1,3)" % RATES, "-2h", ()),
        ("timeStack(%s)" % "diff.legacy.host1.load", "-2h", ()),
        ("timeSlice(%s,'%s','%s')" % (CPU, abs_50m, abs_20m), "-1h", ()),
        ("timeSlice(%s,'%s','%s')" % (RATES, abs_50m, abs_20m), "-3h", ()),
        # ---- consolidation settings ----
        ("consolidateBy(%s,'max')" % CPU, "-1h", (("maxDataPoints", "30"),)),
        ("consolidateBy(%s,'sum')" % RATES, "-1d", (("maxDataPoints", "50"),)),
        ("consolidateBy(%s,'avg')" % F1, "-1h", (("maxDataPoints", "7"),)),
        ("consolidateBy(%s,'first')" % LOADS, "-1d", (("maxDataPoints", "11"),)),
        ("consolidateBy(%s,'avg_zero')" % F3, "-1h", (("maxDataPoints", "17"),)),
        ("sumSeries(consolidateBy(%s,'max'),%s)" % (F1, ALPHA), "-1h", ()),
        ("sumSeries(consolidateBy(%s,'sum'),%s)" % (F3, ALPHA), "-1h", ()),
        ("setXFilesFactor(%s,0.5)" % F3, "-1h", (("maxDataPoints", "20"),)),
        ("xFilesFactor(%s,0.9)" % SPARSE, "-3h", (("maxDataPoints", "10"),)),
        ("averageSeries(xFilesFactor(%s,0.4),%s)" % (F3, ALPHA), "-1h", ()),
    ]


# Requests both servers must refuse.
ERRORS_BOTH = [
    ("percentileOfSeries(%s,0)" % CPU, "-1h"),
    ("asPercent(%s,%s)" % (CPU, RATES), "-1h"),  # 3 series against 4
    ("asPercent(%s,diff.fine.web03.cpu.user,2)" % CPU, "-1h"),  # a MISSING one before any pair
    ("divideSeries(%s,%s)" % (F1, CPU), "-1h"),
    ("divideSeriesLists(%s,%s)" % (CPU, RATES), "-1h"),
    ("aggregateSeriesLists(%s,%s,'sum')" % (CPU, RATES), "-1h"),
    ("weightedAverage(%s,%s)" % (CPU, RATES), "-1h"),
    ("summarize(%s,'5min','sumSeries')" % F1, "-1h"),
    ("log(%s,1)" % F1, "-1h"),  # graphite-web: ZeroDivisionError
    ("log(%s,1.0)" % F1, "-1h"),  # graphite-web: ZeroDivisionError
    # a float where an integer is declared, used where Python needs an integer
    ("round(%s,1.0)" % F1, "-1h"),  # round(x, 1.0): TypeError
    ("delay(%s,2.0)" % F1, "-1h"),  # a slice index: TypeError
    ("reduceSeries(mapSeries(diff.fine.web0*.cpu.*,2),'asPercent',4,'user','system')", "-1h"),
    ("integralByInterval(%s,'0s')" % F1, "-1h"),
    ("groupByTags(%s,'sum','host')" % CPU, "-1h"),  # no such tag: an invalid name ('sum;host=')
]

# Left out of the exact comparison: graphite-web 1.1.10 fails (or reads the wall clock,
# or never answers) and sumi answers sensibly. Each reason names graphite-web's failure.
EXCLUDED = [
    # every series of the harness has gaps; maxValue/minValue are compared in the golden
    # cases (crates/query/src/functions/golden/transform.txt) on a series without any
    ("nonNegativeDerivative(%s,100)" % F1,
     "a series with gaps and maxValue: graphite-web compares None > maxValue (TypeError)"),
    ("nonNegativeDerivative(%s,minValue=40)" % F1,
     "a series with gaps and minValue: graphite-web compares None < minValue (TypeError)"),
    ("perSecond(%s,100,10)" % COUNTER,
     "a series with gaps and maxValue: graphite-web compares None > maxValue (TypeError)"),
    ("exp(%s)" % BIG, "math.exp overflows: graphite-web raises OverflowError"),
    ("sigmoid(scale(%s,-1))" % BIG, "math.exp overflows: graphite-web raises OverflowError"),
    ("mapSeries(%s,1)" % CPU, "a list of lists reaches the renderer: graphite-web fails (AttributeError)"),
    ("timeSlice(%s,'-30min')" % CPU, "graphite-web reads the bounds against the wall clock, not now="),
    ("summarize(%s,'-5min')" % F1, "a negative interval: graphite-web never returns"),
]


def queries(now):
    out = []
    for target, rng, extra in targets(now):
        out.append(render_json([target], now, [("from", rng)] + list(extra)))
    for target, rng in ERRORS_BOTH:
        out.append(render_json([target], now, [("from", rng)], error=True))
    # setXFilesFactor holds for the rest of the request, later targets included
    out.append(render_json(["xFilesFactor(%s,0.5)" % F3, "sumSeries(%s)" % CPU, F2], now,
                           [("from", "-1h"), ("maxDataPoints", "25")]))
    # a range ending in the past, where archives differ in length and step
    out.append(render_json(["sumSeries(%s)" % MIX3, "timeShift(%s,'30min')" % RATES], now,
                           [("from", "-8h"), ("until", "-5h")]))
    return out
