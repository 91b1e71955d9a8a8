// One function per subcommand: each registers its options on the CLI11 app and returns a
// runner that does the work once parsing succeeded (and returns -1 if its subcommand was
// not the one given).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace tinyformer::cli {

// Exit codes: 0 success, 1 runtime failure, 2 usage / config / input error, 130 interrupted.
constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitInterrupted = 130;

using Runner = std::function<int()>;

// The one-line message for a command line CLI11 refused (`args`: argv without the program
// name): an unknown subcommand or option is named, with the valid one nearest to it.
std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error,
                                const std::vector<std::string>& args);

// --backend onednn|reference and --threads N (threads -1 = not given on the command line).
struct EngineOptions {
    std::string backend = "onednn";
    int threads = -1;
};
void add_engine_options(CLI::App* cmd, EngineOptions& options);
// Selects the backend and the thread count (the command line's, else `config_threads`;
// 0 = the CPUs this process may use, engine/cpu_budget.hpp).
// With `processes_here` > 1 (processes of one run on this machine, under mpirun) and no
// thread count given, each takes its share of the CPUs, unless the launcher bound it to its own.
void apply_engine_options(const EngineOptions& options, int config_threads = 0, int processes_here = 1);

Runner add_gradcheck(CLI::App& app);
Runner add_train(CLI::App& app);
Runner add_sample(CLI::App& app);
Runner add_eval(CLI::App& app);
Runner add_grads(CLI::App& app);
Runner add_inspect(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_serve(CLI::App& app);
Runner add_lesson(CLI::App& app);
Runner add_prepare(CLI::App& app);
Runner add_sweep(CLI::App& app);
Runner add_completion(CLI::App& app);

}  // namespace tinyformer::cli
