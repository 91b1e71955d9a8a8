#include "tinyformer/explore/explorer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tinyformer/model/decoder.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

HeadRef parse_head(const std::string& label, const ModelConfig& config, const std::string& source) {
    const std::string expected = "expected a head such as L0H1 (layers 0.." + std::to_string(config.n_layers - 1) +
                                 ", heads 0.." + std::to_string(config.n_heads - 1) + ")";
    // L<digits>H<digits>, nothing else.
    const size_t h = label.find('H');
    auto digits = [](const std::string& s) {
        return !s.empty() && s.size() <= 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (label.size() < 4 || label[0] != 'L' || h == std::string::npos || !digits(label.substr(1, h - 1)) ||
        !digits(label.substr(h + 1)))
        throw InputError(source + ": \"" + label + "\", " + expected);
    const HeadRef head{std::stoll(label.substr(1, h - 1)), std::stoll(label.substr(h + 1))};
    if (head.layer >= config.n_layers || head.head >= config.n_heads)
        throw InputError(source + ": \"" + label + "\" is not in this model, " + expected);
    return head;
}

std::string head_name(const HeadRef& head) {
    return "L" + std::to_string(head.layer) + "H" + std::to_string(head.head);
}

ExplorerRun explore(const Transformer& model, const Vocabulary& vocab, const std::vector<int32_t>& ids,
                    const std::vector<HeadRef>& ablated, Ablation ablation,
                    const std::vector<std::vector<float>>* mean_outputs) {
    const ModelConfig& config = model.config();
    const int64_t T = static_cast<int64_t>(ids.size()), L = config.n_layers, H = config.n_heads,
                  V = config.vocab_size;
    if (T < 1 || T > config.context)
        throw InputError("explore: " + std::to_string(T) + " characters, expected 1.." + std::to_string(config.context));
    Decoder decoder(model);
    for (const HeadRef& head : ablated) {
        if (ablation == Ablation::mean && !mean_outputs) throw InputError("mean ablation needs the heads' mean outputs");
        decoder.ablate(head.layer, head.head,
                       ablation == Ablation::mean ? (*mean_outputs)[head.layer * H + head.head] : std::vector<float>{});
    }

    ExplorerRun run;
    run.maps.text = vocab.decode(ids);
    run.maps.layers = L, run.maps.heads = H;
    run.maps.weights.assign(L * H * T * T, 0.0f);  // the future (column > row) stays 0
    run.logits.resize(T * V);
    for (int64_t t = 0; t < T; ++t) {
        const std::vector<float>& logits = decoder.step(ids[t]);  // [V]: for position t + 1
        std::copy(logits.begin(), logits.end(), run.logits.begin() + t * V);
        // Row t of every map: the weights of query t over positions 0..t (slot p = position p,
        // as the text fits in the context).
        for (int64_t l = 0; l < L; ++l)
            for (int64_t h = 0; h < H; ++h)
                std::copy_n(decoder.attention_weights(l, h), t + 1, run.maps.weights.begin() + ((l * H + h) * T + t) * T);
    }
    return run;
}

std::vector<NextChar> top_next_chars(const float* logits, int64_t V, int64_t k) {
    const double max = *std::max_element(logits, logits + V);
    std::vector<double> probabilities(V);
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += probabilities[v] = std::exp(static_cast<double>(logits[v]) - max);
    for (double& p : probabilities) p /= sum;
    std::vector<int32_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    const int64_t kept = std::min(k, V);
    std::partial_sort(order.begin(), order.begin() + kept, order.end(), [&](int32_t a, int32_t b) {
        return probabilities[a] != probabilities[b] ? probabilities[a] > probabilities[b] : a < b;
    });
    std::vector<NextChar> top;
    for (int64_t r = 0; r < kept; ++r) top.push_back({order[r], probabilities[order[r]]});
    return top;
}

}  // namespace tinyformer
