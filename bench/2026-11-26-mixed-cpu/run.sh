#!/bin/sh
# A/B of two Coffer builds under issue 13's mixed load: both servers fresh,
# default durability, on 127.0.0.1; one `coffer bench mixed` run drives both
# in interleaved rounds (ROUNDS=2: A B A B, or B A B A with ORDER=ba).
# Server CPU is utime + stime of each server process from /proc at the end
# of the run (preparation, measured rounds and cleanup; the bench's
# `--gobench` lines give the measured operations). Run as
#   OUT=run-N [ORDER=ab|ba] [ROUNDS=2] [DUR=40s] ./run.sh
# from this directory (DUR is per server, split into ROUNDS rounds) with the
# builds compared in A and B, each made by
#   CGO_ENABLED=0 go build -o /tmp/mixcpu-X ./cmd/coffer
set -eu
OUT=${OUT:?set OUT to the results directory}
A=${A:-/tmp/mixcpu-base}
B=${B:-/tmp/mixcpu-new}
ORDER=${ORDER:-ab}
DUR=${DUR:-40s}
ROUNDS=${ROUNDS:-2}
DATA=${DATA:-/var/tmp/mixcpu-ab}
rm -rf "$DATA" && mkdir -p "$DATA/a" "$DATA/b" "$OUT"
export COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00
timeout 600 "$A" serve --storage-path "$DATA/a" --address 127.0.0.1:7371 --console-address 127.0.0.1:7372 > "$OUT/a.log" 2>&1 &
TA=$!
timeout 600 "$B" serve --storage-path "$DATA/b" --address 127.0.0.1:7373 --console-address 127.0.0.1:7374 > "$OUT/b.log" 2>&1 &
TB=$!
trap 'kill $TA $TB 2>/dev/null || true' EXIT
sleep 3
PA=$(pgrep -P $TA); PB=$(pgrep -P $TB)
if [ "$ORDER" = ab ]; then
  T1="a=http://127.0.0.1:7371"; T2="b=http://127.0.0.1:7373"
else
  T1="b=http://127.0.0.1:7373"; T2="a=http://127.0.0.1:7371"
fi
uptime > "$OUT/load.txt"
timeout 500 "$B" bench mixed --target "$T1" --target "$T2" \
  --access-key benchak --secret-key benchsecretkey00 --baseline a \
  --payload streaming --size 100KiB --workers 16 --objects 1000 --duration "$DUR" --rounds "$ROUNDS" \
  --gobench --out "$OUT" > "$OUT/output.txt" 2>&1
uptime >> "$OUT/load.txt"
for t in a b; do
  eval p=\$P$(echo $t | tr a-z A-Z)
  ticks=$(awk '{print $14+$15}' /proc/$p/stat)
  hwm=$(awk '/VmHWM/{print $2}' /proc/$p/status)
  ops=$(awk -v t="target=$t/" 'index($0,t) && /^BenchmarkMixed/{n+=$2} END{print n}' "$OUT/output.txt")
  el=$(python3 -c "import json;d=json.load(open('$OUT/results.json'));print([x['elapsed_seconds'] for x in d['targets'] if x['name']=='$t'][0])")
  awk -v t=$t -v c=$ticks -v o=$ops -v e=$el -v h=$hwm 'BEGIN{printf "%s ops=%d elapsed=%.1fs ops/s=%.1f server_cpu=%.2fs cpu_per_op_us=%.1f vmhwm_kib=%d\n", t, o, e, o/e, c/100, c*10000/o, h}'
done > "$OUT/cpu.txt"
cat "$OUT/cpu.txt"
