// Scaled dot-product attention as one op: weights = softmax(alpha · q kᵀ), heads = weights v.
// The lesson's formula in one place, so a backend can compute it per (batch, head) with the
// T×T blocks still in cache. Backward: dv = Pᵀ dH, dS = softmax_backward(P, dH vᵀ),
// dq = alpha · dS k, dk = alpha · dSᵀ q (Backend::attention_backward), from the saved weights P.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Attended scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal) {
    const char* op = "scaled_dot_product_attention";
    require_real(op, q, "q");
    require_real(op, k, "k");
    require_real(op, v, "v");
    require_same_dtype(op, q, k);
    require_same_dtype(op, q, v);
    auto shapes = [&] { return shape_str(q.shape()) + ", " + shape_str(k.shape()) + " and " + shape_str(v.shape()); };
    if (q.rank() < 2 || k.shape() != v.shape() || k.rank() != q.rank() ||
        !std::equal(q.shape().begin(), q.shape().end() - 2, k.shape().begin()) || q.dim(-1) != k.dim(-1))
        shape_error(op, "needs q [..., Tq, d] and k, v [..., Tk, d], got " + shapes());
    const int64_t Tq = q.dim(-2), Tk = k.dim(-2);
    if (Tq == 0 || Tk == 0 || q.dim(-1) == 0)
        shape_error(op, "needs at least one query, one key and one feature, got " + shapes());
    if (causal && Tq > Tk) shape_error(op, "a causal mask needs Tq <= Tk, got " + shapes());

    Shape weights_shape(q.shape().begin(), q.shape().end() - 1);
    weights_shape.push_back(Tk);
    Tensor weights = empty_like(q, weights_shape);  // [..., Tq, Tk]
    Tensor heads = empty_like(q, q.shape());        // [..., Tq, d]
    backend().attention_forward(q, k, v, alpha, causal, heads, weights);
    heads = record(heads, "scaled_dot_product_attention", {q, k, v},
                   [q, k, v, weights, alpha, causal](const Tensor& d_heads, const Tensor&) {
                       Tensor dq = empty_like(q, q.shape()), dk = empty_like(k, k.shape());
                       Tensor dv = empty_like(v, v.shape());
                       backend().attention_backward(q, k, v, weights, d_heads, alpha, causal, dq, dk, dv);
                       accumulate_grad(q, dq);
                       accumulate_grad(k, dk);
                       accumulate_grad(v, dv);
                   });
    return {heads, weights};
}

}  // namespace tinyformer
