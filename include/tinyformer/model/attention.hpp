// Multi-head attention, as the lesson writes it:
//   q, k, v  = query W_q^T, key W_k^T, value W_v^T             [B,T,D]
//   split    each into H heads of width d = D/H                [B,H,T,d]
//   weights  = softmax(q k^T / sqrt(d) [+ causal mask])        [B,H,Tq,Tk]
//   output   = merge_heads(weights v) W_o^T                    [B,Tq,D]
#pragma once

#include <cstdint>
#include <vector>

#include "tinyformer/engine/parameters.hpp"
#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

struct AttentionResult {
    Tensor output;   // [B,Tq,D] (+ AttentionOptions::residual)
    Tensor weights;  // [B,H,Tq,Tk]: how much each query position reads each key position, per head
    Tensor heads;    // [B,H,Tq,d]: each head's output, weights v, before any ablation (with keep_heads)
    // With keep_inside (self-attention), what the attention computed on the way, for the hook
    // points (ForwardHooks::activations):
    Tensor qkv;       // [B,T,3D]: the one product q | k | v was taken from (before rotary positions)
    Tensor attended;  // [B,T,D]: each head's weights v side by side, before any ablation
};

// One head's output replaced (AttentionOptions::ablate).
struct HeadReplacement {
    int64_t head = 0;
    Tensor with{};  // [d] at every position; zeros if empty
};

struct AttentionOptions {
    bool causal = false;      // a query never reads a later position
    bool rope = false;        // rotate q and k by their positions (rotary embedding)
    int64_t rope_start = 0;   // position of the first query/key (for generation with a cache)
    bool keep_heads = false;  // also return each head's output as AttentionResult::heads
    bool keep_inside = false;  // also return qkv and attended (AttentionResult)
    // The residual stream [B,Tq,D]: when given, output = residual + the projection, added as
    // the projection is written (residual_linear), so the block's own output is never stored.
    Tensor residual{};
    // Head ablation (tinyformer inspect): each listed head's output is replaced, at every
    // position and before the heads are merged, by its vector [d] — zeros if it is empty.
    std::vector<HeadReplacement> ablate{};  // empty: every head as it is
};

class MultiHeadAttention {
public:
    // Uses the four [D,D] projection weights found in `params` under `prefix` +
    // "q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight".
    MultiHeadAttention(const Parameters& params, const std::string& prefix, int64_t n_heads);

    // A standalone module with its own weights, drawn from N(0, 1/D) with `seed`.
    static std::pair<MultiHeadAttention, Parameters> create(int64_t d_model, int64_t n_heads, uint64_t seed,
                                                            DType dtype = DType::f32);
    static std::vector<ParameterSpec> parameter_specs(int64_t d_model, const std::string& prefix = "");

    AttentionResult forward(const Tensor& query, const Tensor& key, const Tensor& value,
                            const AttentionOptions& options = {}) const;

    int64_t n_heads() const { return n_heads_; }
    Tensor q_proj, k_proj, v_proj, out_proj;  // each [D,D] = [out,in], no bias
    // q_proj, k_proj, v_proj stacked [3D,D] (a view of the same weights): self-attention
    // projects all three in one matrix product.
    Tensor qkv_proj;

private:
    int64_t n_heads_;
};

}  // namespace tinyformer
