#!/usr/bin/env bash
# scripts/kafka-node.sh DIR start|stop|kill|wait N
#
# Starts, stops (SIGTERM, waits for the exit), kills (SIGKILL, waits for the exit) or
# waits for broker N of the Kafka that scripts/kafka-up.sh started in DIR, and keeps
# KAFKA<N>_PID in DIR/kafka.env current. `start` returns once the broker has started
# and accepts connections (a restart after kill -9 takes a few seconds more while the
# controllers expire the old registration).
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"

[ $# -ge 3 ] || die "usage: kafka-node.sh DIR start|stop|kill|wait N"
dir=$1 cmd=$2 n=$3 nowait=${4:-}
env="$dir/kafka.env"
[ -f "$env" ] || die "$env not found: start Kafka with kafka-up.sh first"
b="$dir/kafka$n"
[ -f "$b/run.sh" ] || die "no broker $n in $dir"
addr=$(grep "^KAFKA${n}_ADDR=" "$env" | cut -d= -f2)
pid=$(grep "^KAFKA${n}_PID=" "$env" | cut -d= -f2 || true)
timeout=${KAFKA_START_TIMEOUT:-120}

alive() { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

wait_started() {
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    alive || die "broker $n exited while starting; its log: $b/kafka.log
$(tail -n 20 "$b/kafka.log")"
    if grep -q "Kafka Server started" "$b/kafka.log" 2>/dev/null &&
      wait_port "$addr" 1; then
      return 0
    fi
    sleep 0.2
  done
  die "broker $n did not start within ${timeout}s; its log: $b/kafka.log"
}

case $cmd in
start)
  alive && die "broker $n is running (pid $pid)"
  # a fresh log per start, so that waiting looks at this start's lines
  [ ! -f "$b/kafka.log" ] || mv "$b/kafka.log" "$b/kafka.log.$(date +%s%N)"
  setsid "$b/run.sh" >"$b/kafka.log" 2>&1 </dev/null &
  pid=$!
  env_set "$env" "KAFKA${n}_PID" "$pid"
  [ "$nowait" = --no-wait ] || wait_started
  ;;
wait)
  wait_started
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
