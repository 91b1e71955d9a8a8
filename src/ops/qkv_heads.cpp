// split_qkv_heads: self-attention's q, k and v as heads, from one fused projection.
//   qkv [B,T,3D] = h @ [W_q; W_k; W_v]^T      each position's q, k, v side by side
//   → [3,B,H,T,d]                             head h of q owns q's features h*d .. h*d+d-1
//   q, k rotated by their positions (rope)    the same rotation rope() applies
// It is split_heads and rope in one pass; its gradient is the inverse rotation and the
// inverse layout change, again in one pass.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor split_qkv_heads(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start) {
    require_real("split_qkv_heads", qkv, "qkv");
    if (qkv.rank() != 3 || qkv.dim(2) % 3 != 0)
        shape_error("split_qkv_heads", "expects [B,T,3D], got " + shape_str(qkv.shape()));
    const int64_t B = qkv.dim(0), T = qkv.dim(1), D = qkv.dim(2) / 3;
    if (n_heads < 1 || D % n_heads != 0)
        shape_error("split_qkv_heads", "d_model " + std::to_string(D) + " is not divisible by n_heads " +
                                           std::to_string(n_heads));
    const int64_t d = D / n_heads;
    if (rope && d % 2 != 0) shape_error("split_qkv_heads", "rope needs an even head width, got " + std::to_string(d));
    Tensor heads = empty_like(qkv, {3, B, n_heads, T, d});  // [3,B,H,T,d]
    backend().qkv_to_heads(qkv, n_heads, rope, start, heads);
    return record(heads, "split_qkv_heads", {qkv}, [qkv, rope, start](const Tensor& d_heads, const Tensor&) {
        Tensor d_qkv = empty_like(qkv, qkv.shape());  // [B,T,3D]
        backend().heads_to_qkv(d_heads, rope, start, d_qkv);
        accumulate_grad(qkv, d_qkv);
    });
}

}  // namespace tinyformer
