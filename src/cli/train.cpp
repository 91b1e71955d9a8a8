// tinyformer train --config FILE [--set K=V]... [--out DIR] [--resume DIR] [--force]
#include <filesystem>
#include <memory>

#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/inspect/training_roles.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/interrupts.hpp"
#include "tinyformer/train/config.hpp"
#include "tinyformer/train/trainer.hpp"

namespace tinyformer::cli {

namespace fs = std::filesystem;

Runner add_train(CLI::App& app) {
    struct Args {
        std::string config, out, resume;
        std::vector<std::string> overrides;
        bool force = false;
        EngineOptions engine;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("train", "Train a model from a TOML config; writes a run directory.");
    cmd->add_option("--config", args->config, "the TOML config file (with --resume: defaults to DIR/config.toml)");
    cmd->add_option("--set", args->overrides, "override a config key, e.g. --set train.steps=200 (repeatable)");
    cmd->add_option("--out", args->out, "the run directory (default: runs/<config name>)");
    cmd->add_option("--resume", args->resume, "continue the run in DIR where it stopped");
    cmd->add_flag("--force", args->force, "start afresh even if the run directory holds a run");
    add_engine_options(cmd, args->engine);
    cmd->footer("Writes config.toml, metrics.jsonl, loss.svg, model.safetensors, train_state.safetensors and "
                "summary.json.\nCtrl-C saves a checkpoint; --resume continues with bit-identical results.\n\n"
                "Config keys (section.key, default, meaning):\n" + config_reference());
    return [cmd, args]() -> int {
        if (!cmd->parsed()) return -1;
        // Before any thread starts (MPI's too): Ctrl-C is taken between steps, never by a
        // handler. Under a launcher, SIGTERM and SIGUSR1 as well (see interrupts.hpp).
        const Launch launch = launch_from_environment();
        watch_interrupts(launch.size > 1);
        init_process_group();  // MPI, when launched as one of several processes
        if (!is_writer()) spdlog::set_level(spdlog::level::err);  // the log is rank 0's
        if (args->config.empty() && args->resume.empty())
            throw InputError("train: --config FILE is required (or --resume DIR)");
        std::string config_path = args->config;
        if (config_path.empty()) config_path = (fs::path(args->resume) / "config.toml").string();
        TrainOptions options;
        run_on_every_rank([&] {  // a rank that cannot read its config stops them all
            options.config = load_config(config_path, args->overrides);
            apply_engine_options(args->engine, static_cast<int>(options.config.train.threads), launch.local_size);
        });
        options.roles = training_roles_of_probes;  // metrics.jsonl's "roles" at each evaluation
        options.resume = !args->resume.empty();
        options.overwrite = args->force;
        if (options.resume && !args->out.empty() && fs::path(args->out) != fs::path(args->resume))
            throw InputError("train: --out and --resume name different directories");
        options.run_dir = !args->resume.empty() ? args->resume
                          : !args->out.empty()  ? args->out
                                                : (fs::path("runs") / options.config.name).string();
        train(options);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
