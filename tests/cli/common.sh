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
one_line() {  # one_line DESCRIPTION: the last error ($err) is a single line
  [[ $(printf '%s' "$err" | wc -l) -le 1 ]] && pass "$1: one line" || fail "$1: multi-line error: $err"
}
# tiny_lesson_config FILE [TRAIN_LINE]...: a one-layer model (D=32, two heads, context 16) on
# the lesson's corpus, logging quietly; the [train] table holds the lines given ("steps = 30").
tiny_lesson_config() {
  local file=$1; shift
  {
    printf '[model]\nd_model = 32\nn_heads = 2\nn_layers = 1\ncontext = 16\n'
    printf '[data]\ntrain_path = "%s"\nval_path = "%s"\n' "$src/corpus/lesson_train.txt" "$src/corpus/lesson_val.txt"
    printf '[train]\n'; printf '%s\n' "$@"
    printf '[logging]\nlog_every = 10\nprogress_bar = false\n'
  } > "$file"
}
# The machine the binary was built for, as its --version says: aarch64 or x86_64. Under
# qemu-user (scripts/cross-arm64.sh --full) it is not this shell's `uname -m`.
binary_machine() { if [[ $("$tf" --version) == *") for aarch64 ("* ]]; then echo aarch64; else echo x86_64; fi; }
finish() { if [[ $failures -eq 0 ]]; then echo "all passed"; exit 0; else echo "$failures failed"; exit 1; fi; }
