// Checkpoints: safetensors files (engine/safetensors.hpp), exactly as
// docs/model.md says, written atomically and read with every field
// validated before anything is allocated.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinyformer/data/text.hpp"
#include "tinyformer/engine/safetensors.hpp"
#include "tinyformer/engine/tensor.hpp"
#include "tinyformer/model/model.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer {

struct LoadedModel {
    std::unique_ptr<Transformer> model;
    Vocabulary vocab;
    RunConfig config;      // the resolved run configuration it was trained with; its data
                           // paths as seen from the working directory
    int64_t step = 0;      // the optimizer step the weights belong to
    std::string path;      // the .safetensors file actually read
    std::string run_dir;   // its directory
    DataConfig data_as_stored;  // the data paths as the file holds them (for messages)
};

// "" when every file of `which` the run's config names is where it says; else one line
// naming the first that is gone, as stored and as tried: "runs/x/model.safetensors:
// data.val_path ../../corpus/val.txt (from runs/x): no such file corpus/val.txt".
enum class DataFiles { corpus, probes };
std::string missing_data_file(const LoadedModel& loaded, DataFiles which);

// model.safetensors: every parameter under its contract name, and __metadata__ with
// format "tinyformer/1", config (JSON of the run config, its data paths relative to the
// file's folder, which data_paths says), vocab (JSON array of the characters in id order)
// and step.
void save_model(const std::string& path, const Transformer& model, const Vocabulary& vocab, const RunConfig& config,
                int64_t step);
// The same, staged, for the trainer: it commits the model and its training state together.
StagedFile stage_model(const std::string& path, const Transformer& model, const Vocabulary& vocab,
                       const RunConfig& config, int64_t step);
// `path` is a .safetensors file or a run directory (then <dir>/model.safetensors). Checks
// names, shapes against the config, the vocabulary against vocab_size, and that every
// weight is finite. Throws InputError naming the file and what is wrong.
LoadedModel load_model(const std::string& path);

// ---- the pieces load_model checks with, for train_state.safetensors too ----
// Throws InputError "<path>: tensor <name> has 2 NaN values and 1 infinite value (the first
// at element 7), expected finite weights" unless every value is finite.
void check_finite(const std::string& path, const std::string& name, const Tensor& tensor);
// __metadata__.config as a validated run configuration; InputError naming `path` if it is
// missing, not JSON, or holds a wrong type or an impossible value.
RunConfig checkpoint_config(const std::string& path, const std::map<std::string, std::string>& metadata);
// __metadata__.<key> as an unsigned decimal integer (digits only, fits 64 bits), else InputError.
uint64_t metadata_integer(const std::string& path, const std::map<std::string, std::string>& metadata,
                          const std::string& key);

}  // namespace tinyformer
