// How many CPUs this process may use: the CPUs in its affinity mask (taskset, numactl,
// mpirun's binding, a cpuset), capped by a CPU-time limit of its cgroup — cgroup v2's
// cpu.max, or v1's cpu.cfs_quota_us / cpu.cfs_period_us — as a container started with
// `--cpus=1` has, or a systemd unit with CPUQuota=. A limit of 1.5 CPUs counts as 2, as Go's
// runtime, the JVM and .NET count it: the threads then share the time the limit allows.
// `tinyformer --version` and `bench` print the count and where it came from; it is the
// default thread count (threads.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

struct CpuBudget {
    int cpus = 1;        // threads worth running at once
    int affinity = 1;    // CPUs in the affinity mask
    std::string reason;  // "2 CPUs in the affinity mask; no cgroup CPU limit"
};

// Read now (the mask and the cgroup files), not cached: a process can be moved.
CpuBudget cpu_budget();

// The numbers of the CPUs in this process's affinity mask, ascending (empty if unreadable).
std::vector<int> affinity_cpus();

// The pieces, apart so that tests can give them files of their own.

// A cgroup's CPU limit in CPUs (quota / period), from the text of cgroup v2's cpu.max
// ("150000 100000", or "max 100000" for none); nullopt when unlimited. Throws InputError,
// naming `where`, on text that is neither.
std::optional<double> parse_cpu_max(const std::string& text, const std::string& where);

struct CgroupLimit {
    double cpus = 0;   // quota / period
    std::string file;  // the file that set it: the tightest on the way to the root
};
// The tightest CPU limit on the way from the cgroup at `mount`/`path` up to `mount`, read
// from cpu.max (cgroup v2) or cpu.cfs_quota_us and cpu.cfs_period_us (v1); nullopt when
// none is set or the files are not there.
std::optional<CgroupLimit> cgroup_cpu_limit(const std::string& mount, const std::string& path);

// This process's own limit: its cgroup's path read from /proc/self/cgroup, the mounts from
// /proc/self/mountinfo (v2 first, else v1's cpu controller).
std::optional<CgroupLimit> own_cgroup_cpu_limit();

}  // namespace tinyformer
