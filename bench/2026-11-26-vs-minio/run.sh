#!/bin/sh
# Coffer vs MinIO on one machine (issue 13's table): the mixed workload and
# the 10 MiB cases, interleaved rounds (A B A B …), both servers fresh and
# at their default durability, every upload sent as warp sends it over HTTP
# (--payload streaming: aws-chunked with signed chunks, coffer bench's
# default). Run as OUT=run-N ./run.sh from this directory.
set -eu
OUT=${OUT:?set OUT to the results directory}
COFFER=${COFFER:-/tmp/coffer-bench}   # CGO_ENABLED=0 go build -o /tmp/coffer-bench ./cmd/coffer
MINIO=${MINIO:-/tmp/peers/minio}      # GOFLAGS=-mod=mod GOBIN=/tmp/peers go install github.com/minio/minio@latest
DATA=${DATA:-/var/tmp/coffer-vs-minio}
rm -rf "$DATA" && mkdir -p "$DATA/coffer" "$DATA/minio" "$OUT"

# Coffer: defaults (--fsync: blob files and their directories fsynced before
# the metadata commit, the Pebble WAL synced on every commit with group
# commit; 32 KiB inline threshold).
COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00 \
  "$COFFER" serve --storage-path "$DATA/coffer" --address 127.0.0.1:6941 \
  --console-address 127.0.0.1:6943 \
  > "$DATA/coffer.log" 2>&1 &
COFFER_PID=$!

# MinIO: single node, single drive, default durability.
MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin-secret MINIO_BROWSER=off MINIO_UPDATE=off \
  "$MINIO" server "$DATA/minio" --address 127.0.0.1:9100 --console-address 127.0.0.1:9101 \
  > "$DATA/minio.log" 2>&1 &
MINIO_PID=$!
# The servers stop and their data goes at exit (put-10MiB leaves ~15 GB each).
trap 'kill $COFFER_PID $MINIO_PID 2>/dev/null || true; wait 2>/dev/null; cp "$DATA"/*.log "$OUT"/ 2>/dev/null; rm -rf "$DATA"' EXIT
sleep 5

cat > "$DATA/targets.toml" <<'TOML'
[[target]]
name = "coffer"
url = "http://127.0.0.1:6941"
access_key = "benchak"
secret_key = "benchsecretkey00"

[[target]]
name = "minio"
url = "http://127.0.0.1:9100"
access_key = "minioadmin"
secret_key = "minioadmin-secret"
TOML

rss() {
  for p in $COFFER_PID $MINIO_PID; do
    printf '%s %s\n' "$(cat /proc/$p/comm)" "$(grep -E 'VmHWM|VmRSS' /proc/$p/status | tr -s ' \n' ' ')"
  done
}

mkdir -p "$OUT/mixed" "$OUT/cases"
"$COFFER" version > "$OUT/versions.txt"; "$MINIO" --version | head -n 1 >> "$OUT/versions.txt"
"$COFFER" bench sys --dir "$DATA" > "$OUT/sys.md"
uptime > "$OUT/load.txt"
"$COFFER" bench mixed --targets "$DATA/targets.toml" --baseline minio --payload streaming \
  --size 100KiB --workers 16 --objects 1000 --duration 60s --rounds ${ROUNDS:-3} \
  --gobench --out "$OUT/mixed" > "$OUT/mixed/output.txt" 2>&1
uptime >> "$OUT/load.txt"
rss > "$OUT/mixed/rss.txt"
"$COFFER" bench cases --targets "$DATA/targets.toml" --baseline minio --payload streaming \
  --cases put-10MiB,get-10MiB --workers 8 --duration 30s --rounds ${ROUNDS:-3} --settle 20s \
  --gobench --out "$OUT/cases" > "$OUT/cases/output.txt" 2>&1
uptime >> "$OUT/load.txt"
rss > "$OUT/cases/rss.txt"
"$COFFER" bench sys --dir "$DATA" >> "$OUT/sys.md"
