#!/bin/sh
# The console cases of `coffer bench cases` against a local `coffer serve`
# limited to one CPU (GOMAXPROCS=1, pinned to CPU 0 with taskset), the
# generator pinned to CPU 1: 16 workers (4 for sign-in), 5 s per case,
# everything on 127.0.0.1. Usage: run.sh OUTDIR (from the repository root);
# CASES=case,case run.sh OUTDIR runs only those cases.
set -eu
out=${1:?usage: run.sh OUTDIR}
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/coffer" ./cmd/coffer
export COFFER_ROOT_ACCESS_KEY=BENCHROOTKEY00000001 COFFER_ROOT_SECRET_KEY=bench-root-secret-key-0001
export COFFER_ENDPOINT=http://127.0.0.1:9310
GOMAXPROCS=1 taskset -c 0 "$work/coffer" serve --storage-path "$work/data" \
	--address 127.0.0.1:9310 --console-address 127.0.0.1:6890 --pprof --pprof-port 6960 >"$work/serve.log" 2>&1 &
pid=$!
sleep 2
# A real console user with a console password (argon2id, the default
# parameters: 19 MiB, 2 passes), allowed to read every bucket.
"$work/coffer" admin user add bench >/dev/null
"$work/coffer" admin policy attach readonly --user bench
printf 'bench-console-password\n' | "$work/coffer" admin user passwd bench --password-stdin
cat >"$work/targets.toml" <<TOML
[[target]]
name = "coffer"
url = "http://127.0.0.1:9310"
access_key = "$COFFER_ROOT_ACCESS_KEY"
secret_key = "$COFFER_ROOT_SECRET_KEY"
console_url = "http://127.0.0.1:6890"
console_user = "bench"
console_password = "bench-console-password"
TOML
cat /proc/loadavg >"$work/loadavg-before"
taskset -c 1 "$work/coffer" bench cases --targets "$work/targets.toml" \
	--cases "${CASES:-console-sign-in,console-buckets,console-objects-1000,console-download-1KiB}" \
	--duration 5s --workers 16 --profile --pprof http://127.0.0.1:6960 --out "$out"
grep -E '^Vm(HWM|RSS)' "/proc/$pid/status" >"$out/rss.txt"
{ echo "before: $(cat "$work/loadavg-before")"; echo "after:  $(cat /proc/loadavg)"; } >"$out/loadavg.txt"
