#include "tinyformer/engine/threads.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "tinyformer/engine/cpu_budget.hpp"
#include "tinyformer/engine/cpu_load.hpp"

namespace tinyformer {

namespace {

// The steps' thread's: OpenMP's thread count is a per-thread setting (omp_set_num_threads sets
// the calling thread's), and a training's steps run on the thread that set the count, which
// alone share_cores acts for (`serve`'s request threads run ops at the same time).
std::atomic<std::thread::id> steps_thread;
int split_threads = 1;
int budget_cpus = 1;  // cpu_budget()'s, read by set_num_threads
int running = 1;
bool forced = false;
CpuReading last_reading;

void run_on(int threads) {
    running = threads;
    omp_set_num_threads(threads);
}

}  // namespace

void set_num_threads(int n) {
    steps_thread = std::this_thread::get_id();
    budget_cpus = cpu_budget().cpus;
    split_threads = n > 0 ? n : budget_cpus;
    forced = false;
    // More threads than CPUs would wait for each other as on a busy machine: the parts are
    // split as asked, and run on no more threads than there are CPUs.
    run_on(std::min(split_threads, budget_cpus));
    last_reading = read_cpu_load();
}

int num_threads() { return split_threads; }
int running_threads() { return running; }

void force_running_threads(int n) {
    forced = n > 0;
    run_on(forced ? std::min(n, split_threads) : std::min(split_threads, budget_cpus));
    last_reading = read_cpu_load();
}

int threads_to_run(double free_cpus, int running, int split) {
    // Step down as soon as others hold half a CPU of the ones we run on; step up only when a
    // whole one is left with room to spare (0.7), so that a reading's noise (/proc/stat counts
    // in 10 ms ticks) does not flip the count at every reading.
    int threads = running;
    if (free_cpus < running - 0.5) threads = static_cast<int>(std::floor(free_cpus + 0.5));
    else if (free_cpus >= running + 0.7) threads = static_cast<int>(std::floor(free_cpus + 0.3));
    return std::clamp(threads, 1, split);
}

void share_cores() {
    if (split_threads == 1 || forced || std::this_thread::get_id() != steps_thread.load()) return;
    // The clock first: a lesson step takes about a millisecond, and reading /proc/stat at every
    // one would cost a few percent of it.
    if (steady_seconds() - last_reading.wall_s < kShareIntervalSeconds) return;
    const CpuReading now = read_cpu_load();
    const double others = others_cpus(last_reading, now);
    last_reading = now;
    if (others < 0) return;  // no /proc/stat: keep what runs
    // The CPUs left: those of the mask that others do not hold, and never more than the budget
    // (a cgroup's limit caps the time, not the CPUs the threads may run on).
    const double free = std::min(static_cast<double>(now.cpus) - others, static_cast<double>(budget_cpus));
    const int threads = threads_to_run(free, running, split_threads);
    if (threads != running) run_on(threads);
}

}  // namespace tinyformer
