#!/bin/sh
# Coffer confined to a 200 MiB memory cgroup (v2 if mounted, else v1),
# under the mixed workload and large-object cases: it must finish with
# zero errors and no OOM kill. Needs root (creates a cgroup). Run as
# OUT=DIR ./run.sh; COFFER names the binary.
set -eu
OUT=${OUT:?set OUT to the results directory}
COFFER=${COFFER:-/tmp/coffer-ml}
LIMIT=$((200 << 20))
D=/var/tmp/coffer-cgroup
rm -rf "$D" && mkdir -p "$D/data" "$OUT/mixed" "$OUT/cases"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  CG=/sys/fs/cgroup/coffer-bench-$$; mkdir "$CG"
  echo $LIMIT > "$CG/memory.max"; echo 0 > "$CG/memory.swap.max" 2>/dev/null || true
  peak() { cat "$CG/memory.peak" 2>/dev/null || echo n/a; }
  ooms() { grep -E '^oom_kill ' "$CG/memory.events" | cut -d' ' -f2; }
else
  CG=/sys/fs/cgroup/memory/coffer-bench-$$; mkdir "$CG"
  echo $LIMIT > "$CG/memory.limit_in_bytes"
  echo $LIMIT > "$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
  peak() { cat "$CG/memory.max_usage_in_bytes"; }
  ooms() { grep -E '^oom_kill ' "$CG/memory.oom_control" | cut -d' ' -f2; }
fi
export COFFER_ROOT_ACCESS_KEY=cgak COFFER_ROOT_SECRET_KEY=cgsecretkey00000
# The server, and only the server, runs in the cgroup.
sh -c "echo \$\$ > $CG/cgroup.procs && exec $COFFER serve --storage-path $D/data --address 127.0.0.1:7401" > "$OUT/server.log" 2>&1 &
P=$!
trap 'kill $P 2>/dev/null || true; sleep 1; rmdir "$CG" 2>/dev/null || true' EXIT
sleep 2
grep -E 'memory limit' "$OUT/server.log" || true
echo "idle: VmRSS $(grep VmRSS /proc/$P/status | tr -s ' ')" > "$OUT/memory.txt"
"$COFFER" bench mixed --target coffer=http://127.0.0.1:7401 --access-key cgak --secret-key cgsecretkey00000 \
  --size 100KiB --workers 16 --objects 1000 --duration 30s --out "$OUT/mixed" > "$OUT/mixed/output.txt" 2>&1 || echo "mixed: exit $?" >> "$OUT/memory.txt"
echo "after mixed: $(grep -E 'VmHWM|VmRSS' /proc/$P/status | tr -s ' \n' ' ') cgroup peak $(peak) oom_kill $(ooms)" >> "$OUT/memory.txt"
"$COFFER" bench cases --target coffer=http://127.0.0.1:7401 --access-key cgak --secret-key cgsecretkey00000 \
  --cases put-64MiB,get-64MiB,multipart-256MiB --workers 16 --duration 10s --out "$OUT/cases" > "$OUT/cases/output.txt" 2>&1 || echo "cases: exit $?" >> "$OUT/memory.txt"
echo "after 64 MiB cases, 16 workers: $(grep -E 'VmHWM|VmRSS' /proc/$P/status | tr -s ' \n' ' ') cgroup peak $(peak) oom_kill $(ooms)" >> "$OUT/memory.txt"
kill -0 $P && echo "server alive at the end" >> "$OUT/memory.txt"
