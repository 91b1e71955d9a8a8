# Shared by the CLI tests: the binary, a scratch directory, and assertions that say what failed.
set -uo pipefail
tf=${TINYFORMER:?set TINYFORMER to the binary}
src=${TINYFORMER_SOURCE_DIR:?set TINYFORMER_SOURCE_DIR}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# expect_exit CODE DESCRIPTION -- command...: runs it, checks the exit code, keeps stderr in $err
expect_exit() {
  local want=$1 what=$2; shift 3
  err=$("$@" 2>&1 >/dev/null); local got=$?
  if [[ $got -eq $want ]]; then pass "$what (exit $got)"; else fail "$what: exit $got, expected $want; stderr: $err"; fi
}
expect_in() {  # expect_in TEXT NEEDLE DESCRIPTION
  if [[ "$1" == *"$2"* ]]; then pass "$3"; else fail "$3: '$2' not in: $1"; fi
}
finish() { if [[ $failures -eq 0 ]]; then echo "all passed"; exit 0; else echo "$failures failed"; exit 1; fi; }
