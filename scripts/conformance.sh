#!/usr/bin/env bash
# conformance.sh — run the ceph/s3-tests conformance suite against a fresh
# `coffer serve` and compare the outcome with the checked-in expectations.
#
# usage: scripts/conformance.sh [--update] [SET]
#
# SET      the suite's sets or areas (default: core,versioning,tagging,lifecycle,cors,policy,acl,checksum);
#          see s3tests.sh --help for the names.
# --update rewrite scripts/conformance/expected-failures.txt from this run:
#          do it when a change makes tests pass (the list shrinks), and
#          explain in the commit any line that is added.
#
# The suite lives beside the project in ../shared/conformance (override with
# COFFER_CONFORMANCE_DIR); its README says how it was taken. The server is
# built from this tree, started on a free loopback port with a fresh storage
# path and two users (root, and "alt" with the canned readwrite policy),
# and stopped at the end. Results are copied to
# $COFFER_CONFORMANCE_OUT/coffer-conformance.results.tsv (default /tmp).
#
# COFFER_CONFORMANCE_SERVE_FLAGS are extra flags for `coffer serve`. By
# default they give the lifecycle worker the suite's day: s3-tests count a
# lifecycle day as 10 seconds (Ceph's rgw_lc_debug_interval, the suite's
# lc_debug_interval), so `--lifecycle.day 10s --lifecycle.interval 1s`.
# These change only when the worker acts on buckets that have lifecycle
# rules; x-amz-expiration and every other answer stay S3's. Set the
# variable to "" to run with production settings.
#
# Exit status: 0 when every test passes that is not listed as an expected
# failure (a listed test that now passes is reported, not an error), 1 when
# a test that should pass failed (a regression), 2 on a harness error.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
SET=${1:-core,versioning,tagging,lifecycle,cors,policy,acl,checksum}
SUITE=${COFFER_CONFORMANCE_DIR:-$top/../shared/conformance}
EXPECTED=$top/scripts/conformance/expected-failures.txt
[ -x "$SUITE/s3tests.sh" ] || { echo "conformance.sh: no suite at $SUITE (set COFFER_CONFORMANCE_DIR)" >&2; exit 2; }

work=$(mktemp -d /tmp/coffer-conformance.XXXXXX)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$top" && go build -o "$work/coffer" ./cmd/coffer) || { echo "conformance.sh: build failed" >&2; exit 2; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ops=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export COFFER_ROOT_ACCESS_KEY=conformance-root COFFER_ROOT_SECRET_KEY=conformance-root-secret-0123456789
serve_flags=${COFFER_CONFORMANCE_SERVE_FLAGS-"--lifecycle.day 10s --lifecycle.interval 1s"}
# shellcheck disable=SC2086 # the flags are words
"$work/coffer" serve --storage-path "$work/data" --address "127.0.0.1:$port" \
	--console-address "127.0.0.1:$ops" $serve_flags >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
	curl -sf "http://127.0.0.1:$port/_coffer/health/ready" >/dev/null 2>&1 && break
	sleep 0.1
done
export COFFER_ENDPOINT="http://127.0.0.1:$port"
alt=$("$work/coffer" admin user add alt --json) || { echo "conformance.sh: could not create the alt user" >&2; exit 2; }
"$work/coffer" admin policy attach readwrite --user alt >/dev/null || exit 2
alt_key=$(printf '%s' "$alt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessKey"])')
alt_secret=$(printf '%s' "$alt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secretKey"])')

junit="$work/run.xml"
S3TESTS_SET="$SET" S3TESTS_JUNIT="$junit" "$SUITE/s3tests.sh" 127.0.0.1 "$port" \
	"$COFFER_ROOT_ACCESS_KEY" "$COFFER_ROOT_SECRET_KEY" "$alt_key" "$alt_secret" | tail -n 30
results="$work/run.results.tsv"
[ -f "$results" ] || { echo "conformance.sh: the suite left no results" >&2; tail -n 20 "$work/server.log" >&2; exit 2; }
mkdir -p "${COFFER_CONFORMANCE_OUT:-/tmp}"
cp "$results" "${COFFER_CONFORMANCE_OUT:-/tmp}/coffer-conformance.results.tsv"

# Failures of this run: test ids whose outcome is failed or error.
awk -F'\t' 'NR > 1 && ($3 == "failed" || $3 == "error") { print $1 }' "$results" | sort >"$work/failed"
awk -F'\t' 'NR > 1 { print $1 }' "$results" | sort >"$work/ran"
if [ "$update" = 1 ]; then
	mkdir -p "$(dirname "$EXPECTED")"
	{
		echo "# Tests of ../shared/conformance that Coffer is known to fail, one node id a line."
		echo "# Written by scripts/conformance.sh --update; a test missing from here must pass."
		# Keep expectations of areas this run did not cover.
		if [ -f "$EXPECTED" ]; then grep -v '^#' "$EXPECTED" | sort | comm -23 - "$work/ran"; fi
		cat "$work/failed"
	} | awk '/^#/ { print; next } { print }' >"$work/expected"
	{ grep '^#' "$work/expected"; grep -v '^#' "$work/expected" | sort -u; } >"$EXPECTED"
	echo "conformance.sh: wrote $(grep -vc '^#' "$EXPECTED") expected failures to $EXPECTED"
	exit 0
fi
grep -v '^#' "$EXPECTED" 2>/dev/null | sort >"$work/expected"
regressions=$(comm -23 "$work/failed" "$work/expected")
fixed=$(comm -12 "$work/ran" "$work/expected" | comm -23 - "$work/failed")
if [ -n "$fixed" ]; then
	echo
	echo "conformance.sh: now passing, listed as expected failures (run with --update):"
	echo "$fixed" | sed 's/^/  /'
fi
if [ -n "$regressions" ]; then
	echo
	echo "conformance.sh: REGRESSIONS (failed, not expected to):"
	grep -F -f <(echo "$regressions") "$results" | cut -f1,3,4 | sed 's/^/  /'
	exit 1
fi
echo "conformance.sh: no regressions"
