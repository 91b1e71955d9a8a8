// tinyformer: train, sample, evaluate and inspect tiny character-level transformers.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.hpp"
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
            std::string text = tinyformer::version_text();
            text.pop_back();  // CLI11 ends the line itself
            return text;
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
    try {
        for (const Runner& run : runners) {
            int code = run();
            if (code >= 0) return code;
        }
    } catch (const tinyformer::InputError& e) {
        std::fprintf(stderr, "tinyformer: error: %s\n", e.what());
        return kExitUsage;
    } catch (const tinyformer::Interrupted& e) {
        std::fprintf(stderr, "tinyformer: %s\n", e.what());
        return kExitInterrupted;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tinyformer: error: %s\n", e.what());
        return kExitFailure;
    }
    return kExitUsage;
}
