#!/bin/sh
# Peak RSS of static builds under issue 13's mixed load, interleaved A/B
# pairs, a fresh server (defaults) and data directory for every run.
# Usage: OUT=dir BUILDS="base=/tmp/rss-base mt8=/tmp/rss-mt8" PAIRS=3 ./run.sh
# (every round runs each build once, in the order given).
# Per run it records VmHWM/VmRSS, smaps_rollup, the server's CPU time
# (utime+stime from /proc/PID/stat, whole life of the server: start,
# the 1000 prepared objects, the measured 60 s and the cleanup) and the
# bench report; summary.tsv has one line per run.
set -eu
OUT=${OUT:?set OUT to the results directory}
BUILDS=${BUILDS:?name=binary ...}
PAIRS=${PAIRS:-3}; DURATION=${DURATION:-60s}; SIZE=${SIZE:-100KiB}
PROFILE=${PROFILE:-}  # set: server with --pprof, bench with --profile (CPU and allocation profiles)
DATA=${DATA:-/var/tmp/coffer-rss}
PORT=${PORT:-6971}
mkdir -p "$OUT"
export COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00
TCK=$(getconf CLK_TCK)
cputicks() { awk '{print $14+$15}' /proc/$1/stat; }
one() { # name binary run-dir
  rm -rf "$DATA" && mkdir -p "$DATA" "$3"
  PP=""; BP=""
  if [ -n "$PROFILE" ]; then
    PP="--pprof --pprof-port $((PORT+4))"; BP="--profile --pprof http://127.0.0.1:$((PORT+4))"
  fi
  "$2" serve --storage-path "$DATA" --address 127.0.0.1:$PORT \
    --console-address 127.0.0.1:$((PORT+1)) $PP > "$3/server.log" 2>&1 &
  S=$!
  sleep 3
  uptime > "$3/load.txt"
  timeout 300 "$2" bench mixed --target "$1=http://127.0.0.1:$PORT" \
    --access-key benchak --secret-key benchsecretkey00 --payload streaming \
    --size "$SIZE" --workers 16 --objects 1000 --duration "$DURATION" \
    --gobench $BP --out "$3" > "$3/output.txt" 2>&1 || echo "bench failed" >> "$3/output.txt"
  uptime >> "$3/load.txt"
  T=$(cputicks $S)
  grep -E 'VmHWM|VmRSS' /proc/$S/status > "$3/rss.txt"
  cat /proc/$S/smaps_rollup > "$3/smaps_rollup.txt"
  cat /proc/$S/smaps > "$3/smaps.txt"
  kill $S; wait $S || true
  HWM=$(awk '/VmHWM/{print $2}' "$3/rss.txt")
  OPS=$(python3 -c "import json;d=json.load(open('$3/results.json'));print(sum(o['ops'] for o in d['targets'][0]['ops']), round(d['targets'][0]['elapsed_seconds'],1))")
  printf '%s\t%s\t%.1f\t%s\t%s\t%s\n' "$1" "$(basename $3)" "$(echo "$HWM/1024" | bc -l)" "$OPS" "$T" "$(awk '{print $1}' /proc/loadavg)" | tee -a "$OUT/summary.tsv"
}
for i in $(seq "$PAIRS"); do
  for b in $BUILDS; do
    one "${b%%=*}" "${b#*=}" "$OUT/round$i-${b%%=*}"
  done
done
# columns: build run peakMiB ops elapsed cpu_ticks(1/$TCK s) load1
