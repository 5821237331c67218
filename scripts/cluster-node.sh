#!/usr/bin/env bash
# scripts/cluster-node.sh DIR start|stop|kill|wait N
#
# Starts, stops (SIGTERM, waits for the exit) or kills (SIGKILL, waits for the exit)
# storage node N (1..3; 0 is the ingest node) of the cluster that scripts/cluster-up.sh
# started in DIR, and keeps NODE<N>_PID (INGEST_PID for 0) in DIR/cluster.env current.
# `start` returns once the node answers /health; `wait` waits for that. A node starts
# with the SUMI_SERVE_ARGS that cluster-up.sh was given (kept in cluster.env; before
# session 10 a restarted node lost them, and created new series with the built-in
# schema), or with $SUMI_SERVE_ARGS when it is set.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"

[ $# -ge 3 ] || die "usage: cluster-node.sh DIR start|stop|kill|wait N"
dir=$1 cmd=$2 n=$3 nowait=${4:-}
env="$dir/cluster.env"
[ -f "$env" ] || die "$env not found: start the cluster with cluster-up.sh first"
nd="$dir/node$n"
[ -f "$nd/sumi.toml" ] || die "no node $n in $dir"
if [ "$n" = 0 ]; then key=INGEST hkey=INGEST_HTTP; else key=NODE$n hkey=NODE${n}_HTTP; fi
get() { grep "^$1=" "$env" | cut -d= -f2- || true; }
pid=$(get "${key}_PID")
http=$(get "$hkey")
sumi_bin=$(get SUMI_BIN)
# the words cluster-up.sh was given, unless SUMI_SERVE_ARGS is set here
serve_args=${SUMI_SERVE_ARGS-$(get SUMI_SERVE_ARGS)}
timeout=${SUMI_START_TIMEOUT:-90}

alive() { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

healthy() {
  python3 - "$http" <<'PY' 2>/dev/null
import sys, urllib.request
try:
    with urllib.request.urlopen("http://%s/health" % sys.argv[1], timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

wait_healthy() {
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    alive || die "node $n exited while starting; its log: $nd/sumi.log
$(tail -n 20 "$nd/sumi.log")"
    healthy && return 0
    sleep 0.2
  done
  die "node $n did not answer /health within ${timeout}s; its log: $nd/sumi.log"
}

case $cmd in
start)
  alive && die "node $n is running (pid $pid)"
  # shellcheck disable=SC2086
  setsid "$sumi_bin" serve --config "$nd/sumi.toml" $serve_args \
    >>"$nd/sumi.log" 2>&1 </dev/null &
  pid=$!
  env_set "$env" "${key}_PID" "$pid"
  [ "$nowait" = --no-wait ] || wait_healthy
  ;;
wait)
  wait_healthy
  ;;
stop)
  stop_pid "$pid" TERM 60
  ;;
kill)
  stop_pid "$pid" KILL 30
  ;;
*)
  die "unknown command $cmd (start, stop, kill, wait)"
  ;;
esac
