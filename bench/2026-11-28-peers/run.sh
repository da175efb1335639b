#!/bin/sh
# Coffer against every peer built here, side by side in one run (the
# product's bar: at least twice MinIO's operations per second on the mixed
# workload, and ahead of every other peer). Each server fresh, at its own
# default durability, on 127.0.0.1; interleaved rounds (A B C D A B C D
# ...); uploads signed as warp signs them over HTTP (--payload streaming).
# Run as OUT=run-N ./run.sh from this directory. Builds: see README.md.
set -eu
OUT=${OUT:?set OUT to the results directory}
COFFER=${COFFER:-/tmp/coffer-bench}        # CGO_ENABLED=0 go build -o /tmp/coffer-bench ./cmd/coffer
MINIO=${MINIO:-/tmp/peers/minio}
WEED=${WEED:-/tmp/peers/weed}
GARAGE=${GARAGE:-/tmp/peers/garage/bin/garage}
DATA=${DATA:-/var/tmp/coffer-peers}
rm -rf "$DATA" && mkdir -p "$DATA/coffer" "$DATA/minio" "$DATA/weed" "$DATA/garage" "$OUT/mixed" "$OUT/cases"
PIDS=""
trap 'kill $PIDS 2>/dev/null || true; wait 2>/dev/null; cp "$DATA"/*.log "$OUT"/ 2>/dev/null; rm -rf "$DATA"' EXIT

# Coffer: defaults (blocks and their directories fsynced before the
# metadata commit, the WAL synced on every commit, group commit).
COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00 \
  "$COFFER" serve --storage-path "$DATA/coffer" --address 127.0.0.1:6941 \
  --console-address 127.0.0.1:6943 > "$DATA/coffer.log" 2>&1 &
PIDS="$PIDS $!"
cat > "$DATA/targets.toml" <<TOML
[[target]]
name = "coffer"
url = "http://127.0.0.1:6941"
access_key = "benchak"
secret_key = "benchsecretkey00"
TOML

# MinIO: single node, single drive, default durability (O_DIRECT writes and
# fdatasync).
MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin-secret MINIO_BROWSER=off MINIO_UPDATE=off \
  "$MINIO" server "$DATA/minio" --address 127.0.0.1:9100 --console-address 127.0.0.1:9191 \
  > "$DATA/minio.log" 2>&1 &
PIDS="$PIDS $!"
cat >> "$DATA/targets.toml" <<TOML
[[target]]
name = "minio"
url = "http://127.0.0.1:9100"
access_key = "minioadmin"
secret_key = "minioadmin-secret"
TOML

# SeaweedFS: `weed mini` (master, volume server, filer and S3 gateway in one
# process), its defaults (volume writes are not fsynced).
if [ -x "$WEED" ]; then
  AWS_ACCESS_KEY_ID=weedak AWS_SECRET_ACCESS_KEY=weedsecretkey000 \
    "$WEED" mini -dir="$DATA/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    > "$DATA/weed.log" 2>&1 &
  PIDS="$PIDS $!"
  cat >> "$DATA/targets.toml" <<TOML
[[target]]
name = "seaweedfs"
url = "http://127.0.0.1:8333"
access_key = "weedak"
secret_key = "weedsecretkey000"
TOML
fi

# Garage: one node, replication factor 1, LMDB metadata, its defaults
# (metadata_fsync and data_fsync off).
if [ -x "$GARAGE" ]; then
  cat > "$DATA/garage.toml" <<TOML
metadata_dir = "$DATA/garage/meta"
data_dir = "$DATA/garage/data"
db_engine = "lmdb"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:3901"
rpc_public_addr = "127.0.0.1:3901"
rpc_secret = "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:3900"
root_domain = ".s3.garage.localhost"
TOML
  "$GARAGE" -c "$DATA/garage.toml" server > "$DATA/garage.log" 2>&1 &
  PIDS="$PIDS $!"
  sleep 3
  node=$("$GARAGE" -c "$DATA/garage.toml" node id -q | cut -d@ -f1)
  "$GARAGE" -c "$DATA/garage.toml" layout assign -z dc1 -c 50G "$node" > /dev/null
  "$GARAGE" -c "$DATA/garage.toml" layout apply --version 1 > /dev/null
  "$GARAGE" -c "$DATA/garage.toml" key import --yes -n bench GK0123456789abcdef01234567 \
    0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef > /dev/null
  "$GARAGE" -c "$DATA/garage.toml" key allow --create-bucket GK0123456789abcdef01234567 > /dev/null
  cat >> "$DATA/targets.toml" <<TOML
[[target]]
name = "garage"
url = "http://127.0.0.1:3900"
access_key = "GK0123456789abcdef01234567"
secret_key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
region = "garage"
TOML
fi
chmod 600 "$DATA/targets.toml"
sleep 5

rss() {
  for p in $PIDS; do
    printf '%s %s\n' "$(cat /proc/$p/comm)" "$(grep -E 'VmHWM|VmRSS' /proc/$p/status | tr -s ' \n' ' ')"
  done
}
{ "$COFFER" version; "$MINIO" --version | head -n 1
  [ -x "$WEED" ] && "$WEED" version | head -n 1
  [ -x "$GARAGE" ] && "$GARAGE" --version | head -n 1; } > "$OUT/versions.txt" 2>&1 || true
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
