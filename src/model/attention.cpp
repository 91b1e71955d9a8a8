#include "tinyformer/model/attention.hpp"

#include <cmath>

#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/rng.hpp"

namespace tinyformer {

std::vector<ParameterSpec> MultiHeadAttention::parameter_specs(int64_t D, const std::string& prefix) {
    return {{prefix + "q_proj.weight", {D, D}},
            {prefix + "k_proj.weight", {D, D}},
            {prefix + "v_proj.weight", {D, D}},
            {prefix + "out_proj.weight", {D, D}}};
}

MultiHeadAttention::MultiHeadAttention(const Parameters& params, const std::string& prefix, int64_t n_heads)
    : q_proj(params.get(prefix + "q_proj.weight")),
      k_proj(params.get(prefix + "k_proj.weight")),
      v_proj(params.get(prefix + "v_proj.weight")),
      out_proj(params.get(prefix + "out_proj.weight")),
      qkv_proj(params.joined({prefix + "q_proj.weight", prefix + "k_proj.weight", prefix + "v_proj.weight"})),
      n_heads_(n_heads) {
    const int64_t D = q_proj.dim(0);
    if (n_heads < 1 || D % n_heads != 0)
        throw ShapeError("attention: d_model " + std::to_string(D) + " is not divisible by n_heads " +
                         std::to_string(n_heads));
}

std::pair<MultiHeadAttention, Parameters> MultiHeadAttention::create(int64_t D, int64_t n_heads, uint64_t seed,
                                                                     DType dtype) {
    if (D < 1 || n_heads < 1 || D % n_heads != 0)
        throw ShapeError("attention: d_model " + std::to_string(D) + " is not divisible by n_heads " +
                         std::to_string(n_heads));
    Parameters params(parameter_specs(D), dtype);
    Rng rng(seed);
    for (const auto& [name, weight] : params.named()) {
        Tensor w = weight;
        for (int64_t i = 0; i < w.numel(); ++i) {
            double value = rng.normal(0.0, 1.0 / std::sqrt(static_cast<double>(D)));
            if (dtype == DType::f32) w.data<float>()[i] = static_cast<float>(value);
            else w.data<double>()[i] = value;
        }
    }
    MultiHeadAttention attention(params, "", n_heads);
    return {attention, params};
}

// merged [B,T,D] with each listed head h's output (features h*d .. h*d+d-1) replaced by its
// vector [d] (zeros if empty), written with differentiable ops: merged * keep + fill, keep [D]
// being 0 in those heads' features and 1 elsewhere, fill [D] holding the replacements there.
static Tensor ablate_heads(const Tensor& merged, int64_t n_heads, const std::vector<HeadReplacement>& replacements) {
    const int64_t D = merged.dim(2), d = D / n_heads;
    std::vector<double> keep(D, 1.0), fill(D, 0.0);
    for (const HeadReplacement& replacement : replacements) {
        const int64_t h = replacement.head;
        if (h < 0 || h >= n_heads)
            throw ShapeError("attention: cannot ablate head " + std::to_string(h) + " of " + std::to_string(n_heads));
        if (replacement.with.defined() && replacement.with.shape() != Shape{d})
            throw ShapeError("attention: a head's replacement must be [" + std::to_string(d) + "], got " +
                             shape_str(replacement.with.shape()));
        for (int64_t i = 0; i < d; ++i) {
            keep[h * d + i] = 0.0;
            fill[h * d + i] = replacement.with.defined() ? replacement.with.at(i) : 0.0;
        }
    }
    return add(mul(merged, Tensor::from(keep, {D}, merged.dtype())), Tensor::from(fill, {D}, merged.dtype()));
}

AttentionResult MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                            const AttentionOptions& options) const {
    const int64_t D = q_proj.dim(0), d = D / n_heads_;
    for (const Tensor* input : {&query, &key, &value})
        if (input->rank() != 3 || input->dim(2) != D)
            throw ShapeError("attention: inputs must be [B,T," + std::to_string(D) + "], got " +
                             shape_str(input->shape()));
    if (key.shape() != value.shape())
        throw ShapeError("attention: key " + shape_str(key.shape()) + " and value " + shape_str(value.shape()) +
                         " must have the same shape");

    // weights = softmax(q kᵀ / sqrt(d) + mask) [B,H,Tq,Tk]; each head's weights v, side by side [B,Tq,D]
    const double alpha = 1.0 / std::sqrt(static_cast<double>(d));
    Attended attended;
    Tensor qkv;  // [B,T,3D], self-attention's
    if (query.same_as(key) && key.same_as(value)) {
        // Self-attention: one product for q, k and v, then every head from it in one op.
        qkv = linear(query, qkv_proj);
        attended = self_attention(qkv, n_heads_, options.rope, options.rope_start, alpha, options.causal);
    } else {
        Tensor q = split_heads(linear(query, q_proj), n_heads_);  // [B,H,Tq,d]
        Tensor k = split_heads(linear(key, k_proj), n_heads_);    // [B,H,Tk,d]
        Tensor v = split_heads(linear(value, v_proj), n_heads_);  // [B,H,Tk,d]
        if (options.rope) {
            q = rope(q, options.rope_start);
            k = rope(k, options.rope_start);
        }
        attended = scaled_dot_product_attention(q, k, v, alpha, options.causal);
        attended.heads = merge_heads(attended.heads);
    }
    const Tensor& merged = attended.heads;  // [B,Tq,D]
    Tensor used = options.ablate.empty() ? merged : ablate_heads(merged, n_heads_, options.ablate);
    // [B,Tq,D], added onto the residual stream inside the projection when one is given
    Tensor output = options.residual.defined() ? residual_linear(options.residual, used, out_proj)
                                               : linear(used, out_proj);
    AttentionResult result;
    result.output = output, result.weights = attended.weights;
    if (options.keep_heads) result.heads = split_heads(merged, n_heads_);  // [B,H,Tq,d]
    if (options.keep_inside) result.qkv = qkv, result.attended = merged;
    return result;
}

}  // namespace tinyformer
