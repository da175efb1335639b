#!/bin/sh
# Before and after the S3 breadth work (issue 10: versioning, tagging, CORS,
# lifecycle, ACLs, POST uploads): the mixed workload on the build before it
# (b27b15d) and on this one, interleaved rounds (A B A B …), both fresh and
# at default durability. Run as OUT=run-N ./run.sh from this directory with
#   git worktree add /tmp/before b27b15d && (cd /tmp/before && go build -o /tmp/coffer-before ./cmd/coffer)
#   go build -o /tmp/coffer-after ./cmd/coffer
set -eu
OUT=${OUT:?set OUT to the results directory}
BEFORE=${BEFORE:-/tmp/coffer-before}
AFTER=${AFTER:-/tmp/coffer-after}
DATA=/var/tmp/coffer-breadth-ab
rm -rf "$DATA" && mkdir -p "$DATA/before" "$DATA/after"
export COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00
"$BEFORE" serve --storage-path "$DATA/before" --address 127.0.0.1:6951 --console-address 127.0.0.1:6952 > "$DATA/before.log" 2>&1 &
B=$!
"$AFTER" serve --storage-path "$DATA/after" --address 127.0.0.1:6953 --console-address 127.0.0.1:6954 > "$DATA/after.log" 2>&1 &
A=$!
trap 'kill $A $B 2>/dev/null || true' EXIT
sleep 3
mkdir -p "$OUT"
uptime > "$OUT/load.txt"
"$AFTER" bench mixed --target before=http://127.0.0.1:6951 --target after=http://127.0.0.1:6953 \
  --access-key benchak --secret-key benchsecretkey00 --baseline before \
  --size 100KiB --workers 16 --objects 1000 --duration 60s --rounds 3 \
  --gobench --out "$OUT" > "$OUT/output.txt" 2>&1
uptime >> "$OUT/load.txt"
for p in $B $A; do
  printf '%s %s\n' "$p" "$(grep -E 'VmHWM|VmRSS' /proc/$p/status | tr -s ' \n' ' ')"
done > "$OUT/rss.txt"
