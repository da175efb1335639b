#!/bin/sh
# GC pacing (memlimit.Pace) before/after: two static builds of Coffer side
# by side under the mixed load, interleaved rounds, both fresh, default
# settings. Run as OUT=run-N ./run.sh from this directory.
set -eu
OUT=${OUT:?set OUT to the results directory}
BEFORE=${BEFORE:-/tmp/coffer-prepacer} # main at bb42af6, CGO_ENABLED=0
AFTER=${AFTER:-/tmp/coffer-bench}      # main with memlimit.Pace, CGO_ENABLED=0
DATA=${DATA:-/var/tmp/coffer-gc-pacing}
rm -rf "$DATA" && mkdir -p "$DATA/before" "$DATA/after" "$OUT"
export COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00
"$BEFORE" serve --storage-path "$DATA/before" --address 127.0.0.1:6961 --console-address 127.0.0.1:6962 > "$DATA/before.log" 2>&1 &
B=$!
"$AFTER" serve --storage-path "$DATA/after" --address 127.0.0.1:6963 --console-address 127.0.0.1:6964 > "$DATA/after.log" 2>&1 &
A=$!
trap 'kill $B $A 2>/dev/null || true' EXIT
sleep 3
cat > "$DATA/targets.toml" <<'TOML'
[[target]]
name = "before"
url = "http://127.0.0.1:6961"
access_key = "benchak"
secret_key = "benchsecretkey00"

[[target]]
name = "after"
url = "http://127.0.0.1:6963"
access_key = "benchak"
secret_key = "benchsecretkey00"
TOML
uptime > "$OUT/load.txt"
"$AFTER" bench mixed --targets "$DATA/targets.toml" --baseline before \
  --workers 16 --objects 1000 --duration ${DURATION:-120s} --rounds ${ROUNDS:-4} \
  --gobench --out "$OUT" > "$OUT/output.txt" 2>&1
uptime >> "$OUT/load.txt"
for p in $B $A; do
  printf "%s %s\n" "$p" "$(grep -E 'VmHWM|VmRSS' /proc/$p/status | tr -s ' \n' ' ')"
done > "$OUT/rss.txt"
