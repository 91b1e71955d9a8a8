// A whole sweep, as `tinyformer sweep` runs it: the grid planned and checked, its directory
// claimed, every run not finished trained (a fresh start, or the continuation of an
// interrupted one), with --inspect each finished run inspected, then the results aggregated
// (sweep.hpp is the grid, sweep_runner.hpp the child processes, sweep_report.hpp the report).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

// What the sweep command line asks for.
struct SweepRequest {
    std::string config_path;             // the config every run starts from
    std::vector<std::string> vary;       // "KEY=V1,V2,...", one per axis of the grid
    std::optional<std::string> seeds;    // "S1,S2,...", train.seed of each run of a group; none: the config's
    std::vector<std::string> overrides;  // --set K=V, for every run
    std::string out;                     // the sweep's directory; "" = sweeps/<config name>
    int jobs = 1;                        // trainings (and inspections) at once
    int threads = -1;  // per training; -1 = as --set train.threads= fixes them, else the cores divided by jobs
    bool force = false;                  // run a grid of more than kSweepRunsWithoutForce runs
    bool print_commands = false;         // print one `tinyformer train` command per run, run nothing
    bool inspect = false;                // also inspect each finished run with the config's probes
};

// Runs the sweep and prints its table (stdout), writing DIR/sweep.json, sweep.csv and
// sweep.svg; with print_commands, only prints the runs' command lines. Runs already finished
// are skipped and interrupted ones resumed. Throws InputError for a sweep that cannot start,
// Interrupted after Ctrl-C (every training keeps its checkpoint), std::runtime_error when some
// runs or their inspections failed (after the report of the others).
void run_sweep(const SweepRequest& request);

// Aggregates the finished runs of the sweep in `dir` (sweep --collect): prints the table and
// writes sweep.json, sweep.csv and sweep.svg. Runs nothing.
void collect_sweep_dir(const std::string& dir);

}  // namespace tinyformer
