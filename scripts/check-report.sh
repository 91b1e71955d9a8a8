#!/usr/bin/env bash
# A developer's check of inspect's report in a real browser (not part of scripts/test.sh):
#   scripts/check-report.sh REPORT.html [SCREENSHOT.png]
# Opens REPORT.html from file:// in Debian's headless Chromium (/usr/bin/chromium; $CHROMIUM
# overrides it), driven by npm's puppeteer-core (which downloads no browser), and fails (exit 1,
# one line saying why) on a request for anything but file: and data:, on a console or page
# error, and on a picture (<img> or SVG <image>) that did not decode. Prints the page's size,
# its sections and figures and the time to load, and writes a full-page screenshot to
# SCREENSHOT.png (default: beside the report, report.png). The node project is
# scripts/report-check/ (package.json and package-lock.json); its node_modules is installed
# there on first use with `npm ci`. Needs Debian's nodejs, npm and chromium packages.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 || ! -f $1 ]]; then
  echo "usage: scripts/check-report.sh REPORT.html [SCREENSHOT.png]" >&2
  exit 2
fi
report=$1
screenshot=${2:-${report%.html}.png}
project="$(cd "$(dirname "$0")" && pwd)/report-check"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "check-report: needs $tool: apt-get install -y nodejs npm" >&2; exit 2; }
done
[[ -x ${CHROMIUM:-/usr/bin/chromium} ]] \
  || { echo "check-report: needs ${CHROMIUM:-/usr/bin/chromium}: apt-get install -y chromium" >&2; exit 2; }
if [[ ! -d $project/node_modules/puppeteer-core ]]; then
  echo "check-report: installing puppeteer-core into $project/node_modules (npm ci)" >&2
  (cd "$project" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund >&2) \
    || { echo "check-report: npm ci failed in $project" >&2; exit 2; }
fi
exec node "$project/check-report.js" "$report" "$screenshot"
