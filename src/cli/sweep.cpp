// tinyformer sweep --config FILE --vary KEY=V1,V2,... [--vary ...] [--seeds S1,S2,...] [--set K=V]...
//                  [--jobs N] [--threads T] [--out DIR] [--force] [--print-commands]
// tinyformer sweep --collect DIR
#include <memory>

#include "commands.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/interrupts.hpp"
#include "tinyformer/sweep/run_sweep.hpp"

namespace tinyformer::cli {

Runner add_sweep(CLI::App& app) {
    struct Args {
        SweepRequest request;
        std::string seeds;    // --seeds as given: request.seeds only if it is given (an empty list is an error)
        std::string collect;  // --collect DIR
    };
    auto args = std::make_shared<Args>();
    SweepRequest& request = args->request;
    auto* cmd = app.add_subcommand("sweep",
                                   "Train one config over a grid of settings and seeds; aggregate the results.");
    cmd->add_option("--config", request.config_path, "the TOML config every run starts from");
    cmd->add_option("--vary", request.vary,
                    "a key and its values, e.g. --vary model.n_heads=1,2,4 (repeatable: the grid is the cartesian "
                    "product)");
    cmd->add_option("--seeds", args->seeds,
                    "train.seed of each run of a group, e.g. 1337,1,2,3,4 (default: the config's)");
    cmd->add_option("--set", request.overrides, "override a config key for every run, e.g. --set train.steps=200 "
                                                "(repeatable)");
    cmd->add_option("--jobs", request.jobs, "trainings at once (default 1)")->check(CLI::PositiveNumber);
    cmd->add_option("--threads", request.threads, "threads per training (default: the cores divided by --jobs, unless "
                                                  "--set train.threads= is given)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--out", request.out, "the sweep's directory (default: sweeps/<config name>)");
    cmd->add_flag("--force", request.force, "run a grid of more than 1000 runs");
    cmd->add_flag("--print-commands", request.print_commands,
                  "print one `tinyformer train` command per run instead of running them (for GNU parallel, "
                  "Slurm, ...)");
    cmd->add_flag("--inspect", request.inspect,
                  "also inspect each finished run (tinyformer inspect with the config's probes); the table adds, per "
                  "group, in how many seeds some head reads each answer, and which heads");
    cmd->add_option("--collect", args->collect, "aggregate the finished runs of the sweep in DIR, run nothing")
        ->type_name("DIR");
    cmd->footer(
        "Each run is a normal run directory, DIR/<key=value,...>/seed=<S>/, with its log in train.log. Run again, a\n"
        "sweep skips finished runs and resumes interrupted ones; Ctrl-C stops every training with a checkpoint.\n"
        "Writes DIR/sweep_spec.json, and at the end DIR/sweep.json, sweep.csv and sweep.svg: per group of runs\n"
        "that differ only in their seed, each metric's mean ± sample sd, min-max, n and a 95 % interval.");
    return [cmd, args]() -> int {
        if (!cmd->parsed()) return -1;
        watch_interrupts();  // before any thread starts: Ctrl-C is taken between steps, never by a handler
        SweepRequest& request = args->request;
        if (!args->collect.empty()) {
            if (!request.config_path.empty() || !request.vary.empty() || request.print_commands)
                throw InputError("sweep --collect DIR: give no --config, --vary or --print-commands with it");
            collect_sweep_dir(args->collect);
            return kExitOk;
        }
        if (request.config_path.empty()) throw InputError("sweep: --config FILE is required (or --collect DIR)");
        if (cmd->count("--seeds")) request.seeds = args->seeds;
        run_sweep(request);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
