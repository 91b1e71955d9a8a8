#include "tinyformer/dataset.hpp"

#include <cstdio>

#include <string_view>

#include "tinyformer/errors.hpp"

namespace tinyformer {

namespace {

// Walks a text file's bytes as the characters every text is read as: strict UTF-8, a leading
// byte-order mark dropped, and line ends normalised to '\n' — CRLF and a lone CR, as
// Python's universal newlines do when ../shared/reference/torch_model.py reads a text.
// Calls on_char(c) for each character; stores nothing.
template <class OnChar>
void for_each_text_char(std::string_view bytes, const std::string& source, OnChar&& on_char) {
    size_t i = bytes.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    while (i < bytes.size()) {
        char32_t c = next_utf8_char(bytes, i, source);
        if (c == U'\r') {
            if (i < bytes.size() && bytes[i] == '\n') continue;  // CRLF: the LF comes next
            c = U'\n';
        }
        on_char(c);
    }
}

// The characters a text uses, one flag per Unicode code point (136 KB, however long the text).
using CharSet = std::vector<bool>;
CharSet empty_char_set() { return CharSet(0x110000, false); }

// Counts a text's characters and adds them to `used`.
int64_t scan_text(std::string_view bytes, const std::string& source, CharSet& used) {
    int64_t count = 0;
    for_each_text_char(bytes, source, [&](char32_t c) {
        used[c] = true;
        ++count;
    });
    return count;
}

// The vocabulary of the characters in `used`, sorted by code point (as Vocabulary::from_text).
Vocabulary vocabulary_of(const CharSet& used) {
    std::vector<char32_t> chars;
    for (char32_t c = 0; c < used.size(); ++c)
        if (used[c]) chars.push_back(c);
    return Vocabulary(std::move(chars));
}

// The ids of a text's characters number [from, to), appended to `ids`.
void append_ids(std::string_view bytes, const std::string& source, const Vocabulary& vocab, int64_t from, int64_t to,
                std::vector<int32_t>& ids) {
    int64_t index = 0;
    for_each_text_char(bytes, source, [&](char32_t c) {
        if (index >= from && index < to) {
            const int32_t id = vocab.find(c);
            if (id < 0)
                throw InputError(source + ": character " + describe_char(c) + " at character " +
                                 std::to_string(index) + " is not in the model's " + std::to_string(vocab.size()) +
                                 "-character vocabulary");
            ids.push_back(id);
        }
        ++index;
    });
}

}  // namespace

std::u32string read_text(const std::string& path) {
    const std::string bytes = read_file(path);
    std::u32string text;
    for_each_text_char(bytes, path, [&](char32_t c) { text.push_back(c); });
    return text;
}

std::vector<int32_t> read_ids(const std::string& path, const Vocabulary& vocab) {
    const std::string bytes = read_file(path);
    CharSet used = empty_char_set();
    const int64_t count = scan_text(bytes, path, used);
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(count));
    append_ids(bytes, path, vocab, 0, count, ids);
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

// The texts are read as bytes and turned into ids in two passes (count the characters and
// collect the vocabulary, then encode), so memory holds the bytes and the ids, never the
// characters as well: a 100 MB corpus costs its bytes plus 4 bytes per character.
std::string corpus_fingerprint(const Corpus& corpus) {
    uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a, 64-bit
    auto mix = [&](uint32_t value) {
        for (int byte = 0; byte < 4; ++byte) {
            hash ^= (value >> (8 * byte)) & 0xff;
            hash *= 0x100000001b3ULL;
        }
    };
    for (char32_t c : corpus.vocab.chars()) mix(static_cast<uint32_t>(c));
    mix(0xffffffffu);  // separators: moving the split between train and val changes the hash
    for (int32_t id : corpus.train) mix(static_cast<uint32_t>(id));
    mix(0xffffffffu);
    for (int32_t id : corpus.val) mix(static_cast<uint32_t>(id));
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return hex;
}

Corpus load_corpus(const DataConfig& data) {
    Corpus corpus;
    std::string train_name, val_name;
    CharSet used = empty_char_set();
    if (!data.path.empty()) {
        const std::string bytes = read_file(data.path);
        const int64_t count = scan_text(bytes, data.path, used);
        const int64_t split = static_cast<int64_t>((1.0 - data.val_fraction) * static_cast<double>(count));
        train_name = data.path + " (training part)";
        val_name = data.path + " (validation part)";
        if (split < 2) throw InputError(train_name + ": the training text needs at least 2 characters");
        if (count - split < 2) throw InputError(val_name + ": the validation text needs at least 2 characters");
        corpus.vocab = vocabulary_of(used);
        corpus.train.reserve(static_cast<size_t>(split));
        corpus.val.reserve(static_cast<size_t>(count - split));
        append_ids(bytes, data.path, corpus.vocab, 0, split, corpus.train);
        append_ids(bytes, data.path, corpus.vocab, split, count, corpus.val);
    } else {
        train_name = data.train_path;
        val_name = data.val_path;
        std::string train_bytes = read_file(data.train_path);
        const int64_t train_count = scan_text(train_bytes, train_name, used);
        if (train_count < 2) throw InputError(train_name + ": the training text needs at least 2 characters");
        const std::string val_bytes = read_file(data.val_path);
        const int64_t val_count = scan_text(val_bytes, val_name, used);
        if (val_count < 2) throw InputError(val_name + ": the validation text needs at least 2 characters");
        corpus.vocab = vocabulary_of(used);
        corpus.train.reserve(static_cast<size_t>(train_count));
        corpus.val.reserve(static_cast<size_t>(val_count));
        append_ids(train_bytes, train_name, corpus.vocab, 0, train_count, corpus.train);
        append_ids(val_bytes, val_name, corpus.vocab, 0, val_count, corpus.val);
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

// The windows ids[start .. start+T] for each start: inputs are the first T, targets the last T.
static Batch windows_at(const std::vector<int32_t>& ids, const std::vector<int64_t>& starts, int64_t context) {
    const int64_t batch_size = static_cast<int64_t>(starts.size());
    std::vector<int32_t> inputs(batch_size * context), targets(batch_size * context);
    for (int64_t b = 0; b < batch_size; ++b)
        for (int64_t t = 0; t < context; ++t) {
            inputs[b * context + t] = ids[starts[b] + t];
            targets[b * context + t] = ids[starts[b] + t + 1];
        }
    return {Tensor::ids(inputs, {batch_size, context}), Tensor::ids(targets, {batch_size, context})};
}

static void require_a_window(const std::vector<int32_t>& ids, int64_t context, int64_t extra) {
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n < context + 1 + extra)
        throw InputError("the training text has " + std::to_string(n) + " characters; windows of context + 1 = " +
                         std::to_string(context + 1) + " need at least " + std::to_string(context + 1 + extra));
}

Batch sample_batch(const std::vector<int32_t>& ids, int64_t batch_size, int64_t context, Rng& rng) {
    require_a_window(ids, context, 0);
    const int64_t n = static_cast<int64_t>(ids.size());
    std::vector<int64_t> starts(static_cast<size_t>(batch_size));
    for (int64_t& start : starts) start = static_cast<int64_t>(rng.below(n - context));
    return windows_at(ids, starts, context);
}

Batch sample_batch(const std::vector<int32_t>& ids, int64_t batch_size, int64_t context, TorchRng& rng) {
    require_a_window(ids, context, 1);  // randint's bound n - T - 1 must be at least 1
    const int64_t n = static_cast<int64_t>(ids.size());
    std::vector<int64_t> starts(static_cast<size_t>(batch_size));
    for (int64_t& start : starts) start = rng.randint(n - context - 1);
    return windows_at(ids, starts, context);
}

}  // namespace tinyformer
