// The differentiable ops. Each is defined in src/engine/ops/<file>.cpp with its forward and
// its backward side by side. Shape errors throw ShapeError naming the op and the shapes.
// Adding one: the checklist at the top of op_list.hpp, which lists them all.
#pragma once

#include <stdexcept>
#include <string>

#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

struct ShapeError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// alpha · a [..., M, K] @ b [..., K, N] → [..., M, N] (after the optional transposes of the
// last two axes). b may be 2-D and is then shared by every batch element (a weight). The
// factor alpha costs nothing: the matrix product applies it as it writes the result.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false,
              double alpha = 1.0);
// h [..., in] @ weight [out, in]^T (+ bias [out]) → [..., out]: a PyTorch nn.Linear.
Tensor linear(const Tensor& h, const Tensor& weight, const Tensor& bias = Tensor());
// residual + linear(h, weight, bias): a layer's branch added onto the residual stream, as one
// op with one result (the branch's own output is never stored). Same as add(residual, linear(...)).
Tensor residual_linear(const Tensor& residual, const Tensor& h, const Tensor& weight, const Tensor& bias = Tensor());

Tensor add(const Tensor& a, const Tensor& b);  // NumPy broadcasting
Tensor mul(const Tensor& a, const Tensor& b);  // NumPy broadcasting
Tensor scale(const Tensor& x, double factor);
Tensor reshape(const Tensor& x, const Shape& shape);  // a view: shares x's data
Tensor transpose(const Tensor& x, int dim0, int dim1);
// x[index] along the first axis: a view of x's data (no copy), [x.dim(1), ...].
Tensor select(const Tensor& x, int64_t index);

// [B,T,D] → [B,H,T,d]: head h owns features h*d .. h*d+d-1.
Tensor split_heads(const Tensor& x, int64_t n_heads);
// [B,H,T,d] → [B,T,D]: the heads' outputs concatenated along the features.
Tensor merge_heads(const Tensor& x);

// table [V,D], ids (i32, any shape S) → [S..., D]
Tensor embedding(const Tensor& table, const Tensor& ids);
// Normalises the last axis (biased variance, as PyTorch), then weight * x̂ + bias.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
// 0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3)))
Tensor gelu(const Tensor& x);
// Softmax over the last axis; see Backend::softmax_forward for the causal mask.
Tensor softmax(const Tensor& x, bool causal = false);
// Scaled dot-product attention over the last two axes, for every (batch, head) at once:
// q [..., Tq, d], k and v [..., Tk, d] → weights = softmax(alpha · q kᵀ) [..., Tq, Tk]
// (causal: query i reads key j only when j <= i + Tk - Tq) and heads = weights v [..., Tq, d].
// The gradient reaches q, k and v through `heads`; `weights` are the forward's values, kept for
// reading (inspect draws them) and carry no gradient of their own.
struct Attended {
    Tensor heads;    // [..., Tq, d]; self_attention: [B,T,D], the heads side by side
    Tensor weights;  // [..., Tq, Tk]
};
Attended scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal);
// Self-attention from its fused projection qkv [B,T,3D] (each position's q, k and v side by
// side): q, k and v cut into H heads (q and k rotated by rope, positions start..), then
// scaled_dot_product_attention on every head, then merge_heads → heads [B,T,D] (head h in
// features h*d..h*d+d-1) and weights [B,H,T,T]. One op, so that a backend can take each head
// straight out of qkv and keep it in cache.
Attended self_attention(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, double alpha, bool causal);
// Rotary positions on x [..., T, d] (d even) for positions start .. start+T-1.
Tensor rope(const Tensor& x, int64_t start = 0);
// Mean cross-entropy of logits [..., V] against target ids (i32) of shape [...]. A scalar.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);
// cross_entropy(linear(hidden, weight), targets) for hidden [..., D] and weight [V, D], a
// block of rows at a time, so that the [..., V] logits are never held whole (the model's loss
// for a large vocabulary). A block holds at most `block_logits` logits; in one block the
// numbers are the same to the bit as cross_entropy(linear(...)).
Tensor linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets,
                            int64_t block_logits = int64_t{1} << 21);

}  // namespace tinyformer
