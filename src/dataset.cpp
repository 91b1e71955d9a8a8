#include "tinyformer/dataset.hpp"

#include "tinyformer/errors.hpp"

namespace tinyformer {

std::u32string read_text(const std::string& path) {
    std::u32string text = decode_utf8(read_file(path), path);
    if (!text.empty() && text[0] == U'\uFEFF') text.erase(0, 1);  // a byte-order mark is not text
    return text;
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

Corpus load_corpus(const DataConfig& data) {
    std::u32string train_text, val_text;
    std::string train_name, val_name;
    if (!data.path.empty()) {
        std::u32string text = read_text(data.path);
        size_t split = static_cast<size_t>((1.0 - data.val_fraction) * static_cast<double>(text.size()));
        train_text = text.substr(0, split);
        val_text = text.substr(split);
        train_name = data.path + " (training part)";
        val_name = data.path + " (validation part)";
    } else {
        train_text = read_text(data.train_path);
        val_text = read_text(data.val_path);
        train_name = data.train_path;
        val_name = data.val_path;
    }
    if (train_text.size() < 2) throw InputError(train_name + ": the training text needs at least 2 characters");
    if (val_text.size() < 2) throw InputError(val_name + ": the validation text needs at least 2 characters");

    Corpus corpus;
    corpus.vocab = Vocabulary::from_text(train_text + val_text);
    corpus.train = corpus.vocab.encode(train_text, train_name);
    corpus.val = corpus.vocab.encode(val_text, val_name);
    if (!data.probes_path.empty()) {
        corpus.probes = load_probes(data.probes_path);
        for (const Probe& probe : corpus.probes) {  // every probe character must be known
            corpus.vocab.encode(probe.prompt, data.probes_path);
            corpus.vocab.encode(probe.answer, data.probes_path);
        }
    }
    return corpus;
}

Batch sample_batch(const std::vector<int32_t>& ids, int64_t batch_size, int64_t context, Rng& rng) {
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n < context + 1)
        throw InputError("the training text has " + std::to_string(n) + " characters; windows of context + 1 = " +
                         std::to_string(context + 1) + " need at least that many");
    std::vector<int32_t> inputs(batch_size * context), targets(batch_size * context);
    for (int64_t b = 0; b < batch_size; ++b) {
        const int64_t start = static_cast<int64_t>(rng.below(n - context));  // window ids[start .. start+T]
        for (int64_t t = 0; t < context; ++t) {
            inputs[b * context + t] = ids[start + t];
            targets[b * context + t] = ids[start + t + 1];
        }
    }
    return {Tensor::ids(inputs, {batch_size, context}), Tensor::ids(targets, {batch_size, context})};
}

}  // namespace tinyformer
