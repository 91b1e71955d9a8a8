#include "tinyformer/sweep/run_sweep.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tinyformer/engine/cpu_budget.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/sweep/sweep.hpp"
#include "tinyformer/sweep/sweep_report.hpp"
#include "tinyformer/sweep/sweep_runner.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer {

namespace fs = std::filesystem;

namespace {

// The exit code of a training that Ctrl-C stopped once it had saved its checkpoint (errors.hpp).
constexpr int kTrainingInterrupted = 130;

// A sweep ready to run: its spec and runs, checked, and how each of its processes starts.
struct SweepPlan {
    SweepSpec spec;
    std::string out;             // the sweep's directory
    std::vector<SweepRun> runs;
    int jobs = 1;                // processes at once
    int threads = -1;            // per process; -1: train.threads, as the spec's --set gives it
    std::string program;         // this tinyformer executable, which runs each training and inspection
};

// Whether the sweep's --set already fixes train.threads.
bool sets_threads(const SweepSpec& spec) {
    for (const std::string& o : spec.overrides)
        if (o.rfind("train.threads=", 0) == 0) return true;
    return false;
}

// The grid of the request, checked, and its directory claimed: everything that may refuse a
// sweep happens here, before any run starts.
SweepPlan plan_sweep(const SweepRequest& request) {
    SweepPlan plan;
    SweepSpec& spec = plan.spec;
    spec.config_path = request.config_path;
    for (const std::string& vary : request.vary) spec.axes.push_back(parse_sweep_axis(vary));
    spec.overrides = request.overrides;
    const RunConfig base = load_config(request.config_path, request.overrides);
    if (request.inspect && base.data.probes_path.empty())
        throw InputError("sweep --inspect: " + request.config_path +
                         " has no data.probes_path, the probes inspect reads the answers from");
    spec.seeds = request.seeds ? parse_sweep_seeds(*request.seeds) : std::vector<int64_t>{base.train.seed};
    plan.out = request.out.empty() ? (fs::path("sweeps") / base.name).string() : request.out;
    plan.runs = sweep_runs(spec, plan.out);
    check_sweep(spec, plan.runs, request.force);
    claim_sweep_dir(plan.out, spec);

    // Threads per training: as asked, else as --set fixes them, else the CPUs this process may
    // use (affinity mask, cgroup limit) shared out.
    const int cores = cpu_budget().cpus;
    plan.jobs = request.jobs;
    plan.threads = request.threads >= 0 ? request.threads
                   : sets_threads(spec)  ? -1
                                         : std::max(1, cores / request.jobs);
    plan.program = fs::read_symlink("/proc/self/exe").string();
    return plan;
}

// The `tinyformer train` command line of one run: a fresh start, or, when its directory holds
// a train state, its continuation. A continuation keeps the thread count the run started
// with (its config.toml says it), whatever --jobs is now, so it ends bit-identical to a run
// never interrupted; and it names the config as the start did, so even the checkpoints'
// metadata (which spells the data paths as they were given) is the same.
std::vector<std::string> train_command(const SweepPlan& plan, const SweepRun& run, bool resume) {
    int threads = plan.threads;
    if (resume)
        threads = static_cast<int>(load_config((fs::path(run.dir) / "config.toml").string(), {}, false).train.threads);
    std::vector<std::string> argv = {plan.program, "train", "--config", plan.spec.config_path};
    for (const std::string& override_text : run.overrides) argv.insert(argv.end(), {"--set", override_text});
    if (threads >= 0) argv.insert(argv.end(), {"--set", "train.threads=" + std::to_string(threads)});
    argv.insert(argv.end(), {resume ? "--resume" : "--out", run.dir});
    return argv;
}

// The trainings still to run: one per run not finished, resumed where its directory holds a
// train state.
struct Trainings {
    std::vector<SweepJob> jobs;
    std::vector<size_t> job_run;  // the run of each job
    int64_t finished_before = 0;  // runs that were finished before this sweep started
};

Trainings trainings_to_run(const SweepPlan& plan) {
    Trainings trainings;
    int64_t to_resume = 0;
    for (size_t i = 0; i < plan.runs.size(); ++i) {
        const SweepRun& run = plan.runs[i];
        if (fs::exists(fs::path(run.dir) / "summary.json")) {
            ++trainings.finished_before;
            continue;
        }
        const bool resume = fs::exists(fs::path(run.dir) / "train_state.safetensors");
        to_resume += resume;
        fs::create_directories(run.dir);
        trainings.jobs.push_back({train_command(plan, run, resume), (fs::path(run.dir) / "train.log").string()});
        trainings.job_run.push_back(i);
    }
    spdlog::info("sweep {}: {} runs ({} groups × {} seeds), {} finished before, {} to resume; {} at once, {} threads "
                 "each", plan.out, plan.runs.size(), plan.runs.size() / plan.spec.seeds.size(), plan.spec.seeds.size(),
                 trainings.finished_before, to_resume, plan.jobs,
                 plan.threads >= 0 ? std::to_string(plan.threads) : "train.threads");
    return trainings;
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

// How the sweep's processes went, counted as they end.
struct SweepTally {
    int64_t done = 0;    // runs finished, before this sweep or in it
    int64_t failed = 0;  // trainings and inspections that failed
};

// Runs the trainings, plan.jobs at once, each logged as it ends. Returns whether Ctrl-C
// interrupted them.
bool train_runs(const SweepPlan& plan, const Trainings& trainings, SweepTally& tally) {
    std::vector<SweepJobResult> results;
    return run_sweep_jobs(trainings.jobs, plan.jobs, [&](size_t j, const SweepJobResult& result) {
        const SweepRun& run = plan.runs[trainings.job_run[j]];
        const fs::path summary_path = fs::path(run.dir) / "summary.json";
        if (result.exit_code == 0 && fs::exists(summary_path)) {
            ++tally.done;
            std::string result_text = "finished";
            try {
                result_text = one_line_result(nlohmann::json::parse(std::ifstream(summary_path)));
            } catch (const nlohmann::json::exception&) {  // reported by the aggregation below
            }
            spdlog::info("[{}/{}] {} seed={}: {} in {:.1f}s", tally.done, plan.runs.size(), run.group, run.seed,
                         result_text, result.seconds);
        } else if (result.exit_code == kTrainingInterrupted) {
            spdlog::info("{} seed={}: interrupted, its checkpoint kept", run.group, run.seed);
        } else {
            ++tally.failed;
            spdlog::error("{} seed={}: failed (exit {}); see {}", run.group, run.seed, result.exit_code,
                          trainings.jobs[j].log_path);
        }
    }, results);
}

// --inspect: each finished run not inspected yet, after the trainings, as many at once.
// Returns whether Ctrl-C interrupted them.
bool inspect_runs(const SweepPlan& plan, SweepTally& tally) {
    std::vector<SweepJob> inspections;
    std::vector<size_t> inspection_run;
    for (size_t i = 0; i < plan.runs.size(); ++i) {
        const fs::path dir = plan.runs[i].dir;
        if (!fs::exists(dir / "summary.json") || fs::exists(dir / "inspect" / "heads.json")) continue;
        const RunConfig config = load_config((dir / "config.toml").string(), {}, false);
        std::vector<std::string> argv = {plan.program, "inspect", "--checkpoint", dir.string(), "--probes",
                                         config.data.probes_path};
        if (plan.threads >= 0) argv.insert(argv.end(), {"--threads", std::to_string(plan.threads)});
        inspections.push_back({argv, (dir / "inspect.log").string()});
        inspection_run.push_back(i);
    }
    if (!inspections.empty()) spdlog::info("inspecting {} runs", inspections.size());
    std::vector<SweepJobResult> inspected;
    return run_sweep_jobs(inspections, plan.jobs, [&](size_t j, const SweepJobResult& result) {
        const SweepRun& run = plan.runs[inspection_run[j]];
        if (result.exit_code == 0) return;
        if (result.exit_code != kTrainingInterrupted) ++tally.failed;
        spdlog::error("inspecting {} seed={}: exit {}; see {}", run.group, run.seed, result.exit_code,
                      inspections[j].log_path);
    }, inspected);
}

// Aggregates the finished runs under `out`: the table on stdout, the report's files beside the runs.
void report_sweep(const SweepSpec& spec, const std::string& out) {
    const SweepReport report = collect_sweep(spec, out);
    std::fputs(write_sweep_report(report, out).c_str(), stdout);
    spdlog::info("wrote {}/{{sweep.json, sweep.csv, sweep.svg}}", out);
}

}  // namespace

void run_sweep(const SweepRequest& request) {
    const SweepPlan plan = plan_sweep(request);
    if (request.print_commands) {
        for (const SweepRun& run : plan.runs)
            std::printf("%s\n", shell_command(train_command(plan, run, false)).c_str());
        return;
    }
    const Trainings trainings = trainings_to_run(plan);
    SweepTally tally{trainings.finished_before, 0};
    const bool interrupted = train_runs(plan, trainings, tally);
    const bool inspect_interrupted = request.inspect && !interrupted && inspect_runs(plan, tally);
    report_sweep(plan.spec, plan.out);
    const std::string runs = std::to_string(plan.runs.size());
    if (interrupted || inspect_interrupted)
        throw Interrupted("sweep interrupted: " + std::to_string(tally.done) + " of " + runs +
                          " runs finished; the same command continues it");
    if (tally.failed > 0)
        throw std::runtime_error(std::to_string(tally.failed) + " of " + runs +
                                 " runs or their inspections failed; each one's train.log or inspect.log says why");
}

void collect_sweep_dir(const std::string& dir) { report_sweep(read_sweep_spec(dir), dir); }

}  // namespace tinyformer
