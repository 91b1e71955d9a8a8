// The backend seam: ops (ops.hpp) decide *what* to compute and record the graph; a backend
// supplies the numeric kernels. Ops reach kernels only through this interface, so a new
// backend (oneDNN) slots in without touching op or model code.
//
// Every kernel receives tensors whose shapes the op has already checked, writes its
// output tensors (allocated by the op), and handles the element types f32 and f64.
#pragma once

#include <memory>
#include <string>

#include "tinyformer/engine/mixed_precision.hpp"
#include "tinyformer/engine/tensor.hpp"
#include "tinyformer/engine/threads.hpp"  // set_num_threads, for every caller that picks a backend

namespace tinyformer {

// c[b] = alpha · op(a[b]) @ op(b[b]) (+ c[b] if accumulate) for b in 0..batch-1, where op() transposes
// when asked. a[b] is M×K after op(), b[b] is K×N after op(), c[b] is M×N. A stride of 0
// broadcasts that operand over the batch (a weight shared by every batch element; with
// c's stride 0 and accumulate, the batch is summed into one matrix).
// a and b are both float32 or both float64, as c is; or, in mixed precision
// (mixed_precision.hpp), both bf16 with c float32: bfloat16 products summed in float32.
struct GemmSpec {
    int64_t batch = 1, M = 0, N = 0, K = 0;
    bool trans_a = false, trans_b = false;
    int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch entries
    bool accumulate = false;
    double alpha = 1.0;  // scales the product (attention's 1/sqrt(d), for free)
};

// The same product with a batch that is one product folded in: a weight shared by a densely
// packed batch (nn.Linear on [B,T,in]) is one product of all the batch's rows (M·batch), and a
// batch summed into one c whose operands stack along the contracted axis (a weight's gradient,
// dW = dYᵀ X) is one longer sum (K·batch). Any other spec comes back as it is. The oneDNN
// backend runs products so, and the profiler names them so.
GemmSpec as_one_product(const GemmSpec& spec);

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Why this backend cannot run products of bf16 operands natively on this CPU ("" when it
    // can). The reference backend emulates them anywhere; oneDNN needs bf16 instructions.
    virtual std::string bf16_unsupported() const { return ""; }
    // out (bf16) = x (float32) rounded to bfloat16, to nearest, ties to even (bf16.hpp).
    virtual void to_bf16(const Tensor& x, Tensor& out) = 0;

    virtual void gemm(const Tensor& a, const Tensor& b, Tensor& c, const GemmSpec& spec) = 0;
    // c = op(a) @ op(b) + bias [N] on every row (nn.Linear). By default a product, then a
    // pass adding the bias; a backend may add it inside the product instead.
    virtual void gemm_bias(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, const GemmSpec& spec) {
        gemm(a, b, c, spec);
        add(c, bias, c);
    }
    // c = residual + op(a) @ op(b) (+ bias [N] on every row, when defined), residual shaped as
    // c: a linear layer added onto the residual stream. By default the product (gemm_bias or
    // gemm), then a pass adding residual; a backend may add it as the product writes c, so
    // that the branch's own output is never stored.
    virtual void gemm_residual(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& residual, Tensor& c,
                               const GemmSpec& spec) {
        if (bias.defined()) gemm_bias(a, b, bias, c, spec);
        else gemm(a, b, c, spec);
        add(c, residual, c);
    }

    // Elementwise, with NumPy broadcasting of a and b to out's shape.
    virtual void add(const Tensor& a, const Tensor& b, Tensor& out) = 0;
    virtual void mul(const Tensor& a, const Tensor& b, Tensor& out) = 0;
    // out = sum of `in` over the axes that broadcasting expanded to reach in's shape.
    virtual void sum_to(const Tensor& in, Tensor& out) = 0;
    virtual void scale(const Tensor& x, double factor, Tensor& out) = 0;
    virtual void add_inplace(Tensor& dst, const Tensor& src) = 0;  // dst += src, same shape
    // out = x with axes dim0 and dim1 swapped (a copy into out's contiguous layout).
    virtual void transpose(const Tensor& x, int dim0, int dim1, Tensor& out) = 0;

    // table [V,D], ids [N] (any shape, N ids) → out [N,D]; backward adds rows into d_table.
    virtual void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out) = 0;
    virtual void embedding_backward(const Tensor& ids, const Tensor& d_out, Tensor& d_table) = 0;

    // Over the last axis of x [N,C]: y = (x - mean) * rstd * weight + bias. mean, rstd [N]
    // are saved for the backward.
    virtual void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                                    Tensor& y, Tensor& mean, Tensor& rstd) = 0;
    virtual void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean,
                                     const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& d_weight,
                                     Tensor& d_bias) = 0;

    virtual void gelu_forward(const Tensor& x, Tensor& y) = 0;
    // y is the forward's output, from which a backend may recover tanh(...) instead of
    // computing it again.
    virtual void gelu_backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) = 0;

    // Softmax over the last axis of x [..., Tq, Tk]. With `causal`, query i may read key j
    // only when j <= i + (Tk - Tq); masked weights are exactly 0.
    virtual void softmax_forward(const Tensor& x, bool causal, Tensor& y) = 0;
    virtual void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;

    // Scaled dot-product attention for every (batch, head) at once: q [..., Tq, d] and
    // k, v [..., Tk, d] → weights = softmax(alpha · q kᵀ) [..., Tq, Tk], causal as
    // softmax_forward masks it, and heads = weights v [..., Tq, d]. The backward takes the
    // forward's weights and d_heads and overwrites dq, dk and dv. By default both are the
    // composition of gemm and softmax (src/backend.cpp), which is also their definition; a
    // backend may do the whole of it per (batch, head) instead, keeping the blocks in cache.
    virtual void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal,
                                   Tensor& heads, Tensor& weights);
    virtual void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                    const Tensor& d_heads, double alpha, bool causal, Tensor& dq, Tensor& dk,
                                    Tensor& dv);

    // Self-attention straight from its fused projection qkv [B,T,3D] (each position's q, k
    // and v side by side): q, k and v cut into H heads, q and k rotated when `rope` (positions
    // start + t), attention_forward on every head, and the heads' outputs side by side →
    // merged [B,T,D] (head h in features h*d..h*d+d-1); weights [B,H,T,T]. The backward takes
    // d_merged [B,T,D] and overwrites d_qkv [B,T,3D]. By default the composition of
    // qkv_to_heads, attention_forward/backward, transpose and heads_to_qkv (src/backend.cpp);
    // a backend may read each head straight out of qkv instead of moving it first.
    virtual void self_attention_forward(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, double alpha,
                                        bool causal, Tensor& merged, Tensor& weights);
    virtual void self_attention_backward(const Tensor& qkv, const Tensor& weights, const Tensor& d_merged,
                                         int64_t n_heads, bool rope, int64_t start, double alpha, bool causal,
                                         Tensor& d_qkv);

    // Rotates pairs (2j, 2j+1) of x [..., T, d] at position start + t by angle
    // (start + t) * 10000^(-2j/d); `inverse` rotates by the negative angle (the backward).
    virtual void rope(const Tensor& x, int64_t start, bool inverse, Tensor& out) = 0;

    // Self-attention's fused projection qkv [B,T,3D] (each position's q, k and v side by
    // side) → heads [3,B,H,T,d]: q, k and v each cut into H heads of width d, with q and k
    // rotated (rope, positions start + t) when `rope`. One pass: the heads' layout change and
    // the rotation together. heads_to_qkv is its backward: d_heads [3,B,H,T,d] → d_qkv
    // [B,T,3D], q's and k's gradients rotated back.
    virtual void qkv_to_heads(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, Tensor& heads) = 0;
    virtual void heads_to_qkv(const Tensor& d_heads, bool rope, int64_t start, Tensor& d_qkv) = 0;

    // logits [N,V], targets [N] → the mean cross-entropy (a one-element tensor) and the
    // softmax probabilities [N,V], kept for the backward: d_logits = (probs - onehot) * g / N.
    virtual void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss,
                                       Tensor& probs) = 0;
    virtual void cross_entropy_backward(const Tensor& probs, const Tensor& targets, double d_loss,
                                        Tensor& d_logits) = 0;
};

// The backend every op uses. Starts as the reference backend.
Backend& backend();
void set_backend(std::unique_ptr<Backend> backend);
// Makes `next` the backend and hands back the one it replaces (a wrapper uses this).
std::unique_ptr<Backend> swap_backend(std::unique_ptr<Backend> next);
std::unique_ptr<Backend> make_reference_backend();
// oneDNN (CPU) kernels for float32, plus OpenMP loops for the cheap ops; float64 calls go
// to the reference backend unchanged (gradient checks stay exact). See
// src/engine/backends/onednn.cpp (oneDNN's products) and own_kernels_backend.cpp (the loops).
std::unique_ptr<Backend> make_onednn_backend();

// Threads for the oneDNN backend: set_num_threads and share_cores, in threads.hpp. oneDNN
// and the backend's own loops share one OpenMP pool, so they set both. (Eigen, built with
// OpenMP too, uses the same count for the reference backend's matrix products.)

}  // namespace tinyformer
