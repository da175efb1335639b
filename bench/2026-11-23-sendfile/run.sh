#!/bin/sh
# GET throughput after the sendfile change: the reference-run build (old),
# the sendfile build (new) and MinIO, interleaved rounds on one machine.
# Run as OUT=DIR ./run.sh; OLD, NEW and MINIO name the binaries.
set -eu
OUT=${OUT:?set OUT to the results directory}
OLD=${OLD:-/tmp/coffer-bench}   # commit b7d72f9
NEW=${NEW:-/tmp/coffer-sf}      # commit ae7228b
MINIO=${MINIO:-/tmp/peers/minio}
D=/var/tmp/coffer-sendfile
rm -rf "$D" && mkdir -p "$D/old" "$D/new" "$D/minio"
export COFFER_ROOT_ACCESS_KEY=sfak COFFER_ROOT_SECRET_KEY=sfsecretkey00000
"$OLD" serve --storage-path "$D/old" --address 127.0.0.1:7301 > "$D/old.log" 2>&1 &
P1=$!
"$NEW" serve --storage-path "$D/new" --address 127.0.0.1:7302 > "$D/new.log" 2>&1 &
P2=$!
MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin-secret MINIO_BROWSER=off MINIO_UPDATE=off \
  "$MINIO" server "$D/minio" --address 127.0.0.1:9100 --console-address 127.0.0.1:9101 > "$D/minio.log" 2>&1 &
P3=$!
trap 'kill $P1 $P2 $P3 2>/dev/null || true' EXIT
sleep 5
cat > "$D/targets.toml" <<'TOML'
[[target]]
name = "coffer-old"
url = "http://127.0.0.1:7301"
access_key = "sfak"
secret_key = "sfsecretkey00000"

[[target]]
name = "coffer-new"
url = "http://127.0.0.1:7302"
access_key = "sfak"
secret_key = "sfsecretkey00000"

[[target]]
name = "minio"
url = "http://127.0.0.1:9100"
access_key = "minioadmin"
secret_key = "minioadmin-secret"
TOML
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
mkdir -p "$OUT"
uptime > "$OUT/load.txt"
c1=$(cpu $P1); c2=$(cpu $P2); c3=$(cpu $P3)
"$NEW" bench cases --targets "$D/targets.toml" --baseline minio \
  --cases get-64MiB,get-1MiB --workers 4 --duration 30s --rounds 3 \
  --gobench --out "$OUT" > "$OUT/output.txt" 2>&1
uptime >> "$OUT/load.txt"
printf 'server CPU ticks (1/100 s) during the cases: coffer-old %s coffer-new %s minio %s\n' \
  $(( $(cpu $P1) - c1 )) $(( $(cpu $P2) - c2 )) $(( $(cpu $P3) - c3 )) > "$OUT/cpu.txt"
