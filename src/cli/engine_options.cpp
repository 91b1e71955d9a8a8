// --backend and --threads, shared by train, eval, sample and bench.
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "commands.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/cpu_budget.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer::cli {

void add_engine_options(CLI::App* cmd, EngineOptions& options) {
    cmd->add_option("--backend", options.backend, "numeric kernels: onednn (default, fast) or reference (Eigen, for checking)");
    cmd->add_option("--threads", options.threads, "threads the work is split for (default: the config's train.threads, else the CPUs this process may use; fewer run while other processes hold CPUs)")
        ->check([](const std::string& value) {  // a negative count is an error, not "unset"
            return value.rfind('-', 0) == 0 ? "expected 0 (the CPUs this process may use) or more, got " + value : std::string();
        });
}

void apply_engine_options(const EngineOptions& options, int config_threads, int processes_here) {
    if (options.backend == "onednn") set_backend(make_onednn_backend());
    else if (options.backend == "reference") set_backend(make_reference_backend());
    else throw InputError("--backend: \"" + options.backend + "\", expected onednn or reference");
    int threads = options.threads >= 0 ? options.threads : config_threads;
    if (threads < 0) throw InputError("--threads: " + std::to_string(threads) + ", expected 0 (the CPUs this process may use) or more");
    // Several processes of one run on this machine (mpirun -np N) share its CPUs. A launcher
    // that bound each to CPUs of its own left a narrower affinity mask, which the budget
    // already counts; one that did not leaves each the whole machine, of which it takes its share.
    if (threads == 0 && processes_here > 1) {
        const CpuBudget budget = cpu_budget();
        if (budget.affinity >= sysconf(_SC_NPROCESSORS_ONLN)) threads = std::max(1, budget.cpus / processes_here);
    }
    set_num_threads(threads);
}

}  // namespace tinyformer::cli
