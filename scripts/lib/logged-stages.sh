# Stages whose output goes to a log each, for the scripts that run long, chatty stages
# (scripts/cross-arm64.sh, scripts/x86-under-qemu.sh):
#   logged_stage DIR NAME COMMAND...   runs COMMAND with its output in DIR/NAME.log, prints
#                                      the log's last 8 lines, and adds NAME's line to
#                                      stage_results; a failure sets stage_status to 1
#   logged_stage_summary               prints stage_results, one line each
# (scripts/lib/stages.sh is the table of scripts/test.sh and .ci/run, whose stages print.)
stage_results=()
stage_status=0

logged_stage() {
  local dir=$1 name=$2 started code
  shift 2
  started=$(date +%s)
  echo "== $name (log: $dir/$name.log)"
  "$@" >"$dir/$name.log" 2>&1
  code=$?
  tail -n 8 "$dir/$name.log" | sed 's/^/    /'
  stage_results+=("$(printf '%-22s %5d s  %s' "$name" $(($(date +%s) - started)) \
    "$([[ $code -eq 0 ]] && echo ok || echo "FAILED (exit $code)")")")
  [[ $code -eq 0 ]] || stage_status=1
  return $code
}

logged_stage_summary() { printf '  %s\n' "${stage_results[@]}"; }
