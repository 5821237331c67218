"""The differential test of sumi against graphite-web 1.1.10 + whisper 1.1.10.

Modules, in the order a run uses them:

- ``conf``: the storage-schemas.conf / storage-aggregation.conf both sides read, and
  carbon's rules for turning them into a whisper file's archives, method and xff.
- ``gen``: the series and points, generated relative to the real current time.
- ``wsp``: the whisper side (carbon's file layout, ``whisper.update`` per point).
- ``procs``: free ports, child processes with bounded waits, HTTP GET.
- ``servers``: starting sumi and graphite-web, feeding sumi over carbon plaintext.
- ``queries``: the /render and /metrics/* requests asked of both servers.
- ``compare``: parsing each answer and comparing them value by value.
"""
