#include "tinyformer/evaluate.hpp"

#include <cmath>

#include "tinyformer/autograd.hpp"
#include "tinyformer/ops.hpp"
#include "tinyformer/sampler.hpp"

namespace tinyformer {

// Sum of cross-entropies (not the mean) of the windows starting at `starts`, all of length
// `length` + 1 ids, in one batch.
static double window_loss_sum(const Transformer& model, const std::vector<int32_t>& ids,
                              const std::vector<int64_t>& starts, int64_t length) {
    const int64_t B = static_cast<int64_t>(starts.size());
    std::vector<int32_t> inputs(B * length), targets(B * length);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < length; ++t) {
            inputs[b * length + t] = ids[starts[b] + t];
            targets[b * length + t] = ids[starts[b] + t + 1];
        }
    Tensor loss = model.loss(Tensor::ids(inputs, {B, length}), Tensor::ids(targets, {B, length}));
    return loss.item() * static_cast<double>(B * length);
}

TextScore score_text(const Transformer& model, const std::vector<int32_t>& ids, int64_t max_windows) {
    NoGradScope no_grad;
    const int64_t T = model.config().context, n = static_cast<int64_t>(ids.size());
    std::vector<int64_t> starts;  // every window ids[k*T : k*T+T+1] with at least 2 ids
    for (int64_t k = 0; k * T < n - 1; ++k) starts.push_back(k * T);
    if (max_windows > 0 && static_cast<int64_t>(starts.size()) > max_windows) {
        std::vector<int64_t> spaced;
        for (int64_t i = 0; i < max_windows; ++i) spaced.push_back(starts[i * starts.size() / max_windows]);
        starts = spaced;
    }

    double total = 0;
    int64_t predicted = 0;
    std::vector<int64_t> full_windows;
    auto flush = [&] {
        if (full_windows.empty()) return;
        total += window_loss_sum(model, ids, full_windows, T);
        predicted += static_cast<int64_t>(full_windows.size()) * T;
        full_windows.clear();
    };
    for (int64_t start : starts) {
        const int64_t length = std::min(T, n - 1 - start);  // predicted characters in this window
        if (length == T) {
            full_windows.push_back(start);
            if (full_windows.size() == 32) flush();
        } else {  // the last, shorter window
            total += window_loss_sum(model, ids, {start}, length);
            predicted += length;
        }
    }
    flush();

    TextScore score;
    score.predicted = predicted;
    score.loss = predicted ? total / static_cast<double>(predicted) : 0.0;
    score.bpc = score.loss / std::log(2.0);
    score.perplexity = std::exp(score.loss);
    return score;
}

ProbeScore score_probes(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& probes) {
    ProbeScore score;
    SampleOptions greedy;
    greedy.temperature = 0;
    Rng unused(0);
    for (const Probe& probe : probes) {
        greedy.max_new = static_cast<int64_t>(probe.answer.size());
        ProbeResult result{probe, generate(model, vocab, probe.prompt, greedy, unused), false};
        result.correct = result.answer_given == probe.answer;
        auto& [kind_correct, kind_total] = score.by_kind[probe.kind];
        ++kind_total;
        ++score.total;
        if (result.correct) {
            ++kind_correct;
            ++score.correct;
        } else {
            score.misses.push_back(result);
        }
    }
    return score;
}

}  // namespace tinyformer
