// tinyformer sweep --config FILE --vary KEY=V1,V2,... [--vary ...] [--seeds S1,S2,...] [--set K=V]...
//                  [--jobs N] [--threads T] [--out DIR] [--force] [--print-commands]
// tinyformer sweep --collect DIR
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "commands.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/sweep/sweep.hpp"
#include "tinyformer/sweep/sweep_report.hpp"
#include "tinyformer/sweep/sweep_runner.hpp"
#include "tinyformer/train/config.hpp"
#include "tinyformer/train/trainer.hpp"

namespace tinyformer::cli {

namespace fs = std::filesystem;

namespace {

struct Args {
    std::string config, out, collect, seeds;
    std::vector<std::string> vary, overrides;
    int jobs = 1, threads = -1;
    bool force = false, print_commands = false, inspect = false;
};

// Whether the sweep's --set already fixes train.threads.
bool sets_threads(const SweepSpec& spec) {
    for (const std::string& o : spec.overrides)
        if (o.rfind("train.threads=", 0) == 0) return true;
    return false;
}

// The `tinyformer train` command line of one run: a fresh start, or, when its directory holds
// a train state, its continuation. A continuation keeps the thread count the run started
// with (its config.toml says it), whatever --jobs is now, so it ends bit-identical to a run
// never interrupted; and it names the config as the start did, so even the checkpoints'
// metadata (which spells the data paths as they were given) is the same.
std::vector<std::string> train_command(const std::string& program, const SweepSpec& spec, const SweepRun& run,
                                       int threads, bool resume) {
    if (resume) threads = static_cast<int>(load_config((fs::path(run.dir) / "config.toml").string(), {}, false).train.threads);
    std::vector<std::string> argv = {program, "train", "--config", spec.config_path};
    for (const std::string& override_text : run.overrides) argv.insert(argv.end(), {"--set", override_text});
    if (threads >= 0) argv.insert(argv.end(), {"--set", "train.threads=" + std::to_string(threads)});
    argv.insert(argv.end(), {resume ? "--resume" : "--out", run.dir});
    return argv;
}

std::string one_line_result(const nlohmann::json& summary) {
    char line[160];
    const double loss = summary_metric(summary, "val_loss"), probes = summary_metric(summary, "probe_accuracy");
    std::snprintf(line, sizeof line, "val loss %.4f", loss);
    std::string text = line;
    if (std::isfinite(probes)) {
        std::snprintf(line, sizeof line, ", probes %.1f %%", 100 * probes);
        text += line;
    }
    return text;
}

int collect(const std::string& dir) {
    const SweepSpec spec = read_sweep_spec(dir);
    const SweepReport report = collect_sweep(spec, dir);
    std::fputs(write_sweep_report(report, dir).c_str(), stdout);
    spdlog::info("wrote {}/{{sweep.json, sweep.csv, sweep.svg}}", dir);
    return kExitOk;
}

}  // namespace

Runner add_sweep(CLI::App& app) {
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("sweep", "Train one config over a grid of settings and seeds; aggregate the results.");
    cmd->add_option("--config", args->config, "the TOML config every run starts from");
    cmd->add_option("--vary", args->vary, "a key and its values, e.g. --vary model.n_heads=1,2,4 (repeatable: the grid is "
                                          "the cartesian product)");
    cmd->add_option("--seeds", args->seeds, "train.seed of each run of a group, e.g. 1337,1,2,3,4 (default: the config's)");
    cmd->add_option("--set", args->overrides, "override a config key for every run, e.g. --set train.steps=200 (repeatable)");
    cmd->add_option("--jobs", args->jobs, "trainings at once (default 1)")->check(CLI::PositiveNumber);
    cmd->add_option("--threads", args->threads, "threads per training (default: the cores divided by --jobs, unless "
                                                "--set train.threads= is given)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--out", args->out, "the sweep's directory (default: sweeps/<config name>)");
    cmd->add_flag("--force", args->force, "run a grid of more than 1000 runs");
    cmd->add_flag("--print-commands", args->print_commands,
                  "print one `tinyformer train` command per run instead of running them (for GNU parallel, Slurm, ...)");
    cmd->add_flag("--inspect", args->inspect,
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
        if (!args->collect.empty()) {
            if (!args->config.empty() || !args->vary.empty() || args->print_commands)
                throw InputError("sweep --collect DIR: give no --config, --vary or --print-commands with it");
            return collect(args->collect);
        }
        if (args->config.empty()) throw InputError("sweep: --config FILE is required (or --collect DIR)");

        SweepSpec spec;
        spec.config_path = args->config;
        for (const std::string& vary : args->vary) spec.axes.push_back(parse_sweep_axis(vary));
        spec.overrides = args->overrides;
        const RunConfig base = load_config(args->config, args->overrides);
        if (args->inspect && base.data.probes_path.empty())
            throw InputError("sweep --inspect: " + args->config +
                             " has no data.probes_path, the probes inspect reads the answers from");
        spec.seeds = cmd->count("--seeds") ? parse_sweep_seeds(args->seeds) : std::vector<int64_t>{base.train.seed};
        const std::string out = args->out.empty() ? (fs::path("sweeps") / base.name).string() : args->out;
        const std::vector<SweepRun> runs = sweep_runs(spec, out);
        check_sweep(spec, runs, args->force);
        claim_sweep_dir(out, spec);

        // Threads per training: as asked, else as --set fixes them, else the cores shared out.
        const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        const int threads = args->threads >= 0 ? args->threads
                            : sets_threads(spec) ? -1
                                                 : std::max(1, cores / args->jobs);
        const std::string program = fs::read_symlink("/proc/self/exe").string();

        if (args->print_commands) {
            for (const SweepRun& run : runs)
                std::printf("%s\n", shell_command(train_command(program, spec, run, threads, false)).c_str());
            return kExitOk;
        }

        std::vector<SweepJob> jobs;
        std::vector<size_t> job_run;  // the run of each job
        int64_t finished_before = 0, to_resume = 0;
        for (size_t i = 0; i < runs.size(); ++i) {
            const SweepRun& run = runs[i];
            if (fs::exists(fs::path(run.dir) / "summary.json")) {
                ++finished_before;
                continue;
            }
            const bool resume = fs::exists(fs::path(run.dir) / "train_state.safetensors");
            to_resume += resume;
            fs::create_directories(run.dir);
            jobs.push_back({train_command(program, spec, run, threads, resume), (fs::path(run.dir) / "train.log").string()});
            job_run.push_back(i);
        }
        spdlog::info("sweep {}: {} runs ({} groups × {} seeds), {} finished before, {} to resume; {} at once, {} threads "
                     "each", out, runs.size(), runs.size() / spec.seeds.size(), spec.seeds.size(), finished_before,
                     to_resume, args->jobs, threads >= 0 ? std::to_string(threads) : "train.threads");
        int64_t done = finished_before, failed = 0;
        std::vector<SweepJobResult> results;
        const bool interrupted = run_sweep_jobs(jobs, args->jobs, [&](size_t j, const SweepJobResult& result) {
            const SweepRun& run = runs[job_run[j]];
            const fs::path summary_path = fs::path(run.dir) / "summary.json";
            if (result.exit_code == 0 && fs::exists(summary_path)) {
                ++done;
                std::string result_text = "finished";
                try {
                    result_text = one_line_result(nlohmann::json::parse(std::ifstream(summary_path)));
                } catch (const nlohmann::json::exception&) {  // reported by the aggregation below
                }
                spdlog::info("[{}/{}] {} seed={}: {} in {:.1f}s", done, runs.size(), run.group, run.seed, result_text,
                             result.seconds);
            } else if (result.exit_code == kExitInterrupted) {
                spdlog::info("{} seed={}: interrupted, its checkpoint kept", run.group, run.seed);
            } else {
                ++failed;
                spdlog::error("{} seed={}: failed (exit {}); see {}", run.group, run.seed, result.exit_code,
                              jobs[j].log_path);
            }
        }, results);

        // --inspect: each finished run not inspected yet, after the trainings, as many at once.
        bool inspect_interrupted = false;
        if (args->inspect && !interrupted) {
            std::vector<SweepJob> inspections;
            std::vector<size_t> inspection_run;
            for (size_t i = 0; i < runs.size(); ++i) {
                const fs::path dir = runs[i].dir;
                if (!fs::exists(dir / "summary.json") || fs::exists(dir / "inspect" / "heads.json")) continue;
                const RunConfig config = load_config((dir / "config.toml").string(), {}, false);
                std::vector<std::string> argv = {program, "inspect", "--checkpoint", dir.string(), "--probes",
                                                 config.data.probes_path};
                if (threads >= 0) argv.insert(argv.end(), {"--threads", std::to_string(threads)});
                inspections.push_back({argv, (dir / "inspect.log").string()});
                inspection_run.push_back(i);
            }
            if (!inspections.empty()) spdlog::info("inspecting {} runs", inspections.size());
            std::vector<SweepJobResult> inspected;
            inspect_interrupted = run_sweep_jobs(inspections, args->jobs, [&](size_t j, const SweepJobResult& result) {
                const SweepRun& run = runs[inspection_run[j]];
                if (result.exit_code == 0) return;
                if (result.exit_code != kExitInterrupted) ++failed;
                spdlog::error("inspecting {} seed={}: exit {}; see {}", run.group, run.seed, result.exit_code,
                              inspections[j].log_path);
            }, inspected);
        }

        const SweepReport report = collect_sweep(spec, out);
        std::fputs(write_sweep_report(report, out).c_str(), stdout);
        spdlog::info("wrote {}/{{sweep.json, sweep.csv, sweep.svg}}", out);
        if (interrupted || inspect_interrupted)
            throw Interrupted("sweep interrupted: " + std::to_string(done) + " of " + std::to_string(runs.size()) +
                              " runs finished; the same command continues it");
        if (failed > 0)
            throw std::runtime_error(std::to_string(failed) + " of " + std::to_string(runs.size()) +
                                     " runs or their inspections failed; each one's train.log or inspect.log says why");
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
