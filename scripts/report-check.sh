#!/usr/bin/env bash
# report-check.sh [OUTDIR] [-- COMPILE FLAGS...]
#
# Writes the HTML compile report of the embedded model (or of the compile
# flags given after --), opens it in headless Chromium and checks that it
# runs cleanly: the page's script must log nothing but its self-test line,
# and the self-test (report.html#selftest clicks a value) must pass. Leaves
# report.html, report.png (a screenshot) and console.log in OUTDIR
# (default: a new temporary directory) and prints their paths.
#
# Needs Debian's chromium (apt-get install chromium). Exit status 0 when the
# report is clean, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-}"
[ "$#" -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
if [ -z "$out" ] || [ "$out" = "--" ]; then out="$(mktemp -d)"; fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
  echo "report-check: Chromium not found (apt-get install chromium)" >&2
  exit 1
fi

go run ./cmd/irtool compile --report "$out/report.html" "$@" >/dev/null 2>"$out/compile.log" ||
  { cat "$out/compile.log" >&2; exit 1; }

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile" --enable-logging=stderr --v=0)

"$browser" "${flags[@]}" --dump-dom "file://$out/report.html#selftest" \
  >"$out/dom.html" 2>"$out/chromium.log" || { cat "$out/chromium.log" >&2; exit 1; }
grep ':CONSOLE' "$out/chromium.log" >"$out/console.log" || true
"$browser" "${flags[@]}" --window-size=1400,1000 --hide-scrollbars \
  --screenshot="$out/report.png" "file://$out/report.html#selftest" >/dev/null 2>&1

status=0
if ! grep -q 'irtool-report selftest: ok' "$out/console.log"; then
  echo "report-check: the self-test did not pass" >&2
  status=1
fi
if grep -v 'irtool-report selftest: ok' "$out/console.log" | grep -q .; then
  echo "report-check: console messages:" >&2
  grep -v 'irtool-report selftest: ok' "$out/console.log" >&2
  status=1
fi
if [ ! -s "$out/report.png" ]; then
  echo "report-check: no screenshot" >&2
  status=1
fi
grep -o 'data-selftest="[^"]*"' "$out/dom.html" || true
echo "report:     $out/report.html"
echo "screenshot: $out/report.png"
echo "console:    $out/console.log"
exit $status
