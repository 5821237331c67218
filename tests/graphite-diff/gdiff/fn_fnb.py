"""Render-function cases: Calculate, Series filter, Data filter, Sorting, Alias, Graph and
Special (graphite-web's groups), asked of both servers as ``format=json`` on the
harness's data.

Every function of these groups has at least one case; the important ones several, with
the edge cases the functions meet in practice: null points (sparse series), globs
matching nothing, series of different steps in one list (10 s and 1 min), series of
different lengths (one clamped by its retention), windows and bootstraps that reach
into a coarser archive, values that overflow (``diff.fine.edge.*``), `maxDataPoints`.

Random output is compared through deterministic views of it: ``changed(randomWalk())``
(every step moves) and ``aggregateLine(randomWalk(), 'count')``.

``EXCLUDED`` lists requests left out of the exact comparison, each with the reason:
graphite-web fails on them with a server error (or reads the wall clock), and sumi
answers sensibly instead, as documented at each function in ``crates/query/src/functions``.
Requests both refuse are compared as errors.
"""

from .queries import render_json, MIN, HOUR, DAY

F1 = "diff.fine.web01.cpu.user"  # 10s:1h,1m:1d,10m:7d
F3 = "diff.fine.web03.cpu.user"  # sparse
CPU = "diff.fine.web0*.cpu.user"  # three series, one with gaps, one sparse
WEB01 = "diff.fine.web01.*.*"  # ten series of every method
RATES = "diff.mid.app.*.rate"  # 1m:6h,5m:2d
SPARSE = "diff.mid.app.beta.sparse"
ERRORS = "diff.mid.app.alpha.errors.*"
LOADS = "diff.legacy.host*.load"  # 60:1440
MIX = "diff.{fine.web01.cpu,mid.app.alpha}.{user,rate}"  # 10 s and 1 min steps
EDGE = "diff.fine.edge.*"  # -0.0, 1e308, subnormals
BIG = "diff.fine.big.values"
NEG = "diff.fine.neg.values"
WIDE = "diff.wide.svc.*.*"  # 30s:2h,5min:1d,1h:30d
NOTHING = "diff.nothing.*"
CONSTANTS = "unique(constantLine(1),constantLine(5),constantLine(3))"  # no nulls at all


def targets(now):
    """(target, from, extra params) for every case, in order."""
    abs_2h, abs_1h, abs_10m = str(now - 2 * HOUR), str(now - HOUR), str(now - 10 * MIN)
    return [
        # ---- Calculate: moving windows ----
        ("movingAverage(%s,5)" % F1, "-1h", ()),
        ("movingAverage(%s,'10min')" % RATES, "-3h", ()),
        ("movingAverage(%s,6,0.5)" % F3, "-1h", ()),
        ("movingAverage(%s,5)" % NOTHING, "-1h", ()),
        ("movingAverage(%s,3)" % MIX, "-1h", ()),
        ("movingAverage(%s,'2min')" % MIX, "-1h", ()),
        ("movingAverage(%s,'1h')" % LOADS, "-6h", ()),
        ("movingAverage(%s,'30min')" % F1, "-1h", ()),  # the bootstrap reads the 1m archive
        ("movingAverage(%s,20)" % WIDE, "-3h", ()),
        ("movingAverage(%s,5)" % F1, "-1h", (("maxDataPoints", "50"),)),
        ("movingAverage(aliasByNode(%s,3),3)" % RATES, "-1h", ()),
        ("movingSum(%s,4)" % EDGE, "-30min", ()),
        ("movingSum(diff.fine.web01.requests.count,'5min')", "-2h", ()),
        ("movingMin(%s,10)" % NEG, "-1h", ()),
        ("movingMax(%s,'15min',0.8)" % RATES, "-3h", ()),
        ("movingMedian(diff.fine.web02.cpu.user,7)", "-1h", ()),
        ("movingMedian(%s,'10min')" % SPARSE, "-3h", ()),
        ("movingWindow(%s,5,'median')" % RATES, "-2h", ()),
        ("movingWindow(%s,'1min','sum',0.5)" % F1, "-1h", ()),
        ("movingWindow(%s,4,'stddev')" % LOADS, "-3h", ()),
        ("movingWindow(%s,3,'range')" % ERRORS, "-2h", ()),
        ("movingWindow(%s,6,'avg_zero')" % SPARSE, "-3h", ()),
        ("movingWindow(%s,6,'count')" % F3, "-1h", ()),
        ("movingWindow(%s,3,'diff')" % ERRORS, "-1h", ()),
        ("movingWindow(diff.mid.app.alpha.errors.min,2,'multiply')", "-1h", ()),
        ("movingWindow(%s,'5min','last',0.2)" % RATES, "-2h", ()),
        ("movingWindow(%s,4,'max')" % BIG, "-1d", ()),
        ("exponentialMovingAverage(%s,10)" % F1, "-1h", ()),
        ("exponentialMovingAverage(%s,'30min')" % RATES, "-3h", ()),
        ("exponentialMovingAverage(%s,5)" % F3, "-1h", ()),
        ("exponentialMovingAverage(%s,3)" % NOTHING, "-1h", ()),
        ("exponentialMovingAverage(%s,4)" % BIG, "-3d", ()),
        ("exponentialMovingAverage(%s,3)" % MIX, "-1h", ()),
        # ---- Calculate: Holt-Winters ----
        ("holtWintersForecast(diff.mid.app.alpha.rate)", "-1h", ()),  # 7d bootstrap: 5m archive
        ("holtWintersForecast(diff.legacy.host1.load)", "-3h", ()),  # clamped by retention
        ("holtWintersForecast(%s,'2h','1h')" % RATES, "-2h", ()),
        ("holtWintersConfidenceBands(diff.legacy.host1.load)", "-3h", ()),
        ("holtWintersConfidenceBands(diff.mid.app.beta.rate,2,'3h','1h')", "-1h", ()),
        ("holtWintersConfidenceArea(diff.legacy.host2.load)", "-3h", ()),
        ("holtWintersConfidenceArea(diff.mid.app.gamma.rate,3,'2h','30min')", "-1h", ()),
        ("holtWintersAberration(diff.legacy.host1.load,3,'6h','1h')", "-3h", ()),
        ("holtWintersAberration(diff.mid.app.alpha.rate,3,'2h','1h')", "-2h", ()),
        ("holtWintersAberration(%s,2,'2h','1h')" % RATES, "-1h", ()),
        # ---- Calculate: the rest ----
        ("aggregateLine(%s)" % CPU, "-1h", ()),
        ("aggregateLine(%s,'max')" % RATES, "-3h", ()),
        ("aggregateLine(%s,'count',true)" % LOADS, "-3h", ()),
        ("aggregateLine(%s,'median')" % SPARSE, "-3h", ()),
        ("aggregateLine(%s)" % NOTHING, "-1h", ()),
        ("aggregateLine(%s,'sum')" % EDGE, "-30min", ()),
        ("linearRegression(%s)" % F1, "-1h", ()),
        ("linearRegression(%s)" % RATES, "-3h", ()),
        ("linearRegression(diff.legacy.host1.load,'%s','%s')" % (abs_2h, abs_1h), "-1h", ()),
        ("linearRegression(%s)" % SPARSE, "-2h", ()),
        ("nPercentile(%s,50)" % CPU, "-1h", ()),
        ("nPercentile(%s,95)" % RATES, "-3h", ()),
        ("nPercentile(%s,10)" % EDGE, "-30min", ()),
        ("nPercentile(%s,99.9)" % WIDE, "-1d", ()),
        ("stdev(%s,5)" % F1, "-1h", ()),
        ("stdev(%s,10,0.5)" % RATES, "-3h", ()),
        ("stdev(%s,3,0)" % LOADS, "-2h", ()),
        ("stdev(%s,6)" % SPARSE, "-3h", ()),
        ("stdev(%s,0)" % F1, "-1h", ()),
        ("constantLine(42)", "-1h", ()),
        ("constantLine(-1.5)", "-3d", ()),
        ("constantLine(100)", "-1h", (("maxDataPoints", "300"),)),  # Grafana's health check
        # ---- Series filters ----
        ("averageAbove(%s,50)" % RATES, "-3h", ()),
        ("averageBelow(%s,50)" % CPU, "-1h", ()),
        ("currentAbove(%s,50)" % LOADS, "-1h", ()),
        ("currentBelow(%s,50)" % RATES, "-1h", ()),
        ("maximumAbove(%s,60)" % CPU, "-1h", ()),
        ("maximumBelow(%s,80)" % LOADS, "-3h", ()),
        ("minimumAbove(%s,20)" % RATES, "-3h", ()),
        ("minimumBelow(%s,10)" % WEB01, "-1h", ()),
        ("filterSeries(%s,'max','>',60)" % RATES, "-3h", ()),
        ("filterSeries(%s,'sum','<',1000)" % LOADS, "-1h", ()),
        ("filterSeries(%s,'last','>=',0)" % ERRORS, "-1h", ()),
        ("filterSeries(%s,'median','!=',0)" % WEB01, "-1h", ()),
        ("filterSeries(%s,'count','=',360)" % CPU, "-1h", ()),
        ("filterSeries(%s,'stddev','<=',5)" % RATES, "-3h", ()),
        ("filterSeries(%s,'max','>',1)" % NOTHING, "-1h", ()),
        ("highest(%s,2)" % CPU, "-1h", ()),
        ("highest(%s,2,'max')" % RATES, "-3h", ()),
        ("highest(%s,3,'sum')" % WEB01, "-1h", ()),
        ("highest(%s,-1)" % LOADS, "-3h", ()),
        ("lowest(%s,2)" % RATES, "-3h", ()),
        ("lowest(%s,1,'current')" % LOADS, "-1h", ()),
        ("lowest(%s,3,'avg_zero')" % WEB01, "-1h", ()),
        ("highestAverage(%s,2)" % RATES, "-3h", ()),
        ("highestCurrent(%s,2)" % LOADS, "-1h", ()),
        ("highestMax(%s,1)" % CPU, "-1h", ()),
        ("lowestAverage(%s,2)" % WEB01, "-1h", ()),
        ("lowestCurrent(%s,2)" % RATES, "-1h", ()),
        ("mostDeviant(%s,2)" % RATES, "-3h", ()),
        ("mostDeviant(%s,3)" % WEB01, "-1h", ()),
        ("limit(%s,2)" % RATES, "-1h", ()),
        ("limit(%s,-1)" % RATES, "-1h", ()),
        ("limit(%s,3)" % NOTHING, "-1h", ()),
        ("grep(%s,'alpha|beta')" % RATES, "-1h", ()),
        ("exclude(diff.mid.app.*.*,'rate$')", "-1h", ()),
        ("grep(%s,'x')" % NOTHING, "-1h", ()),
        ("unique(%s,%s,%s)" % (F1, CPU, F1), "-1h", ()),
        ("removeEmptySeries(diff.legacy.*.load)", "-3h", ()),
        ("removeEmptySeries(diff.mid.app.beta.*,0.5)", "-3h", ()),
        ("removeEmptySeries(%s,0.9)" % F3, "-1h", ()),
        ("averageOutsidePercentile(%s,75)" % RATES, "-3h", ()),
        ("averageOutsidePercentile(%s,20)" % CPU, "-1h", ()),
        ("removeBetweenPercentile(%s,30)" % CONSTANTS, "-1h", ()),
        ("removeBetweenPercentile(%s,90)" % CONSTANTS, "-1h", ()),
        ("useSeriesAbove(constantLine(5),1,'5\\.0','%s')" % F1, "-1h", ()),
        ("useSeriesAbove(constantLine(5),10,'5\\.0','%s')" % F1, "-1h", ()),
        # ---- Data filters ----
        ("removeAboveValue(%s,50)" % RATES, "-3h", ()),
        ("removeAboveValue(%s,1e300)" % EDGE, "-30min", ()),
        ("removeBelowValue(%s,30)" % LOADS, "-3h", ()),
        ("removeAbovePercentile(%s,90)" % CPU, "-1h", ()),
        ("removeBelowPercentile(%s,25)" % RATES, "-3h", ()),
        ("removeBelowPercentile(%s,10)" % NOTHING, "-1h", ()),
        ("removeAbovePercentile(diff.legacy.stale.load,50)", "-1h", ()),
        # ---- Sorting ----
        ("sortBy(%s)" % RATES, "-3h", ()),
        ("sortBy(%s,'max',true)" % LOADS, "-3h", ()),
        ("sortBy(%s,'last')" % WEB01, "-1h", ()),
        ("sortByName(diff.*.*.*)", "-1h", ()),
        ("sortByName(%s,true)" % LOADS, "-1h", ()),
        ("sortByName(%s,true,true)" % LOADS, "-1h", ()),
        ("sortByTotal(%s)" % RATES, "-3h", ()),
        ("sortByMaxima(%s)" % CPU, "-1h", ()),
        ("sortByMinima(%s)" % WEB01, "-1h", ()),
        ("sortByMinima(%s)" % NEG, "-1h", ()),
        # ---- Alias ----
        ("alias(%s,'cpu')" % F1, "-1h", ()),
        ("aliasSub(%s,'^diff\\.mid\\.app\\.(\\w+)\\.rate$','\\1')" % RATES, "-1h", ()),
        ('aliasSub(%s,"(^.*$)","\\1 A")' % F1, "-1h", ()),  # what Grafana wraps every target in
        ("aliasSub(%s,'(\\d)','<\\g<1>>')" % LOADS, "-1h", ()),
        ("aliasByNode(%s,3)" % RATES, "-1h", ()),
        ("aliasByNode(%s,2,-1)" % CPU, "-1h", ()),
        ("aliasByNode(movingAverage(%s,3),3)" % RATES, "-1h", ()),
        ("aliasByTags(%s,'name',3)" % RATES, "-1h", ()),
        ("aliasByMetric(%s)" % WEB01, "-1h", ()),
        ("aliasByMetric(movingAverage(%s,2))" % F1, "-1h", ()),
        ("aliasQuery(diff.legacy.host1.load,'host1','host2','%.1f')", "-1h", ()),
        ("aliasQuery(%s,'alpha','beta','%%d beta')" % "diff.mid.app.alpha.rate", "-1h", ()),
        ("legendValue(%s,'avg','max')" % RATES, "-3h", ()),
        ("legendValue(%s,'last','si')" % LOADS, "-1h", ()),
        ("legendValue(%s,'max','total','binary')" % BIG, "-1d", ()),
        ("legendValue(%s,'count','median')" % SPARSE, "-1h", ()),
        ("upper(%s)" % RATES, "-1h", ()),
        ("lower(upper(%s),0,3)" % F1, "-1h", ()),
        ("upper(%s,-1,1)" % LOADS, "-1h", ()),
        # ---- Graph ----
        ("alpha(%s,0.3)" % F1, "-1h", ()),
        ("color(%s,'red')" % RATES, "-1h", ()),
        ("dashed(%s)" % F1, "-1h", ()),
        ("dashed(%s,2)" % RATES, "-1h", ()),
        ("lineWidth(%s,3)" % F1, "-1h", ()),
        ("secondYAxis(%s)" % LOADS, "-1h", ()),
        ("drawAsInfinite(diff.fine.web01.queue.avgzero)", "-1h", ()),
        ("stacked(%s)" % RATES, "-1h", ()),
        ("stacked(%s,'x')" % CPU, "-1h", ()),
        ("stacked(%s)" % MIX, "-1h", ()),
        ("areaBetween(diff.legacy.host{1,2}.load)", "-3h", ()),
        ("threshold(50)", "-1h", ()),
        ("threshold(50,'limit','red')", "-1h", ()),
        ("verticalLine('%s','deploy')" % abs_10m, "-1h", ()),
        ("verticalLine('%s','deploy','blue')" % abs_10m, "-1h", ()),
        ("verticalLine('%s')" % abs_10m, "-1h", ()),  # no label: the name is None (null)
        # ---- Special ----
        ("cactiStyle(%s)" % RATES, "-3h", ()),
        ("cactiStyle(%s,'si')" % LOADS, "-1h", ()),
        ("cactiStyle(%s,'binary','B')" % BIG, "-1d", ()),
        ("cactiStyle(%s,units='req')" % SPARSE, "-1h", ()),
        ("changed(diff.fine.web01.requests.count)", "-1h", ()),
        ("changed(%s)" % SPARSE, "-3h", ()),
        ("cumulative(%s)" % RATES, "-1h", ()),
        ("cumulative(%s)" % F1, "-1h", (("maxDataPoints", "20"),)),
        ("fallbackSeries(%s,%s)" % (NOTHING, F1), "-1h", ()),
        ("fallbackSeries(%s,%s)" % (F1, RATES), "-1h", ()),
        ("fallbackSeries(%s,constantLine(0))" % NOTHING, "-1h", ()),
        ("identity('x')", "-1h", ()),
        ("changed(randomWalk('rw'))", "-1h", ()),
        ("aggregateLine(randomWalkFunction('rw',30),'count')", "-1h", ()),
        ("sin('s')", "-1h", ()),
        ("sin('s',5,30)", "-10min", ()),
        ("sinFunction('s')", "-20min", ()),
        ("time('t')", "-1h", ()),
        ("timeFunction('t',300)", "-3h", ()),
        ("substr(%s,2)" % RATES, "-1h", ()),
        ("substr(%s,1,3)" % RATES, "-1h", ()),
        ("substr(movingAverage(%s,2),1)" % F1, "-1h", ()),
        # ---- a negative window: the request shifts forward, the windows slice from the end
        ("movingAverage(%s,-5)" % F1, "-1h", ()),
        ("movingSum(%s,-3)" % RATES, "-3h", ()),
        ("movingWindow(%s,-2,'max',-100)" % CPU, "-1h", ()),  # a negative xFilesFactor lets windows through
        # ---- a float where an integer is declared: graphite-web 1.1.10 does not enforce
        # parameter types (ENFORCE_INPUT_VALIDATION is off) and uses the value as written
        ("dashed(%s,2.5)" % F1, "-1h", ()),
        ("dashed(%s,3.0)" % RATES, "-1h", ()),
        ("highest(%s,2.7)" % CPU, "-1h", ()),  # int(n)
        ("highest(%s,1.5,'max')" % RATES, "-3h", ()),
        ("lowestAverage(%s,1.9)" % RATES, "-3h", ()),
        ("highestCurrent(%s,-1.5)" % LOADS, "-1h", ()),
        ("holtWintersConfidenceBands(diff.legacy.host1.load,1.5)", "-3h", ()),
        ("sin('s',2.5,30)", "-10min", ()),
        ("sin('s',1,30.0)", "-10min", ()),  # an integral step works as the integer
        ("timeFunction('t',300.0)", "-3h", ()),
        ("substr(%s,1.9,3.2)" % RATES, "-1h", ()),
        ("movingAverage(%s,2.5)" % F1, "-1h", ()),
        ("events('*')", "-5min", ()),
        ("events('deploy','x')", "-2min", ()),
    ]


# Requests both servers must refuse (graphite-web with a server error, sumi with a 400).
ERRORS_BOTH = [
    ("nPercentile(%s,0)" % F1, "-1h"),  # graphite-web: AssertionError
    ("stdev(%s,-2)" % F1, "-1h"),  # graphite-web: IndexError
    ("areaBetween(%s)" % CPU, "-1h"),  # three series; graphite-web: AssertionError
    ("exclude(%s,'(')" % F1, "-1h"),  # not a regular expression
    # a float where an integer is declared, used where Python needs an integer
    ("limit(%s,2.5)" % CPU, "-1h"),  # a slice index: TypeError
    ("limit(%s,2.0)" % NOTHING, "-1h"),  # even of an empty list
    ("mostDeviant(%s,1.0)" % CPU, "-1h"),  # a slice index: TypeError
    ("toUpperCase(%s,1.0)" % F1, "-1h"),  # an isinstance(i, int) assertion
    ("stdev(%s,5.0)" % F1, "-1h"),  # a list index: TypeError
]

# Left out of the exact comparison: graphite-web 1.1.10 fails (or reads the wall
# clock) and sumi answers sensibly. Each reason names the graphite-web failure.
EXCLUDED = [
    ("useSeriesAbove(%s,50,'cpu','system')" % CPU,
     "graphite-web's max(series) compares None with a float (TypeError under Python 3)"),
    ("removeBetweenPercentile(%s,30)" % RATES,
     "graphite-web compares None with the percentiles (TypeError under Python 3)"),
    ("averageOutsidePercentile(diff.legacy.*.load,75)",
     "an all-null series has no average: graphite-web compares None (TypeError)"),
    ("holtWintersAberration(diff.mid.app.alpha.rate)",
     "the 7-day bootstrap reads the 5-minute archive: graphite-web indexes past its bands (IndexError)"),
    ("holtWintersAberration(diff.legacy.host1.load)",
     "the 7-day bootstrap is clamped by the 1-day retention, leaving no band points: "
     "graphite-web indexes past their end (IndexError)"),
    ("holtWintersConfidenceArea(%s)" % RATES,
     "several series: graphite-web's areaBetween asserts exactly two bands"),
    ("stdev(%s,5)" % EDGE, "squaring 1e308 overflows: graphite-web raises OverflowError"),
    ("mostDeviant(%s,1)" % EDGE, "squaring 1e308 overflows: graphite-web raises OverflowError"),
    ("linearRegression(x,'-2h')", "graphite-web reads relative source times against the wall clock"),
    ("legendValue(x)", "no value type: graphite-web indexes an empty tuple (IndexError)"),
]


def queries(now):
    out = []
    for target, rng, extra in targets(now):
        out.append(render_json([target], now, [("from", rng)] + list(extra)))
    for target, rng in ERRORS_BOTH:
        out.append(render_json([target], now, [("from", rng)], error=True))
    # several targets: stacked() totals run across them
    out.append(render_json(["stacked(%s)" % LOADS, "stacked(%s)" % RATES], now, [("from", "-1h")]))
    # ranges ending in the past, and a long one where series differ in length
    out.append(render_json(["movingAverage(%s,'20min')" % RATES, "nPercentile(%s,75)" % LOADS],
                           now, [("from", "-5h"), ("until", "-2h")]))
    out.append(render_json(["highest(diff.{mid.app.alpha.rate,legacy.host1.load},2,'count')"],
                           now, [("from", "-30h")]))
    return out
