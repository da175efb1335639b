#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a while each (default 30s).
# go test accepts one -fuzz target per invocation, hence the loop.
#   scripts/fuzz.sh          # 30s per target
#   scripts/fuzz.sh 5s       # CI's short pass
# A crasher is written under <pkg>/testdata/fuzz/FuzzX/ by go test: commit it.
#
# Go 1.26's fuzz coordinator can report a bare "context deadline exceeded"
# at the -fuzztime boundary with no failing input (golang/go#75804, fixed in
# Go 1.27). That exact signature — nothing written, no other failure output —
# is retried once; anything else, or the same signature twice, fails.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
status=0

# deadline_flake reports whether a failed run's log is only the coordinator
# race: the deadline message and no reproducer, panic or test failure text.
deadline_flake() {
	grep -q '^    context deadline exceeded$' "$1" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

run_target() { # pkg target log
	go test -run='^$' -fuzz="^$2\$" -fuzztime="$fuzztime" -fuzzminimizetime=2s "$1" >"$3" 2>&1
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($fuzztime)"
		if run_target "$pkg" "$target" "$log"; then
			tail -n 1 "$log"
			continue
		fi
		if deadline_flake "$log"; then
			echo "  fuzz coordinator deadline race (golang/go#75804), no input found; retrying once"
			if run_target "$pkg" "$target" "$log"; then
				tail -n 1 "$log"
				continue
			fi
		fi
		cat "$log"
		status=1
	done
done
exit $status
