#!/bin/sh
# Large PUTs before and after the large-PUT work of issue 13 (direct I/O
# for large blobs): put-1MiB, put-10MiB and put-64MiB against the build
# before it (main at 9940a8c) and this one, side by side, interleaved
# rounds (A B A B …), both fresh and at default durability, with the
# streaming-signature payload (what warp, mc and minio-go send over HTTP)
# and UNSIGNED-PAYLOAD; put-10MiB also with the other two payloads. Then
# the memory of 16 concurrent 1 GiB uploads on a fresh server of each
# build. Run as OUT=run-N ./run.sh from this directory after
#   git archive 9940a8c | tar -x -C /tmp/before-src && (cd /tmp/before-src && go build -o /tmp/coffer-before ./cmd/coffer)
#   go build -o /tmp/coffer-after ./cmd/coffer
set -eu
OUT=${OUT:?set OUT to the results directory}
BEFORE=${BEFORE:-/tmp/coffer-before}
AFTER=${AFTER:-/tmp/coffer-after}
DATA=/var/tmp/coffer-large-put
AK=benchak SK=benchsecretkey00
rm -rf "$DATA" && mkdir -p "$DATA/before" "$DATA/after" "$OUT"
export COFFER_ROOT_ACCESS_KEY=$AK COFFER_ROOT_SECRET_KEY=$SK
"$BEFORE" serve --storage-path "$DATA/before" --address 127.0.0.1:7411 --console-address 127.0.0.1:7412 > "$DATA/before.log" 2>&1 &
B=$!
"$AFTER" serve --storage-path "$DATA/after" --address 127.0.0.1:7413 --console-address 127.0.0.1:7414 > "$DATA/after.log" 2>&1 &
A=$!
trap 'kill $A $B 2>/dev/null || true' EXIT
sleep 3
cat > "$OUT/targets.toml" <<T
[[target]]
name = "before"
url = "http://127.0.0.1:7411"

[[target]]
name = "after"
url = "http://127.0.0.1:7413"
T
uptime > "$OUT/load.txt"
"$AFTER" bench sys --dir "$DATA" > "$OUT/sys.md" 2>&1
for p in streaming unsigned; do
  "$AFTER" bench cases --targets "$OUT/targets.toml" --access-key $AK --secret-key $SK --baseline before \
    --cases put-1MiB,put-10MiB,put-64MiB --workers 8 --duration 30s --rounds 3 --payload $p \
    --gobench --out "$OUT/$p" > "$OUT/$p.txt" 2>&1
  uptime >> "$OUT/load.txt"
done
for p in signed streaming-trailer; do
  "$AFTER" bench cases --targets "$OUT/targets.toml" --access-key $AK --secret-key $SK --baseline before \
    --cases put-10MiB --workers 8 --duration 30s --rounds 3 --payload $p \
    --gobench --out "$OUT/$p" > "$OUT/$p.txt" 2>&1
  uptime >> "$OUT/load.txt"
done
for p in $B $A; do
  printf '%s %s\n' "$p" "$(grep -E 'VmHWM|VmRSS' /proc/$p/status | tr -s ' \n' ' ')"
done > "$OUT/rss.txt"
kill $A $B; wait $A $B 2>/dev/null || true
trap - EXIT
"$AFTER" bench sys --dir "$DATA" >> "$OUT/sys.md" 2>&1

# 16 concurrent uploads of 1 GiB each, one build at a time on a fresh
# server; the peak RSS (VmHWM) of the server is what counts.
for build in before after; do
  bin=$BEFORE; [ $build = after ] && bin=$AFTER
  rm -rf "$DATA/$build" && mkdir -p "$DATA/$build"
  "$bin" serve --storage-path "$DATA/$build" --address 127.0.0.1:7415 --console-address 127.0.0.1:7416 > "$DATA/$build-1g.log" 2>&1 &
  S=$!
  trap 'kill $S 2>/dev/null || true' EXIT
  sleep 3
  "$AFTER" bench put --target $build=http://127.0.0.1:7415 --access-key $AK --secret-key $SK \
    --size 1GiB --objects 1 --workers 16 --duration 5s --payload streaming \
    --out "$OUT/1gib-$build" > "$OUT/1gib-$build.txt" 2>&1
  printf '%s %s %s\n' $build "$S" "$(grep -E 'VmHWM|VmRSS' /proc/$S/status | tr -s ' \n' ' ')" >> "$OUT/rss-1gib.txt"
  kill $S; wait $S 2>/dev/null || true
  trap - EXIT
done
rm -rf "$DATA"
