// safetensors files: named f32 tensors and string metadata, the format of checkpoints
// (train/checkpoint.hpp) and of `tinyformer grads`. Written atomically, read with every
// field validated before anything is allocated.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/engine/tensor.hpp"
#include "tinyformer/support/atomic_write.hpp"

namespace tinyformer {

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

}  // namespace tinyformer
