// tinyformer: train, sample, evaluate and inspect tiny character-level transformers.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
    using namespace tinyformer::cli;
    CLI::App app{"tinyformer: a from-scratch trainer for tiny character-level transformers"};
    app.require_subcommand(1);
    std::vector<Runner> runners = {add_gradcheck(app)};
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? kExitOk : kExitUsage;
    }
    try {
        for (const Runner& run : runners) {
            int code = run();
            if (code >= 0) return code;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tinyformer: error: %s\n", e.what());
        return kExitFailure;
    }
    return kExitUsage;
}
