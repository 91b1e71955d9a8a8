#include "tinyformer/train/evaluate.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/progress.hpp"

namespace tinyformer {

// Sum of cross-entropies (not the mean) of the windows starting at `starts`, all of length
// `length` + 1 ids, in one batch.
static double window_loss_sum(const Transformer& model, const TokenIds& ids, const std::vector<int64_t>& starts,
                              int64_t length) {
    const Batch batch = windows_at(ids, starts, length);
    Tensor loss = model.loss(batch.inputs, batch.targets);
    return loss.item() * static_cast<double>(static_cast<int64_t>(starts.size()) * length);
}

// Windows per forward pass. The loss never holds a pass's logits [B,T,V] whole (see
// linear_cross_entropy), so a large vocabulary needs no smaller passes.
constexpr size_t kWindowsPerPass = 32;

TextScore score_windows(const Transformer& model, const TokenIds& ids, const std::vector<int64_t>& starts,
                        bool progress_bar, int64_t batch_size) {
    NoGradScope no_grad;
    const int64_t T = model.config().context, n = ids.size();
    const size_t per_pass = batch_size > 0 ? static_cast<size_t>(batch_size) : kWindowsPerPass;
    ProgressBar progress("evaluating", static_cast<int64_t>(starts.size()), ProgressBar::Unit::windows, progress_bar);
    double total = 0;
    int64_t predicted = 0, done = 0;
    std::vector<int64_t> full_windows;
    auto flush = [&] {
        if (full_windows.empty()) return;
        total += window_loss_sum(model, ids, full_windows, T);
        predicted += static_cast<int64_t>(full_windows.size()) * T;
        done += static_cast<int64_t>(full_windows.size());
        full_windows.clear();
        progress.update(done);
    };
    for (int64_t start : starts) {
        const int64_t length = std::min(T, n - 1 - start);  // predicted characters in this window
        if (length == T) {
            full_windows.push_back(start);
            if (full_windows.size() == per_pass) flush();
        } else {  // the last, shorter window
            total += window_loss_sum(model, ids, {start}, length);
            predicted += length;
            ++done;
        }
    }
    flush();

    TextScore score;
    score.predicted = predicted;
    score.windows = static_cast<int64_t>(starts.size());
    score.loss = predicted ? total / static_cast<double>(predicted) : 0.0;
    score.bpc = score.loss / std::log(2.0);
    score.perplexity = std::exp(score.loss);
    return score;
}

TextScore score_text(const Transformer& model, const TokenIds& ids, int64_t max_windows, bool progress_bar) {
    const int64_t T = model.config().context, n = ids.size();
    std::vector<int64_t> starts;  // every window ids[k*T : k*T+T+1] with at least 2 ids
    for (int64_t k = 0; k * T < n - 1; ++k) starts.push_back(k * T);
    if (max_windows > 0 && static_cast<int64_t>(starts.size()) > max_windows) {
        std::vector<int64_t> spaced;
        for (int64_t i = 0; i < max_windows; ++i) spaced.push_back(starts[i * starts.size() / max_windows]);
        starts = spaced;
    }
    return score_windows(model, ids, starts, progress_bar);
}

std::vector<int64_t> random_windows(int64_t text_length, int64_t context, int64_t count, uint64_t seed) {
    if (text_length < context + 1)
        throw InputError("the validation text has " + std::to_string(text_length) +
                         " characters, fewer than one window of model.context + 1 = " + std::to_string(context + 1));
    Rng rng(seed);
    std::vector<int64_t> starts(static_cast<size_t>(count));
    for (int64_t& start : starts) start = static_cast<int64_t>(rng.below(text_length - context));
    return starts;
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
