// Training: the loop, its logging, checkpoints and resumption.
//
// A run directory holds config.toml (resolved), metrics.jsonl, loss.svg, model.safetensors,
// train_state.safetensors and, at the end, summary.json. Every file is written atomically.
// train_state.safetensors alone is enough to resume: the weights, AdamW's moments, the step
// and the batch sampler's random state, in one file, so they can never disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/model/model.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer {

struct StepReport {
    int64_t step = 0;  // steps taken
    double loss = 0;   // this step's training loss
    double lr = 0;     // its learning rate
    std::optional<double> val_loss;  // when this step ended with an evaluation
};

struct TrainOptions {
    RunConfig config;
    std::string run_dir;      // where the run's files go
    bool resume = false;      // continue the run in run_dir from its train_state.safetensors
    bool overwrite = false;   // start afresh even if run_dir holds a run
    // Measured at every evaluation (on rank 0) and recorded in the metrics row as "roles",
    // unless it returns null: how the heads' roles form. The CLI passes inspect's
    // training_roles_of_probes; train itself knows nothing of heads' roles.
    std::function<nlohmann::json(const Transformer&, const Vocabulary&, const std::vector<Probe>&)> roles{};
    // Called on rank 0 after every step (the Python module's train(on_step=...)): the step
    // just taken, its loss and learning rate, and after an evaluation its validation loss.
    // What it throws stops the run there (no checkpoint is written for it).
    std::function<void(const StepReport&)> on_step{};
};

// Trains, writes the run directory, and returns summary.json's contents. Throws InputError
// for problems the user can fix before training (exit 2), std::runtime_error for failures
// during it (a non-finite loss, a failed write: exit 1). Ctrl-C saves a checkpoint and
// throws Interrupted (errors.hpp).
nlohmann::json train(const TrainOptions& options);

}  // namespace tinyformer
