// tinyformer: train, sample, evaluate and inspect tiny character-level transformers.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/engine/build_info.hpp"
#include "tinyformer/engine/kernel_targets.hpp"
#include "tinyformer/support/errors.hpp"

int main(int argc, char** argv) {
    using namespace tinyformer::cli;
    spdlog::set_default_logger(spdlog::stderr_color_mt("tinyformer"));
    spdlog::set_pattern("[%H:%M:%S] %v");
    try {  // before anything runs a kernel, and before --version names the target
        tinyformer::use_kernel_target_from_environment();
    } catch (const tinyformer::InputError& e) {
        std::fprintf(stderr, "tinyformer: error: %s\n", e.what());
        return kExitUsage;
    }
    CLI::App app{"tinyformer: a from-scratch trainer for tiny character-level transformers", "tinyformer"};
    app.require_subcommand(1);
    app.set_version_flag(
        "--version",
        [] {
            std::string text = tinyformer::version_text() + "MPI: " + tinyformer::mpi_library();
            return text;  // CLI11 ends the line itself
        },
        "Print the version, the instruction sets oneDNN and the own kernels use, and the compiler.");
    app.footer("Exit codes: 0 success, 1 runtime failure, 2 usage/config/input error, 130 interrupted.\n"
               "Environment: TINYFORMER_ISA=avx2 (or sse4, avx512, ...) runs the own kernels on that instruction\n"
               "set instead of the best this CPU has.");
    std::vector<Runner> runners = {add_train(app), add_sample(app), add_eval(app), add_grads(app), add_gradcheck(app),
                                   add_bench(app), add_inspect(app), add_serve(app), add_lesson(app),
                                   add_prepare(app), add_sweep(app), add_completion(app)};
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    } catch (const CLI::ParseError& e) {  // one line, like every other error
        const std::vector<std::string> args(argv + 1, argv + argc);
        std::fprintf(stderr, "tinyformer: error: %s\n", usage_error_message(app, e, args).c_str());
        return kExitUsage;
    }
    // With several processes (mpirun), a failure all of them share (GroupFailure, a Ctrl-C) is
    // printed by rank 0 alone and ends each one in turn; one that struck this process alone
    // is printed with its rank and stops the others too (abort_process_group).
    using tinyformer::rank, tinyformer::world_size;
    auto finish = [](int code) {
        tinyformer::finish_process_group();
        return code;
    };
    auto report = [&](const char* what, const std::string& message) {
        if (world_size() > 1 && rank() > 0) std::fprintf(stderr, "tinyformer: rank %d: %s%s\n", rank(), what, message.c_str());
        else std::fprintf(stderr, "tinyformer: %s%s\n", what, message.c_str());
    };
    try {
        for (const Runner& run : runners) {
            int code = run();
            if (code >= 0) return finish(code);
        }
    } catch (const tinyformer::GroupFailure& e) {
        if (rank() == 0) std::fprintf(stderr, "tinyformer: error: %s\n", e.what());
        return finish(e.exit_code);
    } catch (const tinyformer::Interrupted& e) {  // every process stopped at the same step
        if (rank() == 0) std::fprintf(stderr, "tinyformer: %s\n", e.what());
        return finish(kExitInterrupted);
    } catch (const std::exception& e) {
        report("error: ", e.what());
        if (world_size() > 1) tinyformer::abort_process_group(tinyformer::exit_code_of(e));
        return finish(tinyformer::exit_code_of(e));
    }
    return kExitUsage;
}
