#include "tinyformer/model/sampler.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/model/decoder.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

// A number as its shortest text that reads back the same: 1.5, -1, 0.25.
static std::string number_text(double value) {
    char text[32];
    const auto [end, error] = std::to_chars(text, text + sizeof text, value);
    return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

std::string sample_options_problem(const SampleOptions& options, int64_t vocab_size, int64_t max_new_limit,
                                   const SampleOptionNames& names) {
    if (options.max_new < 1 || options.max_new > max_new_limit)
        return names.max_new + ": " + std::to_string(options.max_new) + ", expected an integer 1.." +
               std::to_string(max_new_limit);
    if (!(options.temperature >= 0) || !std::isfinite(options.temperature))
        return names.temperature + ": " + number_text(options.temperature) + ", expected a number >= 0";
    if (options.top_k < 0 || options.top_k > vocab_size)
        return names.top_k + ": " + std::to_string(options.top_k) + ", expected an integer 0.." +
               std::to_string(vocab_size) + " (0 = all)";
    if (!(options.top_p > 0 && options.top_p <= 1))
        return names.top_p + ": " + number_text(options.top_p) + ", expected a number in (0, 1]";
    return "";
}

std::vector<double> next_char_distribution(const std::vector<double>& logits, double temperature, int64_t top_k,
                                           double top_p) {
    const size_t V = logits.size();
    std::vector<double> probs(V, 0.0);
    if (temperature == 0) {  // greedy
        probs[std::max_element(logits.begin(), logits.end()) - logits.begin()] = 1.0;
        return probs;
    }
    size_t kept = (top_k > 0 && static_cast<size_t>(top_k) < V) ? static_cast<size_t>(top_k) : V;
    if (kept == V && top_p >= 1.0) {  // nothing filtered: the softmax of logits / temperature
        const double max = *std::max_element(logits.begin(), logits.end());
        double sum = 0;
        for (size_t v = 0; v < V; ++v) sum += probs[v] = std::exp((logits[v] - max) / temperature);
        for (double& p : probs) p /= sum;
        return probs;
    }
    // Ids from most to least likely (ties by id, so the order is deterministic).
    std::vector<size_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });

    const double max = logits[order[0]];
    double sum = 0;
    for (size_t r = 0; r < kept; ++r) sum += probs[order[r]] = std::exp((logits[order[r]] - max) / temperature);
    for (size_t r = 0; r < kept; ++r) probs[order[r]] /= sum;
    if (top_p < 1.0) {  // the smallest prefix whose mass reaches top_p
        double mass = 0;
        size_t nucleus = 0;
        while (nucleus < kept && mass < top_p) mass += probs[order[nucleus++]];
        for (size_t r = nucleus; r < kept; ++r) probs[order[r]] = 0;
        for (size_t r = 0; r < nucleus; ++r) probs[order[r]] /= mass;
    }
    return probs;
}

int32_t draw(const std::vector<double>& probabilities, Rng& rng) {
    const double u = rng.uniform();
    double cumulative = 0;
    int32_t last_possible = 0;
    for (size_t i = 0; i < probabilities.size(); ++i) {
        if (probabilities[i] <= 0) continue;
        cumulative += probabilities[i];
        last_possible = static_cast<int32_t>(i);
        if (u < cumulative) return last_possible;
    }
    return last_possible;  // rounding left u just above the total
}

static std::vector<double> last_row(const Tensor& logits) {  // logits [1,Tn,V] → row Tn-1
    const int64_t V = logits.dim(-1), Tn = logits.dim(1);
    std::vector<double> row(V);
    for (int64_t v = 0; v < V; ++v) row[v] = logits.at((Tn - 1) * V + v);
    return row;
}

static std::vector<int32_t> prompt_ids(const Vocabulary& vocab, const std::u32string& prompt) {
    if (prompt.empty()) throw InputError("prompt: empty; give at least one character to continue");
    return vocab.encode(prompt, "prompt");
}

static Tensor as_batch(const std::vector<int32_t>& ids, size_t from) {  // ids[from..] → [1,n]
    std::vector<int32_t> window(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end());
    return Tensor::ids(window, {1, static_cast<int64_t>(window.size())});
}

static bool ends_with(const std::u32string& text, const std::u32string& tail) {
    return !tail.empty() && text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::u32string generate(const Transformer& model, const Vocabulary& vocab, const std::u32string& prompt,
                        const SampleOptions& options, Rng& rng, const std::function<void(char32_t)>& on_char) {
    Decoder decoder(model);
    return generate(decoder, vocab, prompt, options, rng, on_char);
}

std::u32string generate(Decoder& decoder, const Vocabulary& vocab, const std::u32string& prompt,
                        const SampleOptions& options, Rng& rng, const std::function<void(char32_t)>& on_char) {
    const size_t T = static_cast<size_t>(decoder.config().context);
    const bool rolls = options.cache == KvCache::rolling && decoder.config().positions == "rope";
    std::vector<int32_t> ids = prompt_ids(vocab, prompt);
    // Prefill: the prompt's last T characters, all positions at once.
    const size_t prompt_window = std::min(ids.size(), T);
    const std::vector<float>* cached_logits =
        &decoder.prefill(ids.data() + ids.size() - prompt_window, static_cast<int64_t>(prompt_window));
    std::vector<double> logits(cached_logits->begin(), cached_logits->end());  // [V], for the next character

    std::u32string generated;
    for (int64_t n = 0; n < options.max_new; ++n) {
        int32_t next = draw(next_char_distribution(logits, options.temperature, options.top_k, options.top_p), rng);
        ids.push_back(next);
        generated.push_back(vocab.at(next));
        if (on_char) on_char(vocab.at(next));
        if (ends_with(generated, options.stop) || n + 1 == options.max_new) break;
        if (rolls || decoder.length() < static_cast<int64_t>(T)) {
            cached_logits = &decoder.step(next);  // one position: O(T)
            logits.assign(cached_logits->begin(), cached_logits->end());
        } else {  // the window is full: recompute the last T characters, at positions 0..T-1
            cached_logits = &decoder.prefill(ids.data() + ids.size() - T, static_cast<int64_t>(T));
            logits.assign(cached_logits->begin(), cached_logits->end());
        }
    }
    return generated;
}

std::u32string generate_uncached(const Transformer& model, const Vocabulary& vocab, const std::u32string& prompt,
                                 const SampleOptions& options, Rng& rng) {
    NoGradScope no_grad;
    const size_t T = static_cast<size_t>(model.config().context);
    std::vector<int32_t> ids = prompt_ids(vocab, prompt);
    std::u32string generated;
    for (int64_t n = 0; n < options.max_new; ++n) {
        Tensor logits = model.forward(as_batch(ids, ids.size() - std::min(ids.size(), T)));
        int32_t next = draw(next_char_distribution(last_row(logits), options.temperature, options.top_k,
                                                   options.top_p), rng);
        ids.push_back(next);
        generated.push_back(vocab.at(next));
        if (ends_with(generated, options.stop)) break;
    }
    return generated;
}

}  // namespace tinyformer
