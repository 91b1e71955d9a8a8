// The corpus as ids: the training and validation texts, their shared vocabulary, the
// probes, and random training windows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/config.hpp"
#include "tinyformer/rng.hpp"
#include "tinyformer/tensor.hpp"
#include "tinyformer/text.hpp"
#include "tinyformer/torch_rng.hpp"

namespace tinyformer {

struct Probe {
    std::u32string prompt;
    std::u32string answer;
    std::string kind;  // "who", "colour" or "other", read from the question
};

struct Corpus {
    Vocabulary vocab;              // the sorted distinct characters of train + val
    std::vector<int32_t> train;    // ids
    std::vector<int32_t> val;
    std::vector<Probe> probes;     // empty without data.probes_path
};

// Reads and decodes the data files named by `data` (one text split at 1 - val_fraction, or
// two texts), as read_text reads a text, keeping only the ids: memory holds a file's bytes
// and 4 bytes per character, no other copy. Throws InputError naming the file.
Corpus load_corpus(const DataConfig& data);

// 64-bit FNV-1a over the vocabulary's characters, the training ids and the validation ids,
// as 16 hex digits: a resumed run checks that it continues on the text it started on.
std::string corpus_fingerprint(const Corpus& corpus);

// prompt<TAB>answer lines (UTF-8, no header). Throws InputError "<file>:<line>: ...".
std::vector<Probe> load_probes(const std::string& path);

// Reads a text file as characters: strict UTF-8, a leading byte-order mark dropped, line
// ends normalised to '\n' (CRLF and a lone CR, as Python's universal newlines read them).
std::u32string read_text(const std::string& path);
// The same text as ids in `vocab`, without holding its characters. Throws InputError naming
// the file, the first character outside the vocabulary and its position.
std::vector<int32_t> read_ids(const std::string& path, const Vocabulary& vocab);

struct Batch {
    Tensor inputs;   // [B,T] i32
    Tensor targets;  // [B,T] i32: the next character of each input position
};

// B windows of T+1 consecutive ids at uniformly random offsets drawn from `rng`.
Batch sample_batch(const std::vector<int32_t>& ids, int64_t batch_size, int64_t context, Rng& rng);
// The same windows as torch_model.py train draws them: torch.randint(len(ids) - T - 1, (B,))
// (so never the very last window, as there).
Batch sample_batch(const std::vector<int32_t>& ids, int64_t batch_size, int64_t context, TorchRng& rng);

}  // namespace tinyformer
