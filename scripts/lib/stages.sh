# Stages with their wall-clock time, for scripts/test.sh and .ci/run:
#   stage NAME COMMAND...    runs COMMAND, appends "NAME<TAB>seconds<TAB>ok|FAILED" to $STAGES_FILE
#   stage_table FILE...      prints the stages as a table, their total, and this CPU's flags
# STAGES_FILE defaults to build/stages.tsv (scripts/test.sh empties it at its start).
stage() {
  local name=$1 start status
  shift
  start=$(date +%s)
  "$@"
  status=$?
  printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - start))" "$([[ $status -eq 0 ]] && echo ok || echo FAILED)" \
    >>"${STAGES_FILE:-build/stages.tsv}"
  return $status
}

stage_table() {
  local total=0 name seconds result
  printf '\n%-52s %8s  %s\n' "stage" "seconds" "result"
  while IFS=$'\t' read -r name seconds result; do
    printf '%-52s %8s  %s\n' "$name" "$seconds" "$result"
    total=$((total + seconds))
  done < <(cat "$@" 2>/dev/null)
  printf '%-52s %8s\n' "total" "$total"
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores;" \
    "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE '\b(avx2|avx512f|avx512_bf16)\b' | sort -u | paste -sd' ')"
}
