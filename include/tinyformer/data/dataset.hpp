// The corpus as ids: the training and validation texts, their shared vocabulary, the
// probes, and random training windows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tinyformer/data/data_config.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/data/token_ids.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/engine/tensor.hpp"
#include "tinyformer/engine/torch_rng.hpp"

namespace tinyformer {

struct Probe {
    std::u32string prompt;
    std::u32string answer;
    std::string kind;  // "who", "colour" or "other", read from the question
};

struct Corpus {
    Vocabulary vocab;            // the sorted distinct characters of train + val
    TokenIds train, val;         // ids, one or two bytes each (token_ids.hpp)
    std::vector<Probe> probes;   // empty without data.probes_path
    std::string train_name, val_name;  // "big.txt (training part)", for messages
    std::string fingerprint;     // corpus_fingerprint's value, computed as the ids were read
};

// Reads the data named by `data`: one text split at 1 - val_fraction, two texts, or a
// directory that `tinyformer prepare` wrote (prepared_data.hpp), whose ids stay in their files.
// A text is read twice, a block at a time: once for its vocabulary and length, once to
// encode it; memory holds the ids (one or two bytes per character), never the text.
// Shows a progress bar (bytes/s) on a terminal when `progress_bar`. Throws InputError
// naming the file (and byte offset, character or key) for anything wrong with the data.
Corpus load_corpus(const DataConfig& data, bool progress_bar = false);

// 64-bit FNV-1a over the vocabulary's characters, the training ids and the validation ids
// (each as 4 little-endian bytes, with a separator between the three), as 16 hex digits:
// a resumed run checks that it continues on the text it started on. The same data gives
// the same value read as a text or as prepared ids.
class CorpusFingerprint {
public:
    void add_vocabulary(const Vocabulary& vocab);
    void add_separator() { add(0xffffffffu); }
    void add(uint32_t value);
    void add_ids(const int32_t* ids, size_t count);
    std::string hex() const;

private:
    uint64_t hash_ = 0xcbf29ce484222325ULL;
};
std::string corpus_fingerprint(const Corpus& corpus);  // from the ids, the slow way: for tests

// "72159 training / 4789 validation characters, vocabulary 79, fingerprint 0123456789abcdef":
// what a train state records of its data, so that --resume can refuse other data.
std::string corpus_description(const Corpus& corpus);

// The two passes load_corpus makes over a corpus's texts, for `tinyformer prepare` too.
struct CorpusScan {
    Vocabulary vocab;
    int64_t train_chars = 0, val_chars = 0;
    int id_bytes = 1;  // id_width(vocab.size())
    std::string train_name, val_name;
};
// Pass 1: the vocabulary and the lengths; checks the UTF-8, the split, and the vocabulary's size.
CorpusScan scan_corpus(const DataConfig& data, bool progress_bar);
// Pass 2: the ids, in order (all the training ids, then the validation ids), handed to
// `on_ids(is_validation, ids)` a block at a time; returns the corpus fingerprint.
std::string encode_corpus(const DataConfig& data, const CorpusScan& scan, bool progress_bar,
                          const std::function<void(bool is_validation, const std::vector<int32_t>& ids)>& on_ids);

// prompt<TAB>answer lines (UTF-8, no header). Throws InputError "<file>:<line>: ...".
std::vector<Probe> load_probes(const std::string& path);

// Reads a text file as characters: strict UTF-8, a leading byte-order mark dropped, line
// ends normalised to '\n' (CRLF and a lone CR, as Python's universal newlines read them).
std::u32string read_text(const std::string& path);
// The same text as ids in `vocab`, without holding its characters. Throws InputError naming
// the file, the first character outside the vocabulary and its position.
TokenIds read_ids(const std::string& path, const Vocabulary& vocab, bool progress_bar = false);

struct Batch {
    Tensor inputs;   // [B,T] i32
    Tensor targets;  // [B,T] i32: the next character of each input position
};

// B windows of T+1 consecutive ids at uniformly random offsets drawn from `rng`.
Batch sample_batch(const TokenIds& ids, int64_t batch_size, int64_t context, Rng& rng);
// The same windows as torch_reference.py train draws them: torch.randint(len(ids) - T - 1, (B,))
// (so never the very last window, as there).
Batch sample_batch(const TokenIds& ids, int64_t batch_size, int64_t context, TorchRng& rng);
// The starts of the windows sample_batch draws, the same draws: for a caller that builds only
// some of them (each process of a data-parallel run builds its share of one batch).
std::vector<int64_t> sample_starts(const TokenIds& ids, int64_t batch_size, int64_t context, Rng& rng);
std::vector<int64_t> sample_starts(const TokenIds& ids, int64_t batch_size, int64_t context, TorchRng& rng);
// The windows ids[start .. start+T] for each start: inputs the first T, targets the last T.
Batch windows_at(const TokenIds& ids, const std::vector<int64_t>& starts, int64_t context);

}  // namespace tinyformer
