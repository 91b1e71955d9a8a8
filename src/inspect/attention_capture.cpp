// Capturing every head's attention on one text, and checking it is a causal attention map.
#include <cmath>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

AttentionMaps capture_attention(const Transformer& model, const Vocabulary& vocab, const std::u32string& text,
                                const std::string& source) {
    const int64_t T = static_cast<int64_t>(text.size()), context = model.config().context;
    if (T < 1 || T > context)
        throw InputError(source + ": " + std::to_string(T) + " characters, expected 1.." + std::to_string(context) +
                         " (the model's context)");
    const std::vector<int32_t> ids = vocab.encode(text, source);
    NoGradScope no_grad;
    std::vector<Tensor> per_layer;  // each [1,H,T,T]
    model.forward(Tensor::ids(ids, {1, T}), &per_layer);

    AttentionMaps maps;
    maps.text = text;
    maps.layers = static_cast<int64_t>(per_layer.size());
    maps.heads = model.config().n_heads;
    maps.weights.reserve(maps.layers * maps.heads * T * T);
    for (const Tensor& layer : per_layer) {
        const Tensor weights = layer.to(DType::f32);
        maps.weights.insert(maps.weights.end(), weights.data<float>(), weights.data<float>() + weights.numel());
    }
    return maps;
}

std::string check_attention(const AttentionMaps& maps) {
    const int64_t T = maps.length();
    if (static_cast<int64_t>(maps.weights.size()) != maps.layers * maps.heads * T * T)
        return "attention: " + std::to_string(maps.weights.size()) + " weights, expected L*H*T*T";
    for (int64_t l = 0; l < maps.layers; ++l)
        for (int64_t h = 0; h < maps.heads; ++h) {
            const float* a = maps.map(l, h);  // [T,T]
            const std::string head = "attention: layer " + std::to_string(l) + " head " + std::to_string(h);
            for (int64_t i = 0; i < T; ++i) {
                double row_sum = 0;
                for (int64_t j = 0; j < T; ++j) {
                    const float w = a[i * T + j];
                    auto cell = [&] { return head + " row " + std::to_string(i) + " column " + std::to_string(j); };
                    if (!std::isfinite(w)) return cell() + " is not finite";
                    if (j > i && w != 0.0f)
                        return cell() + " reads the future (" + std::to_string(w) + ", expected exactly 0)";
                    if (w < 0.0f) return cell() + " is negative";
                    row_sum += w;
                }
                if (std::abs(row_sum - 1.0) > 1e-5)
                    return head + " row " + std::to_string(i) + " sums to " + std::to_string(row_sum) + ", expected 1";
            }
        }
    return "";
}

}  // namespace tinyformer
