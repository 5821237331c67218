"""The two carbon config files of the test, and carbon 1.1.10's rules for applying them.

Both sides read the same files: sumi through ``--storage-schemas`` and
``--storage-aggregation``, the whisper side through :func:`series_config`, which does what
carbon's writer does when it creates a ``.wsp`` file (carbon/storage.py, writer.py):
sections in file order, the first whose ``pattern`` regex *searches* the metric name wins;
no matching schema means ``60:10080``; no matching aggregation section (or a section
without one of the keys) leaves whisper's defaults, average and 0.5.
"""

import configparser
import re

import whisper

# Several schemas: sub-minute steps with three archives, a two-archive one, the legacy
# `seconds:points` syntax with one archive, unit words with spaces after commas; names
# that match none fall back to carbon's 60:10080.
STORAGE_SCHEMAS = r"""
# sumi graphite-diff: the same file is given to sumi and used for the whisper files
[fine]
pattern = ^diff\.fine\.
retentions = 10s:1h,1m:1d,10m:7d

[mid]
pattern = ^diff\.mid\.
retentions = 1m:6h,5m:2d

[legacy]
pattern = ^diff\.legacy\.
retentions = 60:1440

[wide]
pattern = ^diff\.wide\.
retentions = 30s:2h, 5min:1d, 1h:30d
"""

# Every whisper method, xFilesFactor 0, 0.1, 0.3, 0.5 and 1 (0.1 and 0.3 are not exact
# in the float32 whisper keeps, which decides rollups at exactly 1/10 and 3/10), sections
# setting only one of the two keys, and names matching nothing (whisper's defaults).
STORAGE_AGGREGATION = r"""
[counts]
pattern = \.(count|sum)$
xFilesFactor = 0
aggregationMethod = sum

[min]
pattern = \.min$
xFilesFactor = 0.5
aggregationMethod = min

[max_strict]
pattern = \.max$
xFilesFactor = 1
aggregationMethod = max

[last]
pattern = \.last$
xFilesFactor = 0.5
aggregationMethod = last

[avg_zero]
pattern = \.avgzero$
xFilesFactor = 0
aggregationMethod = avg_zero

[absmax]
pattern = \.absmax$
xFilesFactor = 0
aggregationMethod = absmax

[absmin]
pattern = \.absmin$
xFilesFactor = 0.5
aggregationMethod = absmin

[method_only]
pattern = \.lastonly$
aggregationMethod = last

[xff_only]
pattern = \.sparse0$
xFilesFactor = 0

[strict_average]
pattern = \.strict$
xFilesFactor = 1
aggregationMethod = average

[tenth]
pattern = \.xff01$
xFilesFactor = 0.1
aggregationMethod = sum

[three_tenths]
pattern = \.xff03$
xFilesFactor = 0.3
aggregationMethod = average

[diff_default]
pattern = ^diff\.
xFilesFactor = 0.5
aggregationMethod = average
"""

# carbon/storage.py: 7 days of minutely data for a metric no schema matches.
CARBON_DEFAULT_ARCHIVES = [(60, 60 * 24 * 7)]


class ConfigError(Exception):
    """A config file carbon would reject (it exits on a bad retention)."""


def _sections(path):
    # carbon reads both files with its OrderedConfigParser, a ConfigParser that keeps
    # the order of the sections as written.
    parser = configparser.ConfigParser()
    if not parser.read(path):
        raise ConfigError("cannot read %s" % path)
    return [(name, dict(parser.items(name))) for name in parser.sections()]


def load_schemas(path):
    """[(regex, archives)] in file order; archives as whisper's (step, points) list."""
    rules = []
    for name, options in _sections(path):
        pattern = options.get("pattern")
        retentions = options.get("retentions")
        if not pattern or retentions is None:
            continue
        try:
            archives = [whisper.parseRetentionDef(r) for r in retentions.split(",")]
            whisper.validateArchiveList(archives)
        except (ValueError, whisper.InvalidConfiguration) as e:
            raise ConfigError("%s: section [%s]: %s" % (path, name, e))
        rules.append((re.compile(pattern), archives))
    return rules


def load_aggregation(path):
    """[(regex, xff or None, method or None)] in file order."""
    rules = []
    for name, options in _sections(path):
        pattern = options.get("pattern")
        if not pattern:
            continue
        xff = options.get("xfilesfactor")
        method = options.get("aggregationmethod")
        if xff is not None:
            xff = float(xff)
            if not 0 <= xff <= 1:
                raise ConfigError("%s: section [%s]: xFilesFactor %s" % (path, name, xff))
        if method is not None and method not in whisper.aggregationMethods:
            raise ConfigError("%s: section [%s]: method %s" % (path, name, method))
        rules.append((re.compile(pattern), xff, method))
    return rules


def series_config(name, schemas, aggregation):
    """(archives, xff, method) carbon gives a new metric; xff/method None = whisper's default."""
    archives = CARBON_DEFAULT_ARCHIVES
    for regex, candidate in schemas:
        if regex.search(name):
            archives = candidate
            break
    xff, method = None, None
    for regex, rule_xff, rule_method in aggregation:
        if regex.search(name):
            xff, method = rule_xff, rule_method
            break
    return list(archives), xff, method
