#!/bin/sh
# coffer bench mixed: Coffer vs MinIO on one machine, interleaved rounds.
set -eu
OUT=${OUT:?set OUT to the results directory}
DATA=/var/tmp/coffer-vs-minio
rm -rf "$DATA" && mkdir -p "$DATA/coffer" "$DATA/minio"

# Coffer: default durability (--fsync=true: blocks fsynced, Pebble WAL synced
# per commit); built from the checkout with: go build -o /tmp/coffer-bench ./cmd/coffer
COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00 \
  /tmp/coffer-bench serve --storage-path "$DATA/coffer" --address 127.0.0.1:6941 \
  > "$DATA/coffer.log" 2>&1 &
COFFER_PID=$!

# MinIO: single node, single drive, default durability (data and xl.meta
# written with O_DIRECT or O_DSYNC and fdatasync; MINIO_FS_OSYNC unset);
# built with: GOFLAGS=-mod=mod GOBIN=/tmp/peers go install github.com/minio/minio@latest
MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin-secret MINIO_BROWSER=off MINIO_UPDATE=off \
  /tmp/peers/minio server "$DATA/minio" --address 127.0.0.1:9100 --console-address 127.0.0.1:9101 \
  > "$DATA/minio.log" 2>&1 &
MINIO_PID=$!
trap 'kill $COFFER_PID $MINIO_PID 2>/dev/null || true' EXIT
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

mkdir -p "$OUT"
/tmp/coffer-bench bench sys --dir "$DATA" > "$OUT/sys.md"
uptime > "$OUT/load.txt"
/tmp/coffer-bench bench mixed --targets "$DATA/targets.toml" --baseline minio \
  --size 100KiB --workers 16 --objects 1000 --duration 60s --rounds 3 \
  --gobench --out "$OUT" > "$OUT/output.txt" 2>&1
uptime >> "$OUT/load.txt"
for p in $COFFER_PID $MINIO_PID; do
  printf '%s %s\n' "$(cat /proc/$p/comm)" "$(grep -E 'VmHWM|VmRSS' /proc/$p/status | tr -s ' \n' ' ')"
done > "$OUT/rss.txt"
