// self_attention: the heads cut out of qkv, scaled_dot_product_attention and merge_heads as one op.
//   qkv [B,T,3D]                 each position's q, k, v side by side (one projection)
//   q, k, v → [B,H,T,d]          head h owns features h*d .. h*d+d-1; q and k rotated (rope)
//   weights = softmax(q kᵀ · alpha [+ causal mask])                  [B,H,T,T]
//   heads = weights v, side by side again                            [B,T,D]
// Backward: the same chain read right to left (Backend::self_attention_backward), from the
// saved weights; q, k and v are taken out of qkv again rather than kept.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Attended self_attention(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, double alpha, bool causal) {
    const char* op = "self_attention";
    require_real(op, qkv, "qkv");
    if (qkv.rank() != 3 || qkv.dim(2) % 3 != 0) shape_error(op, "expects [B,T,3D], got " + shape_str(qkv.shape()));
    const int64_t B = qkv.dim(0), T = qkv.dim(1), D = qkv.dim(2) / 3;
    if (n_heads < 1 || D % n_heads != 0)
        shape_error(op, "d_model " + std::to_string(D) + " is not divisible by n_heads " + std::to_string(n_heads));
    const int64_t d = D / n_heads;
    if (rope && d % 2 != 0) shape_error(op, "rope needs an even head width, got " + std::to_string(d));
    if (T == 0) shape_error(op, "needs at least one position, got " + shape_str(qkv.shape()));

    Tensor merged = empty_like(qkv, {B, T, D});              // [B,T,D]
    Tensor weights = empty_like(qkv, {B, n_heads, T, T});    // [B,H,T,T]
    backend().self_attention_forward(qkv, n_heads, rope, start, alpha, causal, merged, weights);
    merged = record(merged, "self_attention", {qkv},
                    [qkv, weights, n_heads, rope, start, alpha, causal](const Tensor& d_merged, const Tensor&) {
                        Tensor d_qkv = empty_like(qkv, qkv.shape());  // [B,T,3D]
                        backend().self_attention_backward(qkv, weights, d_merged, n_heads, rope, start, alpha, causal,
                                                          d_qkv);
                        accumulate_grad(qkv, d_qkv);
                    });
    return {merged, weights};
}

}  // namespace tinyformer
