// Run configuration: TOML files (parsed with toml++) plus `--set section.key=value`
// overrides, validated before anything runs. Every key has a default documented here and
// in README.md; configs/*.toml only state what differs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tinyformer/data/data_config.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

struct TrainConfig {
    int64_t steps = 2000;
    int64_t batch_size = 32;
    int64_t eval_every = 200;     // validation loss every N steps (and at the end); 0 = only at the end
    int64_t eval_windows = 64;    // validation windows per periodic evaluation, evenly spaced (without eval_batches)
    int64_t checkpoint_every = 0; // save model + train state every N steps; 0 = at evaluations and the end
    int64_t seed = 1337;          // initialisation and batch sampling
    int64_t threads = 0;          // the split (engine/threads.hpp); 0 = the CPUs this process may use
    std::string rng = "tinyformer"; // whose random stream: "tinyformer" (rng.hpp) or "torch" (torch_rng.hpp)
    int64_t eval_batches = 0;     // > 0: each evaluation scores this many batches of random validation windows
    std::string final_eval = "full"; // the end's val_loss: "full" validation text, or "sampled" as the evaluations
    std::string precision = "float32"; // the training step's matrix products: "float32" or "bf16" (mixed_precision.hpp)
    std::string exchange = "auto";     // under mpirun, when gradients are summed: "auto", "overlap", "after" (step.hpp)
};

struct OptimConfig {
    double lr = 1e-3;           // peak learning rate, after warm-up
    double min_lr = 1e-4;       // end of the cosine decay
    int64_t warmup_steps = 100; // linear warm-up
    double weight_decay = 0.1;  // AdamW, decoupled, on matrices only (not biases, norms)
    double beta1 = 0.9;
    double beta2 = 0.99;
    double eps = 1e-8;
    double grad_clip = 1.0;     // global-norm clipping; 0 = off
};

struct LoggingConfig {
    int64_t log_every = 50;   // a progress line every N steps
    bool progress_bar = true; // a live bar when stderr is a terminal
};

struct RunConfig {
    std::string name = "run";  // default: the config file's stem; names runs/<name>
    ModelConfig model{.vocab_size = 0};  // vocab_size 0 (the default) = taken from the corpus
    DataConfig data;
    TrainConfig train;
    OptimConfig optim;
    LoggingConfig logging;
};

// Reads `path`, applies `overrides` ("section.key=value", the value in TOML syntax or a bare
// string), validates every key and value, and resolves data paths: paths in the file are
// relative to the file's directory, paths given with --set relative to the working
// directory (stored lexically normal: configs/../corpus/x.txt becomes corpus/x.txt).
// `name` defaults to the file's stem. Throws InputError, one line:
//   "<file>:<line>:<col>: <section.key>: <what>, expected <what> (did you mean <nearest>?)"
// with "--set <text>" in place of the file position for an override's value.
// `check_files` also requires that the data files exist.
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {},
                      bool check_files = true);

// The resolved configuration, every key present: as TOML (config.toml in the run
// directory) and as JSON (the checkpoint's `config` metadata).
// config_to_toml(config) writes the data paths absolute, so the file loads from anywhere;
// given `toml_path`, the file it is going to be written to (e.g. runs/lesson12/config.toml),
// it writes them relative to that file's directory, so load_config(toml_path) gives back
// exactly `config`. (Absolute paths stay absolute; if `toml_path` is absolute or starts
// with "..", relative paths are written absolute.)
std::string config_to_toml(const RunConfig& config);
std::string config_to_toml(const RunConfig& config, const std::string& toml_path);
nlohmann::json config_to_json(const RunConfig& config);
// Back from the JSON (as stored in a checkpoint); missing keys keep their defaults. Throws
// InputError "<section.key>: <what>, expected <what>" on a wrong type or an impossible
// value (the caller names the file).
RunConfig config_from_json(const nlohmann::json& json);

// Every valid key, dotted ("name", "model.d_model", ...), in the order they are documented.
std::vector<std::string> config_keys();
// A Markdown table of every key, its default and what it means (README.md, --help).
std::string config_reference();

}  // namespace tinyformer
