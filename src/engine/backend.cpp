// Which backend the ops use. The reference backend until someone sets another.
#include "tinyformer/engine/backend.hpp"

namespace tinyformer {

// The products of attention for a batch of (batch, head) pairs, each Tq×Tk or T×d: how
// GemmSpec describes op(a) @ op(b) when a, b and c are whole [n, rows, cols] blocks.
static GemmSpec attention_product(int64_t pairs, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                                  double alpha) {
    GemmSpec spec;
    spec.batch = pairs, spec.M = M, spec.N = N, spec.K = K;
    spec.trans_a = trans_a, spec.trans_b = trans_b;
    spec.stride_a = M * K, spec.stride_b = K * N, spec.stride_c = M * N;
    spec.alpha = alpha;
    return spec;
}

// The number of [rows, cols] matrices in a [..., rows, cols] tensor: its (batch, head) pairs.
static int64_t matrices_in(const Tensor& t) { return numel_of(Shape(t.shape().begin(), t.shape().end() - 2)); }

// weights = softmax(alpha · q kᵀ), heads = weights v.
void Backend::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal,
                                Tensor& heads, Tensor& weights) {
    const int64_t Tq = q.dim(-2), Tk = k.dim(-2), d = q.dim(-1), pairs = matrices_in(q);
    Tensor scores = Tensor::empty(weights.shape(), weights.dtype());                          // [..., Tq, Tk]
    gemm(q, k, scores, attention_product(pairs, Tq, Tk, d, false, true, alpha));              // alpha · q kᵀ
    softmax_forward(scores, causal, weights);                                                 // [..., Tq, Tk]
    gemm(weights, v, heads, attention_product(pairs, Tq, d, Tk, false, false, 1.0));          // [..., Tq, d]
}

// heads = P v and P = softmax(S), S = alpha · q kᵀ:
//   dv = Pᵀ d_heads,  dP = d_heads vᵀ,  dS = softmax_backward(P, dP),
//   dq = alpha · dS k,  dk = alpha · dSᵀ q.
void Backend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                 const Tensor& d_heads, double alpha, bool /*causal: in weights' zeros*/,
                                 Tensor& dq, Tensor& dk, Tensor& dv) {
    const int64_t Tq = q.dim(-2), Tk = k.dim(-2), d = q.dim(-1), pairs = matrices_in(q);
    gemm(weights, d_heads, dv, attention_product(pairs, Tk, d, Tq, true, false, 1.0));        // [..., Tk, d]
    Tensor d_weights = Tensor::empty(weights.shape(), weights.dtype());                       // [..., Tq, Tk]
    gemm(d_heads, v, d_weights, attention_product(pairs, Tq, Tk, d, false, true, 1.0));
    Tensor d_scores = Tensor::empty(weights.shape(), weights.dtype());                        // [..., Tq, Tk]
    softmax_backward(weights, d_weights, d_scores);
    gemm(d_scores, k, dq, attention_product(pairs, Tq, d, Tk, false, false, alpha));          // [..., Tq, d]
    gemm(d_scores, q, dk, attention_product(pairs, Tk, d, Tq, true, false, alpha));           // [..., Tk, d]
}

GemmSpec as_one_product(const GemmSpec& spec) {
    GemmSpec one = spec;
    if (spec.batch <= 1) return one;
    if (spec.stride_b == 0 && !spec.trans_a && spec.stride_a == spec.M * spec.K && spec.stride_c == spec.M * spec.N)
        one.M = spec.batch * spec.M, one.batch = 1;  // [batch*M, K] @ [K, N]
    else if (spec.stride_c == 0 && spec.trans_a && !spec.trans_b && spec.stride_a == spec.K * spec.M &&
             spec.stride_b == spec.K * spec.N)
        one.K = spec.batch * spec.K, one.batch = 1;  // [batch*K, M]ᵀ @ [batch*K, N]
    return one;
}

static std::unique_ptr<Backend>& current_backend() {
    static std::unique_ptr<Backend> instance = make_reference_backend();
    return instance;
}

// Part `index` of a [3,B,H,T,d] block (q, k or v): a [B,H,T,d] view, no copy.
static Tensor part_of(const Tensor& parts, int64_t index) {
    const Shape shape(parts.shape().begin() + 1, parts.shape().end());
    const size_t offset = parts.offset_bytes() + index * numel_of(shape) * dtype_size(parts.dtype());
    return Tensor::view_of(parts.storage(), offset, shape, parts.dtype());
}

// [B,T,D] seen as [B,T,H,d]: the same data, head h's features as its own axis.
static Tensor heads_axis_of(const Tensor& merged, int64_t H) {
    return Tensor::view_of(merged.storage(), merged.offset_bytes(),
                           {merged.dim(0), merged.dim(1), H, merged.dim(2) / H}, merged.dtype());
}

void Backend::self_attention_forward(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, double alpha,
                                     bool causal, Tensor& merged, Tensor& weights) {
    const int64_t B = qkv.dim(0), T = qkv.dim(1), H = n_heads, d = qkv.dim(2) / 3 / H;
    Tensor qkv_heads = Tensor::empty({3, B, H, T, d}, qkv.dtype());  // q, k, v as heads
    qkv_to_heads(qkv, H, rope, start, qkv_heads);
    Tensor heads = Tensor::empty({B, H, T, d}, qkv.dtype());
    attention_forward(part_of(qkv_heads, 0), part_of(qkv_heads, 1), part_of(qkv_heads, 2), alpha, causal, heads,
                      weights);
    Tensor merged_heads_axis = heads_axis_of(merged, H);  // [B,T,H,d]
    transpose(heads, 1, 2, merged_heads_axis);
}

void Backend::self_attention_backward(const Tensor& qkv, const Tensor& weights, const Tensor& d_merged,
                                      int64_t n_heads, bool rope, int64_t start, double alpha, bool causal,
                                      Tensor& d_qkv) {
    const int64_t B = qkv.dim(0), T = qkv.dim(1), H = n_heads, d = qkv.dim(2) / 3 / H;
    Tensor qkv_heads = Tensor::empty({3, B, H, T, d}, qkv.dtype());  // the forward's q, k, v, again
    qkv_to_heads(qkv, H, rope, start, qkv_heads);
    Tensor d_heads = Tensor::empty({B, H, T, d}, qkv.dtype());
    transpose(heads_axis_of(d_merged, H), 1, 2, d_heads);
    Tensor d_qkv_heads = Tensor::empty({3, B, H, T, d}, qkv.dtype());
    Tensor dq = part_of(d_qkv_heads, 0), dk = part_of(d_qkv_heads, 1), dv = part_of(d_qkv_heads, 2);
    attention_backward(part_of(qkv_heads, 0), part_of(qkv_heads, 1), part_of(qkv_heads, 2), weights, d_heads, alpha,
                       causal, dq, dk, dv);
    heads_to_qkv(d_qkv_heads, rope, start, d_qkv);
}

Backend& backend() { return *current_backend(); }

void set_backend(std::unique_ptr<Backend> next) { current_backend() = std::move(next); }
std::unique_ptr<Backend> swap_backend(std::unique_ptr<Backend> next) {
    std::swap(current_backend(), next);
    return next;
}

}  // namespace tinyformer
