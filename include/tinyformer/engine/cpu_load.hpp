// What other processes take of the CPUs this process may use, between two readings. The busy
// time of the CPUs in the affinity mask (/proc/stat's per-CPU lines: all but idle and iowait;
// steal, time the hypervisor gave another guest, counts as taken) minus this process's own
// CPU time (CLOCK_PROCESS_CPUTIME_ID, every thread's). In CPUs: 1.0 is one CPU's worth for
// the whole time between the readings. threads.cpp steps down when others take cores, and
// `bench` reports what they took while it timed.
#pragma once

#include <string>
#include <vector>

namespace tinyformer {

struct CpuReading {
    double wall_s = 0;  // steady clock
    double busy_s = 0;  // of the CPUs in the mask, added up
    double own_s = 0;   // this process's CPU time
    int cpus = 0;       // CPUs the busy time covers; 0 when /proc/stat could not be read
};

// Now: /proc/stat read whole (tens of microseconds; more on a machine of many CPUs).
CpuReading read_cpu_load();
// The steady clock in seconds, as CpuReading::wall_s counts it (tens of nanoseconds).
double steady_seconds();

// The CPUs' busy time in seconds from /proc/stat's text, counting only the CPUs whose
// numbers are in `cpus` (every one when it is empty); `counted` says how many there were.
double busy_seconds(const std::string& proc_stat, const std::vector<int>& cpus, double ticks_per_second, int& counted);

// The CPUs other processes kept busy between the two readings, on average (≥ 0); -1 when
// either reading has no CPUs or no time passed.
double others_cpus(const CpuReading& before, const CpuReading& after);

// The 1-minute load average (/proc/loadavg), -1 when it cannot be read.
double load_average_1min();

}  // namespace tinyformer
