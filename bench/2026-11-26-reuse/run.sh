#!/bin/sh
# Block-file reuse A/B (issue 13, the PUT tail): two Coffer builds side by
# side, both fresh and at default durability, the same generator, rounds
# interleaved (A B A B …). A = main before reuse, B = with blob.fs.reuse
# (its default). Run as OUT=run-N ./run.sh from this directory. Any two
# builds work (bench/2026-11-26-spares uses it so): the reports call A
# $NAME_A and B $NAME_B ("before" and "reuse" unless set; set them for any
# other comparison, e.g. NAME_A=main NAME_B=overlap). GEN is the binary that runs the
# generator (default B), so that a wrapper script setting an environment
# variable for one server does not change the generator.
set -eu
OUT=${OUT:?set OUT to the results directory}
A=${A:-/tmp/cf-base}     # git worktree add --detach /tmp/wt ec207b8 && CGO_ENABLED=0 go build -o /tmp/cf-base ./cmd/coffer
B=${B:-/tmp/cf-reuse}    # CGO_ENABLED=0 go build -o /tmp/cf-reuse ./cmd/coffer
DATA=${DATA:-/var/tmp/coffer-reuse-ab}
DURATION=${DURATION:-60s}
NAME_A=${NAME_A:-before}
NAME_B=${NAME_B:-reuse}
rm -rf "$DATA" && mkdir -p "$DATA/a" "$DATA/b" "$OUT"

start() { # name binary port
  COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00 \
    "$2" serve --storage-path "$DATA/$1" --address 127.0.0.1:$3 \
    --console-address 127.0.0.1:$(($3 + 2)) > "$DATA/$1.log" 2>&1 &
}
start a "$A" 6951; A_PID=$!
start b "$B" 6961; B_PID=$!
# The servers stop and their data goes at exit (put-10MiB leaves ~15 GB each).
trap 'kill $A_PID $B_PID 2>/dev/null || true; wait 2>/dev/null; cp "$DATA"/*.log "$OUT"/ 2>/dev/null; rm -rf "$DATA"' EXIT
sleep 3

cat > "$DATA/targets.toml" <<TOML
[[target]]
name = "$NAME_A"
url = "http://127.0.0.1:6951"
access_key = "benchak"
secret_key = "benchsecretkey00"

[[target]]
name = "$NAME_B"
url = "http://127.0.0.1:6961"
access_key = "benchak"
secret_key = "benchsecretkey00"
TOML

rss() {
  for p in $A_PID $B_PID; do
    printf '%s %s\n' "$p" "$(grep -E 'VmHWM|VmRSS' /proc/$p/status | tr -s ' \n' ' ')"
  done
}
mkdir -p "$OUT/mixed" "$OUT/cases"
uptime > "$OUT/load.txt"
"${GEN:-$B}" bench mixed --targets "$DATA/targets.toml" --baseline "$NAME_A" --payload streaming \
  --size 100KiB --workers 16 --objects 1000 --duration "$DURATION" --rounds ${ROUNDS:-3} \
  --gobench --out "$OUT/mixed" > "$OUT/mixed/output.txt" 2>&1
uptime >> "$OUT/load.txt"
rss > "$OUT/mixed/rss.txt"
"${GEN:-$B}" bench cases --targets "$DATA/targets.toml" --baseline "$NAME_A" --payload streaming \
  --cases put-10MiB --workers 8 --duration 30s --rounds ${ROUNDS:-3} \
  --gobench --out "$OUT/cases" > "$OUT/cases/output.txt" 2>&1
uptime >> "$OUT/load.txt"
rss > "$OUT/cases/rss.txt"
curl -s http://127.0.0.1:6963/metrics 2>/dev/null | grep '^coffer_blob_reuse' > "$OUT/reuse-metrics.txt" || true
