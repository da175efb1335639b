#!/bin/sh
# Soak: one fresh static server under a steady mixed load (PUT and
# DELETE weighted alike, so the number of objects stays near OBJECTS and
# what grows is what leaks) for DURATION in ROUNDS rounds, sampling RSS
# and the data directory's size every 15 s, then 90 s idle. Run as
# OUT=run-N DURATION=15m ROUNDS=15 ./run.sh from this directory.
set -eu
OUT=${OUT:?}
BIN=${BIN:-/tmp/coffer-bench}   # CGO_ENABLED=0 go build -o /tmp/coffer-bench ./cmd/coffer
DATA=${DATA:-/var/tmp/coffer-soak}
rm -rf "$DATA" && mkdir -p "$DATA" "$OUT"
COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00 \
  "$BIN" serve --storage-path "$DATA/d" --address 127.0.0.1:6971 --console-address 127.0.0.1:6973 > "$OUT/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; kill $SAMPLER 2>/dev/null; wait 2>/dev/null; rm -rf "$DATA"' EXIT
sleep 3
( while :; do
    printf '%s %s %s %s %s\n' "$(date +%T)" \
      "$(awk '/VmRSS/{print $2}' /proc/$PID/status)" "$(awk '/VmHWM/{print $2}' /proc/$PID/status)" \
      "$(du -sk "$DATA/d/blobs" 2>/dev/null | cut -f1)" "$(du -sk "$DATA/d/meta" 2>/dev/null | cut -f1)"
    sleep 15
  done ) > "$OUT/samples.txt" &
SAMPLER=$!
uptime > "$OUT/load.txt"
COFFER_ACCESS_KEY=benchak COFFER_SECRET_KEY=benchsecretkey00 "$BIN" bench mixed --target soak=http://127.0.0.1:6971 \
  --size ${SIZE:-100KiB} --put 10 --delete 10 --get 50 --stat 30 --workers 16 --objects ${OBJECTS:-5000} --duration ${DURATION:-20m} --rounds ${ROUNDS:-20} \
  --out "$OUT/mixed" > "$OUT/output.txt" 2>&1
uptime >> "$OUT/load.txt"
sleep 90   # what the server gives back once the load stops (reuse idle, GC)
printf 'after 90 s idle: ' >> "$OUT/samples.txt"
printf '%s %s %s %s %s\n' "$(date +%T)" \
  "$(awk '/VmRSS/{print $2}' /proc/$PID/status)" "$(awk '/VmHWM/{print $2}' /proc/$PID/status)" \
  "$(du -sk "$DATA/d/blobs" 2>/dev/null | cut -f1)" "$(du -sk "$DATA/d/meta" 2>/dev/null | cut -f1)" >> "$OUT/samples.txt"
curl -s http://127.0.0.1:6973/metrics > "$OUT/metrics.txt" || true
