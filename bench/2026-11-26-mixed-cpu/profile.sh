#!/bin/sh
# profile.sh BIN OUTDIR [DURATION]: a fresh server (BIN serve --pprof) under
# the mixed load for DURATION (default 30s) with `coffer bench --profile`,
# which writes OUTDIR/cpu.pprof, allocs.pprof, heap.pprof and
# profile-top.txt; peak RSS goes to OUTDIR/rss.txt.
set -eu
BIN=$1; OUT=$2; DUR=${3:-30s}
DATA=/var/tmp/mixcpu-prof
rm -rf "$DATA" && mkdir -p "$DATA" "$OUT"
COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00 \
  timeout 300 "$BIN" serve --storage-path "$DATA" --address 127.0.0.1:7341 --console-address 127.0.0.1:7342 \
  --pprof --pprof-port 7343 > "$OUT/server.log" 2>&1 &
S=$!
trap 'kill $S 2>/dev/null || true' EXIT
sleep 3
timeout 200 "$BIN" bench mixed --target coffer=http://127.0.0.1:7341 --access-key benchak --secret-key benchsecretkey00 \
  --payload streaming --size 100KiB --workers 16 --objects 1000 --duration $DUR --gobench \
  --profile --pprof http://127.0.0.1:7343 --out "$OUT" > "$OUT/output.txt" 2>&1
P=$(pgrep -P $S); grep -E "VmHWM|VmRSS" /proc/$P/status > "$OUT/rss.txt"; kill $S
