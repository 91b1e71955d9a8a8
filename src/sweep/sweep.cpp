#include "tinyformer/sweep/sweep.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "tinyformer/data/text.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/split.hpp"
#include "tinyformer/train/checkpoint.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer {

namespace fs = std::filesystem;

SweepAxis parse_sweep_axis(const std::string& argument) {
    const std::string where = "--vary " + argument;
    const size_t equals = argument.find('=');
    if (equals == std::string::npos) throw InputError(where + ": expected KEY=V1,V2,...");
    SweepAxis axis{argument.substr(0, equals), {}};
    if (axis.key.empty()) throw InputError(where + ": no key before '=', expected KEY=V1,V2,...");
    const std::string list = argument.substr(equals + 1);
    if (list.empty()) throw InputError(where + ": no values after '=', expected KEY=V1,V2,...");
    for (const std::string_view piece : split(list, ',')) {
        const std::string value(piece);
        if (value.empty()) throw InputError(where + ": an empty value, expected values between the commas");
        if (std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end())
            throw InputError(where + ": " + value + " is given twice");
        axis.values.push_back(value);
    }
    return axis;
}

std::vector<int64_t> parse_sweep_seeds(const std::string& list) {
    const std::string where = "--seeds " + list;
    if (list.empty()) throw InputError("--seeds: an empty list, expected seeds such as 1337,1,2");
    std::vector<int64_t> seeds;
    for (const std::string_view piece_view : split(list, ',')) {
        const std::string piece(piece_view);
        size_t used = 0;
        int64_t seed = 0;
        try {
            seed = std::stoll(piece, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (piece.empty() || used != piece.size() || seed < 0)
            throw InputError(where + ": \"" + piece + "\" is not a seed, expected a non-negative integer");
        if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end())
            throw InputError(where + ": " + piece + " is given twice");
        seeds.push_back(seed);
    }
    return seeds;
}

std::string sweep_group_name(const std::vector<std::pair<std::string, std::string>>& settings) {
    if (settings.empty()) return "base";
    std::string name;
    for (const auto& [key, value] : settings) {
        if (!name.empty()) name += ',';
        for (unsigned char c : key + "=" + value) {
            if (std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == '=') {
                name += static_cast<char>(c);
            } else {
                char escaped[4];
                std::snprintf(escaped, sizeof escaped, "%%%02X", c);
                name += escaped;
            }
        }
    }
    return name;
}

std::vector<SweepRun> sweep_runs(const SweepSpec& spec, const std::string& out_dir) {
    // Groups: the cartesian product of the axes, counted like an odometer (the last axis fastest).
    std::vector<std::vector<std::pair<std::string, std::string>>> groups(1);
    for (const SweepAxis& axis : spec.axes) {
        std::vector<std::vector<std::pair<std::string, std::string>>> longer;
        for (const auto& settings : groups)
            for (const std::string& value : axis.values) {
                auto more = settings;
                more.emplace_back(axis.key, value);
                longer.push_back(std::move(more));
            }
        groups = std::move(longer);
    }
    std::vector<SweepRun> runs;
    for (const auto& settings : groups)
        for (int64_t seed : spec.seeds) {
            SweepRun run;
            run.settings = settings;
            run.seed = seed;
            run.group = sweep_group_name(settings);
            run.dir = (fs::path(out_dir) / run.group / ("seed=" + std::to_string(seed))).string();
            run.overrides = spec.overrides;
            for (const auto& [key, value] : settings) run.overrides.push_back(key + "=" + value);
            run.overrides.push_back("train.seed=" + std::to_string(seed));
            runs.push_back(std::move(run));
        }
    return runs;
}

void check_sweep(const SweepSpec& spec, const std::vector<SweepRun>& runs, bool force) {
    std::set<std::string> keys;
    for (const SweepAxis& axis : spec.axes) {
        if (axis.key == "train.seed")
            throw InputError("--vary train.seed: the seeds are given with --seeds, e.g. --seeds 1337,1,2");
        if (!keys.insert(axis.key).second) throw InputError("--vary " + axis.key + ": the key is varied twice");
    }
    if (static_cast<int64_t>(runs.size()) > kSweepRunsWithoutForce && !force)
        throw InputError("sweep: the grid has " + std::to_string(runs.size()) + " runs, more than " +
                         std::to_string(kSweepRunsWithoutForce) + "; check --vary and --seeds, or add --force");
    // Every run's config, as its `train` would load it: an unknown key or a bad value fails
    // here with --set's message, before anything runs. Two values of a key that resolve to
    // the same config (1e-3 and 0.001) would make two groups of the same runs.
    std::map<std::string, std::string> group_of_config;
    for (const SweepRun& run : runs) {
        const RunConfig config = load_config(spec.config_path, run.overrides);
        auto [found, inserted] = group_of_config.emplace(config_to_toml(config), run.group);
        if (!inserted && found->second != run.group)
            throw InputError("--vary: groups " + found->second + " and " + run.group +
                             " give the same config; give each value once");
    }
}

nlohmann::json sweep_spec_to_json(const SweepSpec& spec) {
    nlohmann::json axes = nlohmann::json::array();
    for (const SweepAxis& axis : spec.axes) axes.push_back({{"key", axis.key}, {"values", axis.values}});
    return {{"config", spec.config_path}, {"vary", axes}, {"seeds", spec.seeds}, {"set", spec.overrides}};
}

SweepSpec sweep_spec_from_json(const nlohmann::json& json, const std::string& file) {
    try {
        SweepSpec spec;
        spec.config_path = json.at("config").get<std::string>();
        for (const auto& axis : json.at("vary"))
            spec.axes.push_back({axis.at("key").get<std::string>(), axis.at("values").get<std::vector<std::string>>()});
        spec.seeds = json.at("seeds").get<std::vector<int64_t>>();
        spec.overrides = json.at("set").get<std::vector<std::string>>();
        return spec;
    } catch (const nlohmann::json::exception& e) {
        throw InputError(file + ": not a sweep description (" + std::string(e.what()) + ")");
    }
}

static std::string spec_path(const std::string& out_dir) { return (fs::path(out_dir) / "sweep_spec.json").string(); }

SweepSpec read_sweep_spec(const std::string& out_dir) {
    const std::string path = spec_path(out_dir);
    if (!fs::exists(path)) throw InputError(out_dir + ": no sweep_spec.json, so not a sweep's directory");
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(read_file(path));
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(path + ": not valid JSON at byte " + std::to_string(e.byte));
    }
    return sweep_spec_from_json(json, path);
}

// What differs between two specs, in words ("" when they are the same sweep).
static std::string spec_difference(const SweepSpec& held, const SweepSpec& asked) {
    auto axes_text = [](const SweepSpec& spec) { return sweep_spec_to_json(spec).at("vary").dump(); };
    if (held.config_path != asked.config_path) return "--config " + held.config_path + ", not " + asked.config_path;
    if (axes_text(held) != axes_text(asked)) return "--vary " + axes_text(held) + ", not " + axes_text(asked);
    if (held.seeds != asked.seeds) return "--seeds " + nlohmann::json(held.seeds).dump() + ", not " +
                                          nlohmann::json(asked.seeds).dump();
    if (held.overrides != asked.overrides) return "--set " + nlohmann::json(held.overrides).dump() + ", not " +
                                                  nlohmann::json(asked.overrides).dump();
    return "";
}

void claim_sweep_dir(const std::string& out_dir, const SweepSpec& spec) {
    const std::string path = spec_path(out_dir);
    if (fs::exists(path)) {
        const std::string difference = spec_difference(read_sweep_spec(out_dir), spec);
        if (!difference.empty())
            throw InputError(out_dir + " holds a different sweep (" + difference +
                             "); give another --out, or repeat that sweep's arguments to continue it");
        return;
    }
    std::error_code error;
    fs::create_directories(out_dir, error);
    if (error) throw InputError(out_dir + ": cannot create the sweep directory: " + error.message());
    if (!fs::is_empty(out_dir))
        throw InputError(out_dir + " holds files but no sweep_spec.json; give an empty or new --out");
    write_file_atomic(path, sweep_spec_to_json(spec).dump(2) + "\n");
}

}  // namespace tinyformer
