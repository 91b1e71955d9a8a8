// Answer sources: which head reads the answer where the story states it?
//
// A probe "小丁拿着红色的苹果。谁拿着苹果？" → "小丁" runs as prompt + answer. The character 小
// is predicted at the last prompt position (？), 丁 at the position of 小. At each such
// position, per head, we add up the attention on
//   - the earlier positions holding the character to be predicted (share), and
//   - the answer's place in the story, 小丁 at positions 0–1 (span_share).
// A head that copies the name out of the story puts its weight there.
#include <algorithm>
#include <map>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/inspect/inspect.hpp"

namespace tinyformer {

namespace {

// Sums and counts per answer character, for one head and one question kind.
struct Tally {
    int64_t probes = 0, stated = 0;
    std::vector<double> share, span;
    std::vector<int64_t> count, span_count;

    void grow(size_t answer_length) {
        const size_t n = std::max(share.size(), answer_length);
        share.resize(n, 0.0), span.resize(n, 0.0), count.resize(n, 0), span_count.resize(n, 0);
    }
};

// Mean per answer character, and the mean over all characters counted.
double means(std::vector<double>& sums, const std::vector<int64_t>& counts) {
    double total = 0;
    int64_t n = 0;
    for (size_t k = 0; k < sums.size(); ++k) {
        total += sums[k], n += counts[k];
        sums[k] = counts[k] ? sums[k] / static_cast<double>(counts[k]) : 0.0;
    }
    return n ? total / static_cast<double>(n) : 0.0;
}

}  // namespace

std::vector<std::map<std::string, AnswerSource>> answer_sources(const Transformer& model, const Vocabulary& vocab,
                                                                const std::vector<Probe>& probes) {
    NoGradScope no_grad;
    const int64_t L = model.config().n_layers, H = model.config().n_heads, context = model.config().context;
    // Probes whose inputs (prompt + answer without its last character) have the same length run as one batch.
    std::map<int64_t, std::vector<const Probe*>> by_length;
    for (const Probe& probe : probes) {
        const int64_t S = static_cast<int64_t>(probe.prompt.size() + probe.answer.size()) - 1;
        if (S <= context) by_length[S].push_back(&probe);
    }
    std::vector<std::map<std::string, Tally>> tallies(L * H);
    for (const auto& [S, group] : by_length) {
        const int64_t B = static_cast<int64_t>(group.size());
        std::vector<int32_t> inputs;
        for (const Probe* probe : group) {
            const std::vector<int32_t> ids = vocab.encode(probe->prompt + probe->answer, "probe");
            inputs.insert(inputs.end(), ids.begin(), ids.begin() + S);
        }
        std::vector<Tensor> maps;  // per layer [B,H,S,S]
        model.forward(Tensor::ids(inputs, {B, S}), &maps);
        for (int64_t l = 0; l < L; ++l) {
            const Tensor layer = maps[l].to(DType::f32);
            for (int64_t b = 0; b < B; ++b) {
                const Probe& probe = *group[b];
                const std::u32string sequence = probe.prompt + probe.answer;
                const int64_t P = static_cast<int64_t>(probe.prompt.size());
                const size_t span = probe.prompt.find(probe.answer);  // where the story states the answer
                for (int64_t h = 0; h < H; ++h) {
                    const float* a = layer.data<float>() + (b * H + h) * S * S;  // [S,S]
                    Tally& tally = tallies[l * H + h][probe.kind];
                    ++tally.probes;
                    if (span != std::u32string::npos) ++tally.stated;
                    tally.grow(probe.answer.size());
                    for (size_t k = 0; k < probe.answer.size(); ++k) {
                        const int64_t p = P - 1 + static_cast<int64_t>(k);  // predicts answer[k]
                        for (int64_t j = 0; j <= p; ++j)
                            if (sequence[j] == probe.answer[k]) tally.share[k] += a[p * S + j];
                        ++tally.count[k];
                        if (span == std::u32string::npos) continue;
                        for (size_t j = span; j < span + probe.answer.size(); ++j) tally.span[k] += a[p * S + j];
                        ++tally.span_count[k];
                    }
                }
            }
        }
    }
    std::vector<std::map<std::string, AnswerSource>> sources(L * H);
    for (int64_t i = 0; i < L * H; ++i)
        for (auto& [kind, tally] : tallies[i]) {
            AnswerSource& source = sources[i][kind];
            source.probes = tally.probes, source.stated = tally.stated;
            source.share = means(tally.share, tally.count);
            source.by_answer_char = tally.share;
            source.span_share = means(tally.span, tally.span_count);
            source.span_by_answer_char = tally.span;
        }
    return sources;
}

}  // namespace tinyformer
