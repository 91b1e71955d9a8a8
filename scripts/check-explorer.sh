#!/usr/bin/env bash
# The explorer in a real browser (scripts/test.sh runs it on the lesson model):
#   scripts/check-explorer.sh BINARY CHECKPOINT OUTDIR
# Starts `BINARY serve --checkpoint CHECKPOINT --port 0`, drives its page in Debian's headless
# Chromium (/usr/bin/chromium; $CHROMIUM overrides it) with npm's puppeteer-core (which
# downloads no browser) as a learner would: types the lesson's sentence, hovers a cell, switches
# off the head that reads the name, types a character outside the vocabulary, reloads from the
# URL, tries /split-merge; then stops the server with SIGINT. Prints a line per step and fails
# (exit 1, one line saying why) on the first step that does not hold, on a console or page
# error, and on a request outside the server's origin. Screenshots go to OUTDIR (explorer.png
# is the README's). The run finds its corpus and probes from any directory (its checkpoint
# stores their paths relative to itself; without them the page has no probes and no mean
# ablation, and the name reader is taken from CHECKPOINT/inspect/circuits.json only).
# EXPLORER_HTML=FILE (and SPLIT_MERGE_HTML=FILE) serve FILE as the page at / (at /split-merge)
# instead of the compiled-in one: to try an edited page without a rebuild.
# The node project is scripts/explorer-check/ (package.json and package-lock.json); its
# node_modules is installed there on first use with `npm ci`. Needs nodejs, npm and chromium.
set -euo pipefail
if [[ $# -ne 3 || ! -x $1 ]]; then
  echo "usage: scripts/check-explorer.sh BINARY CHECKPOINT OUTDIR" >&2
  exit 2
fi
project="$(cd "$(dirname "$0")" && pwd)/explorer-check"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "check-explorer: needs $tool: apt-get install -y nodejs npm" >&2; exit 2; }
done
[[ -x ${CHROMIUM:-/usr/bin/chromium} ]] \
  || { echo "check-explorer: needs ${CHROMIUM:-/usr/bin/chromium}: apt-get install -y chromium" >&2; exit 2; }
if [[ ! -d $project/node_modules/puppeteer-core ]]; then
  echo "check-explorer: installing puppeteer-core into $project/node_modules (npm ci)" >&2
  (cd "$project" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund >&2) \
    || { echo "check-explorer: npm ci failed in $project" >&2; exit 2; }
fi
exec node "$project/check-explorer.js" "$@"
