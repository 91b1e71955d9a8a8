#!/usr/bin/env bash
# Threads on a shared machine (engine/threads.hpp, engine/cpu_budget.hpp), without timing
# anything:
# - beside a busy process on one of its two CPUs, `bench` runs its steps on one thread of
#   two (share_cores), and reports that the other process kept about a CPU busy;
# - in a cgroup limited to one CPU (made here: cgroup v2's cpu.max, else v1's cpu controller),
#   `--version` and `bench` find one CPU and say why; skipped, with the reason, where this
#   machine lets no cgroup be made (not root, no cpu controller);
# - with the affinity mask narrowed to one CPU (taskset), they find one, and --threads 2
#   splits the work in two but runs it on one thread.
source "$(dirname "$0")/common.sh"
small_bench=(bench --json --repeats 3 --steps 4 --sample-chars 8)
# json_field NAME <<< JSON: a top-level number, boolean or string of bench's one-line JSON
json_field() { grep -oE "\"$1\":(\"[^\"]*\"|[^,}]*)" | head -1 | sed -E "s/^\"$1\"://; s/^\"//; s/\"$//"; }
# The CPUs of this process's affinity mask, one per line ("Cpus_allowed_list: 0-1,4").
mapfile -t cpus < <(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status | tr ',' '\n' |
                    awk -F- '{ last = NF > 1 ? $2 : $1; for (c = $1; c <= last; ++c) print c }')

# ---- beside a busy process ----
if [[ ${#cpus[@]} -ge 2 ]] && command -v taskset >/dev/null; then
  pair="${cpus[0]},${cpus[1]}"
  taskset -c "${cpus[0]}" sha256sum /dev/zero & busy=$!
  out=$(taskset -c "$pair" "$tf" "${small_bench[@]}" --threads 2 --config "$src/configs/lesson12.toml" 2>&1)
  kill $busy; wait $busy 2>/dev/null
  running=$(json_field running_threads_min <<<"$out" 2>/dev/null)
  others=$(json_field others_cpus <<<"$out" 2>/dev/null)
  threads=$(json_field threads <<<"$out" 2>/dev/null)
  busy_flag=$(json_field busy_machine <<<"$out" 2>/dev/null)
  [[ $threads == 2 ]] && pass "busy beside: --threads 2 is still the split" || fail "busy beside: threads $threads, expected 2: $out"
  [[ $running == 1 ]] && pass "busy beside: the steps ran on 1 of 2 threads" ||
    fail "busy beside: running_threads_min '$running', expected 1 (a thread gives its CPU back): $out"
  awk -v x="$others" 'BEGIN { exit !(x != "" && x + 0 >= 0.5) }' &&
    pass "busy beside: others kept $others CPUs busy" || fail "busy beside: others_cpus '$others', expected ≥ 0.5"
  [[ $busy_flag == true ]] && pass "busy beside: bench calls the machine busy" || fail "busy beside: busy_machine '$busy_flag'"
else
  echo "skipped: beside a busy process: needs 2 CPUs in the affinity mask and taskset (have ${#cpus[@]})"
fi

# ---- the affinity mask ----
if command -v taskset >/dev/null; then
  version=$(taskset -c "${cpus[0]}" "$tf" --version)
  expect_in "$version" "threads: 1 by default (1 CPU in the affinity mask" "--version under taskset -c ${cpus[0]}"
  out=$(taskset -c "${cpus[0]}" "$tf" "${small_bench[@]}" --config "$src/configs/lesson12.toml")
  [[ $(json_field threads <<<"$out") == 1 ]] && pass "bench under taskset: 1 thread" || fail "bench under taskset: $out"
  # --threads 2 on one CPU: split in 2, run on 1 (2 would wait for each other, as beside a busy process).
  out=$(taskset -c "${cpus[0]}" "$tf" "${small_bench[@]}" --threads 2 --config "$src/configs/lesson12.toml")
  [[ $(json_field threads <<<"$out") == 2 && $(json_field running_threads_max <<<"$out") == 1 ]] &&
    pass "--threads 2 on 1 CPU: 2 parts on 1 thread" || fail "--threads 2 on 1 CPU: $out"
fi

# ---- a cgroup limited to one CPU ----
cgroup=""
cleanup_cgroup() { [[ -n $cgroup && -d $cgroup ]] && rmdir "$cgroup" 2>/dev/null; }
trap 'cleanup_cgroup; rm -rf "$scratch"' EXIT
make_cgroup() {  # sets $cgroup and $limit_file, or prints why not and returns 1
  [[ $(id -u) -eq 0 ]] || { echo "skipped: a cgroup of the test's own: not root"; return 1; }
  local v2 v1
  v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
  if [[ -n $v2 ]] && grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null; then
    grep -qw cpu "$v2/cgroup.subtree_control" || echo +cpu >"$v2/cgroup.subtree_control" 2>/dev/null
    cgroup="$v2/tinyformer-test-$$"
    if mkdir "$cgroup" 2>/dev/null && echo "100000 100000" >"$cgroup/cpu.max" 2>/dev/null; then
      limit_file=cpu.max; return 0
    fi
    cleanup_cgroup
  fi
  v1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/mounts)
  if [[ -n $v1 ]]; then
    cgroup="$v1/tinyformer-test-$$"
    if mkdir "$cgroup" 2>/dev/null && echo 100000 >"$cgroup/cpu.cfs_period_us" && echo 100000 >"$cgroup/cpu.cfs_quota_us"; then
      limit_file=cpu.cfs_quota_us; return 0
    fi
    cleanup_cgroup
  fi
  cgroup=""
  echo "skipped: a cgroup of the test's own: no writable cgroup v2 with the cpu controller, nor v1's cpu"
  return 1
}
if make_cgroup; then
  in_cgroup() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup" "$@"; }
  version=$(in_cgroup "$tf" --version)
  expect_in "$version" "threads: 1 by default" "--version in a cgroup limited to 1 CPU"
  expect_in "$version" "limited to 1 by the cgroup ($cgroup/$limit_file)" "--version names the cgroup's file"
  out=$(in_cgroup "$tf" "${small_bench[@]}" --config "$src/configs/lesson12.toml")
  [[ $(json_field threads <<<"$out") == 1 ]] && pass "bench in the cgroup: 1 thread" || fail "bench in the cgroup: $out"
  expect_in "$(json_field cpus_reason <<<"$out")" "limited to 1 by the cgroup" "bench in the cgroup says why"
  version=$("$tf" --version)
  [[ $version != *"limited to 1 by the cgroup ($cgroup"* ]] && pass "outside the cgroup: not its limit" ||
    fail "outside the cgroup, --version reports its limit: $version"
fi

[[ $failures -eq 0 ]] || exit 1
