#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a while each (default 30s).
# go test accepts one -fuzz target per invocation, hence the loop.
#   scripts/fuzz.sh          # 30s per target
#   scripts/fuzz.sh 5s       # CI's short pass
# A crasher is written under <pkg>/testdata/fuzz/FuzzX/ by go test: commit it.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
status=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($fuzztime)"
		if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime=2s "$pkg"; then
			status=1
		fi
	done
done
exit $status
