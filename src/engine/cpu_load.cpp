#include "tinyformer/engine/cpu_load.hpp"

#include "tinyformer/engine/cpu_budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

namespace tinyformer {

namespace {

double seconds_of(clockid_t clock) {
    timespec now{};
    clock_gettime(clock, &now);
    return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

}  // namespace

double busy_seconds(const std::string& proc_stat, const std::vector<int>& cpus, double ticks_per_second, int& counted) {
    std::istringstream lines(proc_stat);
    std::string line;
    double ticks = 0;
    counted = 0;
    while (std::getline(lines, line)) {
        // "cpu3 user nice system idle iowait irq softirq steal guest guest_nice" (the total
        // line is "cpu " and is skipped; guest time is already inside user's).
        if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
        std::istringstream fields(line.substr(3));
        int cpu = -1;
        long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
        if (!(fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq)) continue;
        fields >> steal;  // absent before Linux 2.6.11
        if (!cpus.empty() && std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
        ticks += static_cast<double>(user + nice + system + irq + softirq + steal);
        ++counted;
    }
    return ticks / ticks_per_second;
}

double steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

CpuReading read_cpu_load() {
    CpuReading reading;
    reading.wall_s = steady_seconds();
    reading.own_s = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
    std::ifstream in("/proc/stat");
    if (!in) return reading;
    std::stringstream text;
    text << in.rdbuf();
    static const double ticks_per_second = static_cast<double>(std::max(1L, sysconf(_SC_CLK_TCK)));
    reading.busy_s = busy_seconds(text.str(), affinity_cpus(), ticks_per_second, reading.cpus);
    return reading;
}

double others_cpus(const CpuReading& before, const CpuReading& after) {
    const double elapsed = after.wall_s - before.wall_s;
    if (before.cpus == 0 || after.cpus != before.cpus || elapsed <= 0) return -1;
    const double others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s);
    return std::clamp(others / elapsed, 0.0, static_cast<double>(after.cpus));
}

double load_average_1min() {
    std::ifstream in("/proc/loadavg");
    double load = -1;
    if (!(in >> load)) return -1;
    return load;
}

}  // namespace tinyformer
