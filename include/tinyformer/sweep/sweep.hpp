// A sweep: one config trained over a grid of settings and seeds, as Hydra's `--multirun
// key=a,b,c` or a W&B grid sweep does. Every run is a normal run directory,
//   <out>/<key=value,...>/seed=<S>/
// that sample, eval and inspect accept; the grid is the cartesian product of the --vary
// values, times the seeds. This file is the grid and its checks; sweep_runner.hpp runs it,
// sweep_report.hpp aggregates the results.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer {

// One axis of the grid: a config key and the values it takes ("model.n_heads=1,2,4").
struct SweepAxis {
    std::string key;
    std::vector<std::string> values;
};

// What a sweep is: everything that decides its runs' results. (How many run at once and
// with how many threads each is not part of it: a sweep continued with another --jobs is
// the same sweep.)
struct SweepSpec {
    std::string config_path;             // as given on the command line
    std::vector<SweepAxis> axes;         // in the order given
    std::vector<int64_t> seeds;          // train.seed of each run in a group
    std::vector<std::string> overrides;  // --set K=V, for every run
};

// One run of the grid.
struct SweepRun {
    std::vector<std::pair<std::string, std::string>> settings;  // (key, value), one per axis
    int64_t seed = 0;
    std::string group;  // "model.n_heads=2" (axes joined by ','), or "base" with no axes
    std::string dir;    // <out>/<group>/seed=<seed>
    std::vector<std::string> overrides;  // the spec's, then the settings', then train.seed=<seed>
};

// "KEY=V1,V2,...": the key and its values. Throws InputError (one line, naming the
// argument) for a missing '=', an empty key, an empty list or value, or a repeated value.
SweepAxis parse_sweep_axis(const std::string& argument);
// "1337,1,2": the seeds. Throws InputError on an empty list, a non-integer or a repeat.
std::vector<int64_t> parse_sweep_seeds(const std::string& list);

// The runs of the grid, in order: groups in the cartesian order of the axes (the last axis
// fastest), each group's seeds in the order given.
std::vector<SweepRun> sweep_runs(const SweepSpec& spec, const std::string& out_dir);

// The largest grid that runs without --force.
constexpr int64_t kSweepRunsWithoutForce = 1000;

// Everything checkable before any run starts, each a one-line InputError: the same axis twice,
// train.seed as an axis (seeds come from --seeds), a grid over kSweepRunsWithoutForce runs
// unless `force`, and every run's config loaded as `train --config ... --set ...` would load
// it (an unknown key or an invalid value gives --set's own message), and two values of one
// key that give the same config.
void check_sweep(const SweepSpec& spec, const std::vector<SweepRun>& runs, bool force);

// The spec as JSON (<out>/sweep_spec.json), and back; a directory holds one sweep.
nlohmann::json sweep_spec_to_json(const SweepSpec& spec);
SweepSpec sweep_spec_from_json(const nlohmann::json& json, const std::string& file);
// Writes <out>/sweep_spec.json, or, if it is there, checks that it describes `spec`:
// a directory that holds a different sweep is an InputError naming the difference.
void claim_sweep_dir(const std::string& out_dir, const SweepSpec& spec);
// Reads <out>/sweep_spec.json (for --collect). InputError if it is missing or malformed.
SweepSpec read_sweep_spec(const std::string& out_dir);

// A directory name for a group: the settings "key=value" joined by ','; characters other
// than letters, digits and . _ - + = are written %XX, so a value holding '/' stays one name.
std::string sweep_group_name(const std::vector<std::pair<std::string, std::string>>& settings);

}  // namespace tinyformer
