#include "tinyformer/engine/cpu_budget.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "tinyformer/support/errors.hpp"

namespace tinyformer {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> first_line(const fs::path& file) {
    std::ifstream in(file);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    return line;
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, separator)) parts.push_back(part);
    return parts;
}

// A positive whole number of microseconds, or nullopt.
std::optional<double> microseconds(const std::string& word) {
    if (word.empty() || word.find_first_not_of("0123456789") != std::string::npos || word.size() > 15) return std::nullopt;
    const double value = std::stod(word);
    return value > 0 ? std::optional<double>(value) : std::nullopt;
}

// The limit one cgroup directory sets, from v2's cpu.max or else v1's two files.
std::optional<double> limit_in(const fs::path& dir, std::string& file) {
    if (const auto text = first_line(dir / "cpu.max")) {
        file = (dir / "cpu.max").string();
        return parse_cpu_max(*text, file);
    }
    const auto quota = first_line(dir / "cpu.cfs_quota_us"), period = first_line(dir / "cpu.cfs_period_us");
    if (!quota || !period || *quota == "-1") return std::nullopt;
    file = (dir / "cpu.cfs_quota_us").string();
    const auto q = microseconds(*quota), p = microseconds(*period);
    if (!q || !p) reject(file, "\"" + *quota + "\" over a period of \"" + *period + "\"", "-1 or a quota in microseconds");
    return *q / *p;
}

struct CgroupMount {
    std::string mount_point, root;  // where it is mounted, and which cgroup is its top
};

// The cgroup2 mount (v2 = true) or v1's cpu controller's, from /proc/self/mountinfo.
std::optional<CgroupMount> cgroup_mount(bool v2) {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        // id parent major:minor root mount-point options [optional...] - fstype source super-options
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        const std::vector<std::string> before = split(line.substr(0, dash), ' '), after = split(line.substr(dash + 3), ' ');
        if (before.size() < 5 || after.size() < 3) continue;
        if (v2 && after[0] == "cgroup2") return CgroupMount{before[4], before[3]};
        if (!v2 && after[0] == "cgroup") {
            const std::vector<std::string> options = split(after[2], ',');
            if (std::find(options.begin(), options.end(), "cpu") != options.end()) return CgroupMount{before[4], before[3]};
        }
    }
    return std::nullopt;
}

// This process's cgroup in the v2 hierarchy ("0::/path") or v1's cpu controller's.
std::optional<std::string> own_cgroup(bool v2) {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        const auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
        if (v2 && line.compare(0, first, "0") == 0 && controllers.empty()) return path;
        if (!v2) {
            const std::vector<std::string> names = split(controllers, ',');
            if (std::find(names.begin(), names.end(), "cpu") != names.end()) return path;
        }
    }
    return std::nullopt;
}

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

std::optional<double> parse_cpu_max(const std::string& text, const std::string& where) {
    const std::vector<std::string> words = split(text, ' ');
    const auto period = words.size() == 2 ? microseconds(words[1]) : std::nullopt;
    if (period && words[0] == "max") return std::nullopt;
    const auto quota = period ? microseconds(words[0]) : std::nullopt;
    if (!quota) reject(where, "\"" + text + "\"", "\"max PERIOD\" or \"QUOTA PERIOD\" in microseconds");
    return *quota / *period;
}

std::optional<CgroupLimit> cgroup_cpu_limit(const std::string& mount, const std::string& path) {
    std::optional<CgroupLimit> tightest;
    fs::path dir = fs::path(mount) / fs::path(path).relative_path();
    const fs::path top = fs::path(mount).lexically_normal();
    for (;;) {
        std::string file;
        if (const auto cpus = limit_in(dir, file); cpus && (!tightest || *cpus < tightest->cpus))
            tightest = CgroupLimit{*cpus, file};
        if (dir.lexically_normal() == top || !dir.has_relative_path() || dir == dir.parent_path()) break;
        dir = dir.parent_path();
    }
    return tightest;
}

std::optional<CgroupLimit> own_cgroup_cpu_limit() {
    for (const bool v2 : {true, false}) {
        const auto mount = cgroup_mount(v2);
        auto path = own_cgroup(v2);
        if (!mount || !path) continue;
        // Outside a cgroup namespace the path starts with the mount's root; inside one it is
        // already relative to it.
        if (mount->root != "/" && path->rfind(mount->root, 0) == 0) path = path->substr(mount->root.size());
        if (auto limit = cgroup_cpu_limit(mount->mount_point, *path)) return limit;
    }
    return std::nullopt;
}

std::vector<int> affinity_cpus() {
    std::vector<int> cpus;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
    return cpus;
}

CpuBudget cpu_budget() {
    CpuBudget budget;
    budget.affinity = std::max(1, static_cast<int>(affinity_cpus().size()));
    budget.cpus = budget.affinity;
    budget.reason = plural(budget.affinity, "CPU", "CPUs") + " in the affinity mask";
    try {
        if (const auto limit = own_cgroup_cpu_limit()) {
            std::ostringstream text;
            text << limit->cpus;
            const int cpus = std::max(1, static_cast<int>(std::ceil(limit->cpus - 1e-9)));
            if (cpus < budget.cpus) {
                budget.cpus = cpus;
                budget.reason += ", limited to " + text.str() + " by the cgroup (" + limit->file + ")";
            } else {
                budget.reason += "; the cgroup's limit of " + text.str() + " is no tighter (" + limit->file + ")";
            }
        } else {
            budget.reason += "; no cgroup CPU limit";
        }
    } catch (const InputError& error) {
        budget.reason += std::string("; the cgroup's limit not read: ") + error.what();
    }
    return budget;
}

}  // namespace tinyformer
