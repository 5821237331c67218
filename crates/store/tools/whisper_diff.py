"""Differential test of sumi's store against whisper.py (see examples/whisper_diff.rs).

usage: whisper_diff.py <whisper_diff binary> safe|unsafe <runs>

`safe` generates only writes where whisper and sumi agree by design (see the crate doc,
"Whisper semantics, and where they differ"); every fetch must then match bit for bit.
`unsafe` drops that filter, to see how often the documented retention-edge differences
show up. Set WHISPER_PATH to the site-packages holding whisper 1.1.10.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get('WHISPER_PATH', '/tmp/gw/venv/lib/python3.11/site-packages'))
import whisper  # noqa: E402

def bits(v): return struct.pack('>d', v).hex()

def run(seed, filt, binpath, retention="10s:2m,1m:10m,5m:1h", nops=60):
    rnd = random.Random(seed)
    methods = ['average','sum','last','max','min','avg_zero','absmax','absmin']
    method = rnd.choice(methods); xff = rnd.choice([0.0, 0.3, 0.5, 1.0])
    arch = [whisper.parseRetentionDef(a) for a in retention.split(',')]
    tmp = tempfile.mkdtemp()
    names = ['m.a', 'm.b']
    paths = {n: os.path.join(tmp, n + '.wsp') for n in names}
    for n in names: whisper.create(paths[n], arch, xFilesFactor=xff, aggregationMethod=method)
    rets = [s*p for s,p in arch]
    maxret = max(rets)
    now = 1800000000
    cmds = ["conf %s %s %s %s" % (retention, method, xff, os.path.join(tmp, 'sumi'))]
    expect = []
    written = set()
    def level_for(age):
        for i, r in enumerate(rets):
            if r >= age: return i
    def safe(ts, now):
        age = now - ts
        if age < 0 or age >= maxret: return False
        k = level_for(age)
        x = ts - ts % arch[k][0]
        if x + rets[k] <= now: return False
        for j in range(k, len(arch) - 1):
            s = ts - ts % arch[j+1][0]
            if s + rets[j] <= now: return False
        return True
    for _ in range(nops):
        op = rnd.random()
        if op < 0.55:
            n = rnd.choice(names)
            age = rnd.choice([rnd.randrange(0, 3600), rnd.randrange(0, 300)])
            ts = now - age
            if filt and not safe(ts, now): continue
            if not filt and (age < 0 or age >= maxret): continue
            v = rnd.randrange(-50, 50) / 4.0
            whisper.update_many(paths[n], [(ts, v)], now=now)
            written.add(n)
            cmds.append("w %s %d %s %d" % (n, ts, bits(v), now))
        elif op < 0.7:
            now += rnd.randrange(1, 400)
        elif op < 0.75:
            cmds.append("m")
        elif op < 0.78:
            cmds.append("r")
        else:
            n = rnd.choice(names)
            back = rnd.randrange(-20, 4000); ln = rnd.randrange(-10, 4000)
            frm, until = now - back, now - back + ln
            try:
                r = whisper.fetch(paths[n], frm, until, now=now)
            except whisper.InvalidTimeInterval:
                r = None
            if n not in written:
                continue
            cmds.append("f %s %d %d %d" % (n, frm, until, now))
            if r is None: expect.append("None")
            else:
                (s, e, st), vals = r
                expect.append("%d %d %d %s" % (s, e, st, ",".join("N" if x is None else bits(x) for x in vals)))
    out = subprocess.run([binpath], input="\n".join(cmds) + "\n", capture_output=True, text=True)
    if out.returncode != 0:
        print("sumi failed", out.stderr[-2000:]); return False
    got = out.stdout.strip().split("\n") if out.stdout.strip() else []
    ok = got == expect
    if not ok:
        for i, (g, e) in enumerate(zip(got, expect)):
            if g != e:
                print("seed", seed, method, xff, "mismatch at fetch", i)
                print(" sumi   ", g[:300]); print(" whisper", e[:300])
                break
    return ok

if __name__ == '__main__':
    binpath = sys.argv[1]; filt = sys.argv[2] == 'safe'; n = int(sys.argv[3])
    bad = 0
    for seed in range(n):
        if not run(seed, filt, binpath): bad += 1
    print("runs", n, "mismatching", bad)
