#!/usr/bin/env bash
# Regenerates the console's screenshots in docs/console/ (PNG, 1280×800):
# internal/e2e's TestConsoleScreenshots starts a server on 127.0.0.1,
# fills it with buckets, objects, users, policies and some traffic, and
# photographs every page in headless Chromium (Debian's chromium, as the
# browser tests use).
#   scripts/console-screenshots.sh            # into docs/console
#   scripts/console-screenshots.sh /tmp/shots # elsewhere
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-docs/console}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
COFFER_SCREENSHOTS="$dir" go test ./internal/e2e/ -run '^TestConsoleScreenshots$' -count=1 -v |
	grep -E '^(=== RUN|--- |PASS|FAIL|ok|    console_screenshots_test)' || true
ls -l "$dir"/*.png
