#include "tinyformer/data/dataset.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "tinyformer/data/prepared_data.hpp"
#include "tinyformer/data/text_file.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/progress.hpp"

namespace fs = std::filesystem;

namespace tinyformer {

namespace {

// The characters a text uses, one flag per Unicode code point (136 KB, however long the text).
using CharSet = std::vector<bool>;
CharSet empty_char_set() { return CharSet(0x110000, false); }

// The vocabulary of the characters in `used`, sorted by code point (as Vocabulary::from_text).
Vocabulary vocabulary_of(const CharSet& used) {
    std::vector<char32_t> chars;
    for (char32_t c = 0; c < used.size(); ++c)
        if (used[c]) chars.push_back(c);
    return Vocabulary(std::move(chars));
}

// Each code point's id, -1 outside the vocabulary: a table lookup per character (4.4 MB,
// once), since a hash lookup per character of a gigabyte would take a minute.
std::vector<int32_t> id_table(const Vocabulary& vocab) {
    std::vector<int32_t> id_of(0x110000, -1);
    for (int32_t id = 0; id < vocab.size(); ++id) id_of[vocab.at(id)] = id;
    return id_of;
}

int64_t file_size_or_zero(const std::string& path) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    return error ? 0 : static_cast<int64_t>(size);
}

// The size of the data's texts (one, or training + validation), for progress and messages.
int64_t text_bytes(const DataConfig& data) {
    return data.path.empty() ? file_size_or_zero(data.train_path) + file_size_or_zero(data.val_path)
                             : file_size_or_zero(data.path);
}

// Reads a text a block at a time, counting its characters and adding them to `used`.
int64_t scan_text(const std::string& path, CharSet& used, ProgressBar& progress, int64_t& bytes_before) {
    TextFileReader reader(path);
    std::u32string block;
    int64_t count = 0;
    while (reader.next_block(block)) {
        for (char32_t c : block) used[c] = true;
        count += static_cast<int64_t>(block.size());
        progress.update(bytes_before + reader.bytes_read());
    }
    bytes_before += reader.bytes_read();
    return count;
}

// Reads a text a block at a time and hands over its ids; throws at the first character
// outside the vocabulary (`name` names the text in that message).
void encode_text(const std::string& path, const std::string& name, const Vocabulary& vocab,
                 const std::vector<int32_t>& id_of, ProgressBar& progress, int64_t& bytes_before,
                 const std::function<void(const std::vector<int32_t>&)>& on_ids) {
    TextFileReader reader(path);
    std::u32string block;
    std::vector<int32_t> ids;
    int64_t index = 0;
    while (reader.next_block(block)) {
        ids.resize(block.size());
        for (size_t i = 0; i < block.size(); ++i) {
            ids[i] = id_of[block[i]];
            if (ids[i] < 0) throw InputError(vocab.unknown_char_message(name, block[i], index + i));
        }
        index += static_cast<int64_t>(block.size());
        on_ids(ids);
        progress.update(bytes_before + reader.bytes_read());
    }
    bytes_before += reader.bytes_read();
}

// One line after reading a large text, for logs that have no progress bar.
void log_read(const char* what, int64_t bytes, double seconds) {
    if (bytes < 50'000'000) return;
    spdlog::info("{} {} in {:.1f}s ({}/s)", what, size_str(static_cast<double>(bytes)), seconds,
                 size_str(static_cast<double>(bytes) / std::max(seconds, 1e-9)));
}

}  // namespace

std::string DataConfig::validation_name() const {
    if (!prepared.empty()) return (fs::path(prepared) / "val.bin").string();
    return val_path.empty() ? path + " (validation part)" : val_path;
}

std::u32string read_text(const std::string& path) {
    TextFileReader reader(path);
    std::u32string text, block;
    while (reader.next_block(block)) text += block;
    return text;
}

TokenIds read_ids(const std::string& path, const Vocabulary& vocab, bool progress_bar) {
    const std::vector<int32_t> id_of = id_table(vocab);
    ProgressBar progress("reading " + path, file_size_or_zero(path), ProgressBar::Unit::bytes, progress_bar);
    int64_t bytes = 0;
    TokenIds ids(id_width(vocab.size(), path));
    encode_text(path, path, vocab, id_of, progress, bytes, [&](const std::vector<int32_t>& block) {
        for (int32_t id : block) ids.push_back(id);
    });
    log_read(("read " + path + ":").c_str(), bytes, progress.seconds());
    return ids;
}

static std::string kind_of(const std::u32string& prompt) {
    if (prompt.find(U"颜色") != std::u32string::npos) return "colour";  // …是什么颜色？
    if (prompt.find(U"谁") != std::u32string::npos) return "who";       // 谁…？
    return "other";
}

std::vector<Probe> load_probes(const std::string& path) {
    std::u32string text = read_text(path);
    std::vector<Probe> probes;
    size_t line_start = 0;
    for (int line = 1; line_start < text.size(); ++line) {
        size_t line_end = text.find(U'\n', line_start);
        if (line_end == std::u32string::npos) line_end = text.size();
        std::u32string row = text.substr(line_start, line_end - line_start);
        line_start = line_end + 1;
        if (!row.empty() && row.back() == U'\r') row.pop_back();
        if (row.empty()) continue;
        size_t tab = row.find(U'\t');
        if (tab == std::u32string::npos || row.find(U'\t', tab + 1) != std::u32string::npos)
            throw InputError(path + ":" + std::to_string(line) + ": expected prompt<TAB>answer (exactly one tab)");
        Probe probe{row.substr(0, tab), row.substr(tab + 1), ""};
        if (probe.prompt.empty() || probe.answer.empty())
            throw InputError(path + ":" + std::to_string(line) + ": empty prompt or answer");
        probe.kind = kind_of(probe.prompt);
        probes.push_back(std::move(probe));
    }
    return probes;
}

void CorpusFingerprint::add(uint32_t value) {
    constexpr uint64_t prime = 0x100000001b3ULL;
    constexpr uint64_t prime_cubed = prime * prime * prime;  // modulo 2^64, as the hash multiplies
    if (value < 256) {  // the three zero bytes only multiply (x ^ 0 = x): the same hash, faster
        hash_ = (hash_ ^ value) * prime;
        hash_ *= prime_cubed;
        return;
    }
    for (int byte = 0; byte < 4; ++byte) {
        hash_ ^= (value >> (8 * byte)) & 0xff;
        hash_ *= prime;
    }
}

void CorpusFingerprint::add_vocabulary(const Vocabulary& vocab) {
    for (char32_t c : vocab.chars()) add(static_cast<uint32_t>(c));
}

void CorpusFingerprint::add_ids(const int32_t* ids, size_t count) {
    for (size_t i = 0; i < count; ++i) add(static_cast<uint32_t>(ids[i]));
}

std::string CorpusFingerprint::hex() const {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash_));
    return hex;
}

std::string corpus_fingerprint(const Corpus& corpus) {
    CorpusFingerprint fingerprint;
    fingerprint.add_vocabulary(corpus.vocab);
    fingerprint.add_separator();  // moving the split between train and val changes the hash
    const std::vector<int32_t> train = corpus.train.to_vector(), val = corpus.val.to_vector();
    fingerprint.add_ids(train.data(), train.size());
    fingerprint.add_separator();
    fingerprint.add_ids(val.data(), val.size());
    return fingerprint.hex();
}

std::string corpus_description(const Corpus& corpus) {
    return std::to_string(corpus.train.size()) + " training / " + std::to_string(corpus.val.size()) +
           " validation characters, vocabulary " + std::to_string(corpus.vocab.size()) + ", fingerprint " +
           corpus.fingerprint;
}

CorpusScan scan_corpus(const DataConfig& data, bool progress_bar) {
    CorpusScan scan;
    CharSet used = empty_char_set();
    const bool one_text = !data.path.empty();
    ProgressBar progress("reading " + (one_text ? data.path : data.train_path), text_bytes(data), ProgressBar::Unit::bytes,
                         progress_bar);
    int64_t bytes = 0;
    if (one_text) {
        const int64_t count = scan_text(data.path, used, progress, bytes);
        scan.train_chars = static_cast<int64_t>((1.0 - data.val_fraction) * static_cast<double>(count));
        scan.val_chars = count - scan.train_chars;
        scan.train_name = data.path + " (training part)";
        scan.val_name = data.path + " (validation part)";
    } else {
        scan.train_name = data.train_path;
        scan.val_name = data.val_path;
        scan.train_chars = scan_text(data.train_path, used, progress, bytes);
        scan.val_chars = scan_text(data.val_path, used, progress, bytes);
    }
    if (scan.train_chars < 2) throw InputError(scan.train_name + ": the training text needs at least 2 characters");
    if (scan.val_chars < 2) throw InputError(scan.val_name + ": the validation text needs at least 2 characters");
    scan.vocab = vocabulary_of(used);
    scan.id_bytes = id_width(scan.vocab.size(), one_text ? data.path : data.train_path + " and " + data.val_path);
    log_read("scanned", bytes, progress.seconds());
    return scan;
}

std::string encode_corpus(const DataConfig& data, const CorpusScan& scan, bool progress_bar,
                          const std::function<void(bool is_validation, const std::vector<int32_t>& ids)>& on_ids) {
    const std::vector<int32_t> id_of = id_table(scan.vocab);
    CorpusFingerprint fingerprint;
    fingerprint.add_vocabulary(scan.vocab);
    fingerprint.add_separator();
    const bool one_text = !data.path.empty();
    ProgressBar progress("encoding " + (one_text ? data.path : data.train_path), text_bytes(data), ProgressBar::Unit::bytes,
                         progress_bar);
    int64_t bytes = 0;
    if (one_text) {
        int64_t index = 0;  // of the block's first character in the text
        bool in_validation = false;
        std::vector<int32_t> part;
        encode_text(data.path, data.path, scan.vocab, id_of, progress, bytes, [&](const std::vector<int32_t>& ids) {
            const int64_t n = static_cast<int64_t>(ids.size());
            const int64_t in_train = std::clamp<int64_t>(scan.train_chars - index, 0, n);  // the block's training ids
            if (in_train > 0) {
                part.assign(ids.begin(), ids.begin() + in_train);
                fingerprint.add_ids(part.data(), part.size());
                on_ids(false, part);
            }
            if (in_train < n) {
                if (!in_validation) fingerprint.add_separator();  // the split: once, where validation starts
                in_validation = true;
                part.assign(ids.begin() + in_train, ids.end());
                fingerprint.add_ids(part.data(), part.size());
                on_ids(true, part);
            }
            index += n;
        });
    } else {
        encode_text(data.train_path, data.train_path, scan.vocab, id_of, progress, bytes,
                    [&](const std::vector<int32_t>& ids) {
                        fingerprint.add_ids(ids.data(), ids.size());
                        on_ids(false, ids);
                    });
        fingerprint.add_separator();
        encode_text(data.val_path, data.val_path, scan.vocab, id_of, progress, bytes,
                    [&](const std::vector<int32_t>& ids) {
                        fingerprint.add_ids(ids.data(), ids.size());
                        on_ids(true, ids);
                    });
    }
    log_read("encoded", bytes, progress.seconds());
    return fingerprint.hex();
}

Corpus load_corpus(const DataConfig& data, bool progress_bar) {
    Corpus corpus;
    if (!data.prepared.empty()) {
        corpus = load_prepared(data.prepared);
    } else {
        const CorpusScan scan = scan_corpus(data, progress_bar);
        corpus.vocab = scan.vocab;
        corpus.train_name = scan.train_name;
        corpus.val_name = scan.val_name;
        corpus.train = TokenIds(scan.id_bytes);
        corpus.val = TokenIds(scan.id_bytes);
        corpus.train.reserve(scan.train_chars);
        corpus.val.reserve(scan.val_chars);
        corpus.fingerprint = encode_corpus(data, scan, progress_bar, [&](bool is_validation, const std::vector<int32_t>& ids) {
            TokenIds& into = is_validation ? corpus.val : corpus.train;
            for (int32_t id : ids) into.push_back(id);
        });
        const int64_t bytes = text_bytes(data);
        if (bytes >= 100'000'000)
            spdlog::info("{} of text is read and encoded at every start; `tinyformer prepare` writes its ids once, for "
                         "data.prepared to read (docs/large-corpora.md)",
                         size_str(static_cast<double>(bytes)));
    }
    if (!data.probes_path.empty()) {
        corpus.probes = load_probes(data.probes_path);
        for (const Probe& probe : corpus.probes) {  // every probe character must be known
            corpus.vocab.encode(probe.prompt, data.probes_path);
            corpus.vocab.encode(probe.answer, data.probes_path);
        }
    }
    return corpus;
}

Batch windows_at(const TokenIds& ids, const std::vector<int64_t>& starts, int64_t context) {
    const int64_t batch_size = static_cast<int64_t>(starts.size());
    std::vector<int32_t> window(static_cast<size_t>(context + 1));
    std::vector<int32_t> inputs(batch_size * context), targets(batch_size * context);
    for (int64_t b = 0; b < batch_size; ++b) {
        ids.copy_to(starts[b], context + 1, window.data());
        std::copy(window.begin(), window.end() - 1, inputs.begin() + b * context);
        std::copy(window.begin() + 1, window.end(), targets.begin() + b * context);
    }
    return {Tensor::ids(inputs, {batch_size, context}), Tensor::ids(targets, {batch_size, context})};
}

static void require_a_window(const TokenIds& ids, int64_t context, int64_t extra) {
    const int64_t n = ids.size();
    if (n < context + 1 + extra)
        throw InputError("the training text has " + std::to_string(n) + " characters; windows of context + 1 = " +
                         std::to_string(context + 1) + " need at least " + std::to_string(context + 1 + extra));
}

std::vector<int64_t> sample_starts(const TokenIds& ids, int64_t batch_size, int64_t context, Rng& rng) {
    require_a_window(ids, context, 0);
    const int64_t n = ids.size();
    std::vector<int64_t> starts(static_cast<size_t>(batch_size));
    for (int64_t& start : starts) start = static_cast<int64_t>(rng.below(n - context));
    return starts;
}

std::vector<int64_t> sample_starts(const TokenIds& ids, int64_t batch_size, int64_t context, TorchRng& rng) {
    require_a_window(ids, context, 1);  // randint's bound n - T - 1 must be at least 1
    const int64_t n = ids.size();
    std::vector<int64_t> starts(static_cast<size_t>(batch_size));
    for (int64_t& start : starts) start = rng.randint(n - context - 1);
    return starts;
}

Batch sample_batch(const TokenIds& ids, int64_t batch_size, int64_t context, Rng& rng) {
    return windows_at(ids, sample_starts(ids, batch_size, context, rng), context);
}

Batch sample_batch(const TokenIds& ids, int64_t batch_size, int64_t context, TorchRng& rng) {
    return windows_at(ids, sample_starts(ids, batch_size, context, rng), context);
}

}  // namespace tinyformer
