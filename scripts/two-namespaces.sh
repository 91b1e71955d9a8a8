#!/usr/bin/env bash
# Two machines, as near as one machine allows: a data-parallel run across two network
# namespaces, each with its own address on the two ends of a veth pair, over TCP, as between
# two hosts. mpirun starts in the first; its remote launch (Open MPI's rsh agent, ssh between
# real machines) goes through `ip netns exec` into the second. Then the weights are compared
# with a one-process run of the same config: ‖a − b‖ / ‖a‖ at most 1e-5 in every tensor
# (tests/tools/weights_diff).
#
#   scripts/two-namespaces.sh [--tinyformer BIN] [--weights-diff BIN] [--config FILE] [--steps N]
#                             [--rate 10gbit] [--bench "BENCH ARGS"]
#
# --rate caps the link's bandwidth each way (tc's token bucket filter, tbf), to stand for a
# network between machines. (Its latency stays the veth pair's, a few µs: this machine's
# kernel has no netem to add delay.) --bench runs `tinyformer bench BENCH ARGS`
# across the two namespaces instead of the training and the comparison, and prints its line
# (docs/distributed.md's figures across a shaped link).
#
# Defaults: build/tinyformer, build/tests/weights_diff, the lesson (configs/lesson12.toml),
# 200 steps. Needs root (ip netns), iproute2 and Open MPI; the namespaces (tf-a-PID, tf-b-PID)
# and the veth pair are removed on every way out. Bounded: 2 processes, 3 minutes at most.
# Prints the comparison and exits 0 when it holds, 1 when not, 2 when it cannot run here.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=$root/build/tinyformer diff_tool=$root/build/tests/weights_diff config=$root/configs/lesson12.toml steps=200
rate="" bench=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --tinyformer) tf=$(realpath "$2"); shift 2 ;;
    --weights-diff) diff_tool=$(realpath "$2"); shift 2 ;;
    --config) config=$(realpath "$2"); shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    *) echo "two-namespaces: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
cannot() { echo "two-namespaces: cannot run here: $*" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || cannot "network namespaces need root"
command -v ip >/dev/null || cannot "no ip (apt-get install iproute2)"
command -v mpirun >/dev/null || cannot "no mpirun (apt-get install openmpi-bin)"
[[ -x $tf && ( -n $bench || -x $diff_tool ) ]] || cannot "no $tf or $diff_tool: build first"
[[ $("$tf" --version) == *"MPI: Open MPI"* ]] || cannot "$tf was built without MPI"

a=tf-a-$$ b=tf-b-$$ address_a=10.77.7.1 address_b=10.77.7.2
scratch=$(mktemp -d)
cleanup() {
  ip netns pids "$a" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns pids "$b" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
ip netns add "$a" && ip netns add "$b" || cannot "ip netns add failed (a container without CAP_SYS_ADMIN?)"
# Inside a chroot (CI's Debian 13 root) / is no mount point and `ip netns exec` cannot remount it.
ip netns exec "$a" true 2>/dev/null || cannot "ip netns exec fails here (in a chroot, / is no mount point)"
ip link add "veth-a$$" type veth peer name "veth-b$$" || cannot "no veth pair"
ip link set "veth-a$$" netns "$a" && ip link set "veth-b$$" netns "$b"
ip -n "$a" addr add "$address_a/24" dev "veth-a$$" && ip -n "$b" addr add "$address_b/24" dev "veth-b$$"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "veth-a$$" up && ip -n "$b" link set "veth-b$$" up
if [[ -n $rate ]]; then
  command -v tc >/dev/null || cannot "no tc (apt-get install iproute2)"
  for end in "$a veth-a$$" "$b veth-b$$"; do
    read -r ns dev <<<"$end"
    tc -n "$ns" qdisc add dev "$dev" root tbf rate "$rate" burst 256kb latency 50ms ||
      { echo "two-namespaces: tc tbf rate $rate failed (no sch_tbf in this kernel?)" >&2; exit 2; }
  done
  echo "two-namespaces: the link capped at $rate each way (tc tbf)"
fi
ip -n "$a" route get "$address_b" >/dev/null 2>&1 && echo "two-namespaces: $a ($address_a) and $b ($address_b), joined by a veth pair" ||
  { echo "two-namespaces: $a has no route to $b" >&2; exit 1; }

# Open MPI's remote launch: `AGENT HOST COMMAND...`, the command a shell line (as ssh runs it).
cat >"$scratch/into-namespace" <<EOF
#!/bin/sh
host=\$1; shift
case \$host in $address_a) ns=$a ;; $address_b) ns=$b ;; *) echo "into-namespace: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$scratch/into-namespace"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# To mpirun the two namespaces are two machines, and it would bind each process to core 0 of
# "its" machine: both to the same core. --bind-to none leaves them to the kernel.
across_namespaces=(ip netns exec "$a" mpirun -np 2 -H "$address_a:1,$address_b:1" --bind-to none
  --mca plm_rsh_agent "$scratch/into-namespace" --mca btl tcp,self
  --mca btl_tcp_if_include 10.77.7.0/24 --mca oob_tcp_if_include 10.77.7.0/24 -x TF_BUCKET)
if [[ -n $bench ]]; then
  # shellcheck disable=SC2086  # bench's arguments, split as a shell line
  timeout 600 "${across_namespaces[@]}" "$tf" bench --config "$config" --threads 1 $bench >"$scratch/bench.log" 2>&1 ||
    { echo "two-namespaces: bench failed:" >&2; grep -v "^[-=]\{5\}" "$scratch/bench.log" | head -5 >&2; exit 1; }
  cat "$scratch/bench.log"
  exit 0
fi
echo "two-namespaces: one process, $steps steps of $(basename "$config")"
"$tf" train --config "$config" --set train.steps="$steps" --set train.threads=1 --out "$scratch/one" >"$scratch/one.log" 2>&1 ||
  { tail -3 "$scratch/one.log"; exit 1; }
echo "two-namespaces: two processes, one in each namespace, over TCP"
started=$(date +%s)
timeout 180 "${across_namespaces[@]}" \
  "$tf" train --config "$config" --set train.steps="$steps" --set train.threads=1 --out "$scratch/two" >"$scratch/two.log" 2>&1 &
mpirun_pid=$!
# Where the two processes run: one tinyformer in each namespace, seen while they train.
in_a="" in_b=""
while kill -0 $mpirun_pid 2>/dev/null; do
  for pid in $(ip netns pids "$a" 2>/dev/null); do [[ $(cat /proc/"$pid"/comm 2>/dev/null) == tinyformer ]] && in_a=$pid; done
  for pid in $(ip netns pids "$b" 2>/dev/null); do [[ $(cat /proc/"$pid"/comm 2>/dev/null) == tinyformer ]] && in_b=$pid; done
  [[ -n $in_a && -n $in_b ]] && break
  sleep 0.05
done
wait $mpirun_pid
code=$?
[[ $code -eq 0 ]] || { echo "two-namespaces: the run failed (exit $code):" >&2; tail -15 "$scratch/two.log" >&2; exit 1; }
[[ -n $in_a && -n $in_b ]] && echo "two-namespaces: a tinyformer process in each: $a (pid $in_a), $b (pid $in_b)" ||
  { echo "two-namespaces: FAILED: the processes were not one in each namespace ($a: ${in_a:-none}, $b: ${in_b:-none})" >&2; exit 1; }
echo "two-namespaces: trained in $(( $(date +%s) - started )) s; $(grep -m1 'processes' "$scratch/two.log" | sed 's/^\[[0-9:]*\] //')"
# To the processes the namespaces are two machines: train.exchange = "auto" sums during the backward.
grep -q "gradients summed during the backward" "$scratch/two.log" ||
  { echo "two-namespaces: FAILED: across two machines the sum did not overlap the backward" >&2; exit 1; }
result=$("$diff_tool" "$scratch/one/model.safetensors" "$scratch/two/model.safetensors") || exit 1
echo "two-namespaces: one process against two namespaces: $result"
rel_norm=$(awk '{print $8}' <<<"$result")  # ‖a − b‖ / ‖a‖, the largest over the tensors
if awk -v r="$rel_norm" 'BEGIN { exit !(r != "" && r <= 1e-5) }'; then
  echo "two-namespaces: passed (relative difference $rel_norm ≤ 1e-5)"
else
  echo "two-namespaces: FAILED: relative difference $rel_norm > 1e-5" >&2
  exit 1
fi
