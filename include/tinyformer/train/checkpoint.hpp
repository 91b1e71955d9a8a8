// Checkpoints: safetensors files, exactly as ../shared/docs/model-contract.md says, written
// atomically (a temporary file, flushed, renamed over the old one), and read with every
// field validated before anything is allocated.
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
#include "tinyformer/engine/tensor.hpp"
#include "tinyformer/model/model.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer {

// Writes `bytes` to `path` so that `path` is always either the old file or the whole new
// one: temporary file in the same directory, write, fsync, rename, fsync the directory.
// Throws std::runtime_error naming the path (disk full, unwritable directory, ...).
void write_file_atomic(const std::string& path, std::string_view bytes);
// The same, for a file made of several pieces written one after the other (a large file's
// parts straight from where they live, never copied into one string first).
void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces);
// write_file_atomic in two halves, for files that must change together. The constructor
// writes and flushes the temporary (and throws, leaving `path` untouched, if it cannot);
// commit() renames it over `path` and flushes the directory. A StagedFile destroyed
// uncommitted removes its temporary. Write every file of a set first, then commit them:
// a full disk then changes none of them.
class StagedFile {
public:
    StagedFile(const std::string& path, const std::vector<std::string_view>& pieces);
    StagedFile(StagedFile&& other) noexcept
        : path_(std::move(other.path_)), directory_(std::move(other.directory_)),
          temporary_(std::exchange(other.temporary_, std::string())) {}
    StagedFile(const StagedFile&) = delete;
    StagedFile& operator=(const StagedFile&) = delete;
    StagedFile& operator=(StagedFile&&) = delete;
    ~StagedFile();
    void commit();

private:
    std::string path_;       // the file to replace
    std::string directory_;  // its directory, flushed after the rename
    std::string temporary_;  // ".<name>.tmp.<pid>" beside it; empty once committed
};
// Removes the temporaries that killed writers left in `directory` (".<name>.tmp.<pid>" whose
// process is gone); the files they were replacing are intact. Errors are ignored.
void remove_stale_temporaries(const std::string& directory);

// ---- safetensors, generic ----
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsFile {
    std::map<std::string, std::string> metadata;  // __metadata__
    NamedTensors tensors;                         // F32 tensors, in file order
};

// The file's bytes: 8-byte little-endian header length N, N bytes of compact JSON
// (`__metadata__` first, then the tensors in the given order, each with dtype "F32", shape
// and data_offsets), padded with spaces to a multiple of 8, then the raw little-endian data
// in the same order. Tensors must be f32.
std::string safetensors_bytes(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata);
// The first 8 + N of those bytes: the length and the header.
std::string safetensors_header(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata);
// write_file_atomic of safetensors_bytes, with each tensor's data written from the tensor
// itself: a checkpoint never needs a second copy of the weights and moments in memory.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata);
// The same, staged: written and flushed, not yet renamed over `path` (see StagedFile).
StagedFile stage_safetensors(const std::string& path, const NamedTensors& tensors,
                             const std::map<std::string, std::string>& metadata);
// Reads and validates (header length against the file size, JSON, dtypes, shapes, offsets
// in bounds, contiguous and non-overlapping, data size exact). Throws InputError
// "<path>: <what>, expected <what>".
SafetensorsFile read_safetensors(const std::string& path);

// ---- model checkpoints ----
struct LoadedModel {
    std::unique_ptr<Transformer> model;
    Vocabulary vocab;
    RunConfig config;      // the resolved run configuration it was trained with
    int64_t step = 0;      // the optimizer step the weights belong to
    std::string path;      // the .safetensors file actually read
    std::string run_dir;   // its directory
};

// model.safetensors: every parameter under its contract name, and __metadata__ with
// format "tinyformer/1", config (JSON of the run config), vocab (JSON array of the
// characters in id order) and step.
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
