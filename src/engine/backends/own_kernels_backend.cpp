// OwnKernelsBackend's kernels (own_kernels_backend.hpp): for each op, an OpenMP loop that splits
// the float32 work over threads — spans of floats, blocks of rows, (batch, head) pairs — and
// runs one of the own Highway kernels on each share (elementwise_kernels.cpp,
// activation_kernels.cpp, layer_norm_kernels.cpp, attention_blocks.cpp), or a plain loop where
// the work is a copy. The header says how the threads keep the results deterministic. oneDNN's
// half of the backend, the products and the softmax backward, is onednn.cpp.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/tensor.hpp"
#include "activation_kernels.hpp"
#include "attention_blocks.hpp"
#include "elementwise_kernels.hpp"
#include "layer_norm_kernels.hpp"
#include "own_kernels_backend.hpp"

namespace tinyformer {

namespace {

using detail::for_each_span;
using detail::kParallelWork;

// Rows of an [N, C] tensor are worked on in blocks of about a span's floats (for_each_span):
// row_block(C) rows each, row_blocks(N, C) of them.
int64_t row_block(int64_t C) { return std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)); }
int64_t row_blocks(int64_t N, int64_t C) { return (N + row_block(C) - 1) / row_block(C); }

// task(first, rows) for each block of rows of an [N, C] tensor, one run of blocks per thread
// (static), or all of them on one thread when the tensor is small.
template <class RowTask>
void for_each_row_block(int64_t N, int64_t C, RowTask&& task) {
    const int64_t block = row_block(C), blocks = row_blocks(N, C);
#pragma omp parallel for schedule(static) if (N * C > kParallelWork)
    for (int64_t b = 0; b < blocks; ++b) task(b * block, std::min(block, N - b * block));
}

// Broadcasting of one operand against the output, for the elementwise kernels: its element
// strides per output axis (0 where it is broadcast), and whether it is the whole output or
// a suffix of it (a bias [N] against [..., N]: then it repeats every `numel` elements).
struct Broadcast {
    std::vector<int64_t> strides;
    bool full = false, suffix = false;
};

Broadcast broadcast_of(const Shape& shape, const Shape& out_shape) {
    Broadcast b;
    const size_t rank = out_shape.size(), offset = rank - shape.size();
    b.strides.assign(rank, 0);
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        b.strides[offset + i] = shape[i] == 1 ? 0 : stride;
        stride *= shape[i];
    }
    b.full = numel_of(shape) == numel_of(out_shape);
    // A suffix: after its leading 1s, shape is exactly the trailing axes of out_shape.
    size_t first = 0;
    while (first < shape.size() && shape[first] == 1) ++first;
    b.suffix = std::equal(shape.begin() + first, shape.end(), out_shape.end() - (shape.size() - first));
    return b;
}

// The offset of element `row * inner` of the output within an operand with these strides.
int64_t row_offset(int64_t row, int64_t inner_axis, const Shape& out_shape, const std::vector<int64_t>& strides) {
    int64_t offset = 0;
    for (int64_t axis = inner_axis; axis-- > 0;) {
        offset += (row % out_shape[axis]) * strides[axis];
        row /= out_shape[axis];
    }
    return offset;
}

// out = op(a, b) with NumPy broadcasting, where span(a, b, out, n) is op over n elements in
// the own kernels (elementwise_kernels.cpp). Fast paths for the shapes a model makes: equal
// shapes, and one operand a suffix of the other (a bias, a position table). Anything else
// walks the output row by row (rows = every axis but the last), element by element.
template <class Op>
void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& out, void (*span)(const float*, const float*, float*, int64_t),
                      Op op) {
    const float *pa = a.data<float>(), *pb = b.data<float>();
    float* po = out.data<float>();
    const int64_t n = out.numel();
    const Broadcast ba = broadcast_of(a.shape(), out.shape()), bb = broadcast_of(b.shape(), out.shape());
    if (ba.full && bb.full)
        return for_each_span(n, [&](int64_t begin, int64_t count) { span(pa + begin, pb + begin, po + begin, count); });
    if ((ba.full && bb.suffix) || (bb.full && ba.suffix)) {
        const int64_t inner = ba.full ? b.numel() : a.numel(), rows = n / std::max<int64_t>(inner, 1);
#pragma omp parallel for schedule(static) if (n > kParallelWork)
        for (int64_t r = 0; r < rows; ++r) {
            const float* row_a = ba.full ? pa + r * inner : pa;  // the repeated operand restarts
            const float* row_b = bb.full ? pb + r * inner : pb;
            span(row_a, row_b, po + r * inner, inner);
        }
        return;
    }
    const Shape& shape = out.shape();
    const int64_t last = static_cast<int64_t>(shape.size()) - 1;
    const int64_t inner = shape.empty() ? 1 : shape.back(), rows = n / std::max<int64_t>(inner, 1);
    const int64_t step_a = shape.empty() ? 0 : ba.strides.back(), step_b = shape.empty() ? 0 : bb.strides.back();
#pragma omp parallel for schedule(static) if (n > kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
        const float* row_a = pa + row_offset(r, last, shape, ba.strides);
        const float* row_b = pb + row_offset(r, last, shape, bb.strides);
        float* row_out = po + r * inner;
        for (int64_t j = 0; j < inner; ++j) row_out[j] = op(row_a[j * step_a], row_b[j * step_b]);
    }
}

// Causal attention whose T and d are multiples of 16 runs one (batch, head) per task with
// its blocks in cache (attention_blocks.cpp); any other attention (cross-attention,
// sampling's new queries against a longer cache, odd T or d) is Backend's composition of
// products and softmax.
bool in_blocks(bool causal, int64_t Tq, int64_t Tk, int64_t d) {
    return causal && Tq == Tk && Tq > 0 && Tq % 16 == 0 && d > 0 && d % 16 == 0;
}

// sum_to for any broadcast (e.g. [B,T,D] → [T,1]): the reference's walk, on one thread.
void sum_to_any(const Tensor& in, Tensor& out, const Broadcast& target) {
    const float* pi = in.data<float>();
    float* po = out.data<float>();
    std::fill(po, po + out.numel(), 0.0f);
    const Shape& shape = in.shape();
    const int64_t last = static_cast<int64_t>(shape.size()) - 1;
    const int64_t inner = shape.empty() ? 1 : shape.back(), rows = in.numel() / std::max<int64_t>(inner, 1);
    const int64_t step = shape.empty() ? 0 : target.strides.back();
    for (int64_t r = 0; r < rows; ++r) {
        float* row_out = po + row_offset(r, last, shape, target.strides);
        for (int64_t j = 0; j < inner; ++j) row_out[j * step] += pi[r * inner + j];
    }
}

}  // namespace

// out = x rounded to bfloat16, to nearest even (bf16.hpp's to_bf16_bits, in the own
// kernels' vectors): as fast as oneDNN's reorder (35 µs against 39 µs for 393,216 floats on
// 2 threads, as a plain loop) and plainer to read.
void OwnKernelsBackend::to_bf16(const Tensor& x, Tensor& out) {
    const float* from = x.data<float>();
    uint16_t* to = out.data<uint16_t>();
    for_each_span(x.numel(), [&](int64_t begin, int64_t n) { detail::to_bf16_span(from + begin, to + begin, n); });
}

// ---- elementwise ----

void OwnKernelsBackend::add(const Tensor& a, const Tensor& b, Tensor& out) {
    if (out.dtype() != DType::f32) return reference_->add(a, b, out);
    broadcast_binary(a, b, out, detail::add_span, [](float x, float y) { return x + y; });
}

void OwnKernelsBackend::mul(const Tensor& a, const Tensor& b, Tensor& out) {
    if (out.dtype() != DType::f32) return reference_->mul(a, b, out);
    broadcast_binary(a, b, out, detail::mul_span, [](float x, float y) { return x * y; });
}

void OwnKernelsBackend::sum_to(const Tensor& in, Tensor& out) {
    if (out.dtype() != DType::f32) return reference_->sum_to(in, out);
    const Broadcast target = broadcast_of(out.shape(), in.shape());
    if (!target.suffix) return sum_to_any(in, out, target);
    // out is the trailing axes of in: in is [rows, inner] and out[j] = sum over rows.
    // The rows go in fixed blocks of kSumRows, each summed in row order into its own
    // partial sums [inner] (vectorised along the row), and the blocks are added in order
    // after: the same sums to the bit for any thread count. Threads take runs of whole
    // blocks, so each reads the rows it wrote when the loop before split rows the same way
    // (a bias gradient after GELU's backward): on 2 threads 1.8-2.1× as fast as bands of
    // columns, where each thread read half of every row (docs/measurements.md).
    const float* pi = in.data<float>();
    float* po = out.data<float>();
    const int64_t inner = out.numel(), rows = in.numel() / std::max<int64_t>(inner, 1);
    constexpr int64_t kSumRows = 64;
    const int64_t blocks = (rows + kSumRows - 1) / kSumRows;
    row_sums_.assign(blocks * inner, 0.0f);
#pragma omp parallel for schedule(static) if (in.numel() > kParallelWork)
    for (int64_t block = 0; block < blocks; ++block) {
        float* partial = row_sums_.data() + block * inner;
        for (int64_t r = block * kSumRows; r < std::min(rows, (block + 1) * kSumRows); ++r)
            detail::add_into_span(partial, pi + r * inner, inner);
    }
    std::fill(po, po + inner, 0.0f);
    for (int64_t block = 0; block < blocks; ++block) detail::add_into_span(po, row_sums_.data() + block * inner, inner);
}

void OwnKernelsBackend::scale(const Tensor& x, double factor, Tensor& out) {
    if (out.dtype() != DType::f32) return reference_->scale(x, factor, out);
    const float* px = x.data<float>();
    float* po = out.data<float>();
    const float f = static_cast<float>(factor);
    for_each_span(out.numel(), [&](int64_t begin, int64_t n) { detail::scale_span(px + begin, f, po + begin, n); });
}

void OwnKernelsBackend::add_inplace(Tensor& dst, const Tensor& src) {
    if (dst.dtype() != DType::f32) return reference_->add_inplace(dst, src);
    const float* ps = src.data<float>();
    float* pd = dst.data<float>();
    for_each_span(dst.numel(), [&](int64_t begin, int64_t n) { detail::add_into_span(pd + begin, ps + begin, n); });
}

void OwnKernelsBackend::transpose(const Tensor& x, int dim0, int dim1, Tensor& out) {
    if (out.dtype() != DType::f32) return reference_->transpose(x, dim0, dim1, out);
    const float* px = x.data<float>();
    float* po = out.data<float>();
    if (dim0 == dim1) return (void)std::copy_n(px, x.numel(), po);
    // x as [outer, n0, mid, n1, inner] (the axes before, at, between, at and after the
    // two swapped ones); out is [outer, n1, mid, n0, inner]. Runs of `inner` elements
    // stay contiguous: split_heads moves whole head-width runs of d.
    const Shape& shape = x.shape();
    const int lo = std::min(dim0, dim1), hi = std::max(dim0, dim1);
    auto product = [&](int begin, int end) {
        int64_t p = 1;
        for (int axis = begin; axis < end; ++axis) p *= shape[axis];
        return p;
    };
    const int64_t outer = product(0, lo), n0 = shape[lo], mid = product(lo + 1, hi), n1 = shape[hi];
    const int64_t inner = product(hi + 1, static_cast<int>(shape.size()));
    const int64_t runs = outer * n1 * mid * n0;
#pragma omp parallel for schedule(static) if (x.numel() > kParallelWork)
    for (int64_t run = 0; run < runs; ++run) {  // runs in out's order
        int64_t rest = run;
        const int64_t i0 = rest % n0;
        rest /= n0;
        const int64_t m = rest % mid;
        rest /= mid;
        const int64_t i1 = rest % n1, o = rest / n1;
        const float* from = px + (((o * n0 + i0) * mid + m) * n1 + i1) * inner;
        std::copy_n(from, inner, po + run * inner);
    }
}

// ---- embedding ----

void OwnKernelsBackend::embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out) {
    if (out.dtype() != DType::f32) return reference_->embedding_forward(table, ids, out);
    const int64_t D = table.dim(1), N = ids.numel();
    const int32_t* pid = ids.data<int32_t>();
    const float* pt = table.data<float>();
    float* po = out.data<float>();
#pragma omp parallel for schedule(static) if (N * D > kParallelWork)
    for (int64_t n = 0; n < N; ++n) std::copy_n(pt + pid[n] * D, D, po + n * D);
}

void OwnKernelsBackend::embedding_backward(const Tensor& ids, const Tensor& d_out, Tensor& d_table) {
    if (d_table.dtype() != DType::f32) return reference_->embedding_backward(ids, d_out, d_table);
    // One thread, in id order: two positions with the same id add into the same row, and
    // a fixed order keeps the sum deterministic. It is N*D adds — small next to a matmul.
    const int64_t D = d_table.dim(1), N = ids.numel();
    const int32_t* pid = ids.data<int32_t>();
    const float* pg = d_out.data<float>();
    float* pd = d_table.data<float>();
    std::fill(pd, pd + d_table.numel(), 0.0f);
    for (int64_t n = 0; n < N; ++n) {
        float* row = pd + pid[n] * D;
        const float* grad = pg + n * D;
        for (int64_t c = 0; c < D; ++c) row[c] += grad[c];
    }
}

// ---- layer norm ----

// The own kernels (layer_norm_kernels.cpp), rows split over threads: faster than oneDNN's
// layer normalization primitive on every target, forward and backward (2 threads, the
// lesson's and the Shakespeare shape's rows: scripts/bench_own_vs_onednn.cpp,
// docs/measurements.md).
void OwnKernelsBackend::layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                                           Tensor& y, Tensor& mean, Tensor& rstd) {
    if (x.dtype() != DType::f32) return reference_->layer_norm_forward(x, weight, bias, eps, y, mean, rstd);
    const int64_t C = x.dim(-1), N = x.numel() / C;
    const float *px = x.data<float>(), *pw = weight.data<float>(), *pb = bias.data<float>();
    float *py = y.data<float>(), *pm = mean.data<float>(), *pr = rstd.data<float>();
    for_each_row_block(N, C, [&](int64_t first, int64_t rows) {
        detail::layer_norm_rows(px + first * C, pw, pb, rows, C, static_cast<float>(eps), py + first * C,
                                pm + first, pr + first);
    });
}

void OwnKernelsBackend::layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean,
                                            const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& d_weight,
                                            Tensor& d_bias) {
    if (x.dtype() != DType::f32)
        return reference_->layer_norm_backward(x, weight, mean, rstd, dy, dx, d_weight, d_bias);
    const int64_t C = x.dim(-1), N = x.numel() / C;
    const float *px = x.data<float>(), *pw = weight.data<float>(), *pm = mean.data<float>(),
                *pr = rstd.data<float>(), *pdy = dy.data<float>();
    float *pdx = dx.data<float>(), *pdw = d_weight.data<float>(), *pdb = d_bias.data<float>();
    // Each block of rows gives its share of d_weight and d_bias ([2, C] of parameter_shares_),
    // added up below in block order: the same sums whatever the number of threads.
    const int64_t blocks = row_blocks(N, C);
    parameter_shares_.resize(blocks * 2 * C);
    for_each_row_block(N, C, [&](int64_t first, int64_t rows) {
        float* share = parameter_shares_.data() + first / row_block(C) * 2 * C;
        detail::layer_norm_backward_rows(px + first * C, pw, pm + first, pr + first, pdy + first * C, rows, C,
                                         pdx + first * C, share, share + C);
    });
    std::fill(pdw, pdw + C, 0.0f);
    std::fill(pdb, pdb + C, 0.0f);
    for (int64_t block = 0; block < blocks; ++block) {
        const float* share = parameter_shares_.data() + block * 2 * C;
        for (int64_t c = 0; c < C; ++c) {
            pdw[c] += share[c];
            pdb[c] += share[C + c];
        }
    }
}

// ---- GELU ----

void OwnKernelsBackend::gelu_forward(const Tensor& x, Tensor& y) {
    if (x.dtype() != DType::f32) return reference_->gelu_forward(x, y);
    // u / (1 + exp(-2z)), in activation_kernels.cpp. (oneDNN's eltwise GELU took twice as long.)
    const float* pu = x.data<float>();
    float* py = y.data<float>();
    for_each_span(x.numel(), [&](int64_t begin, int64_t n) { detail::gelu_forward_span(pu + begin, py + begin, n); });
}

void OwnKernelsBackend::gelu_backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) {
    if (x.dtype() != DType::f32) return reference_->gelu_backward(x, y, dy, dx);
    // From the forward's output, with no exp (activation_kernels.cpp): oneDNN's own GELU
    // backward computes tanh again and took three times the forward's time.
    const float *pu = x.data<float>(), *py = y.data<float>(), *pdy = dy.data<float>();
    float* pdx = dx.data<float>();
    for_each_span(x.numel(), [&](int64_t begin, int64_t n) {
        detail::gelu_backward_span(pu + begin, py + begin, pdy + begin, pdx + begin, n);
    });
}

// ---- softmax ----

void OwnKernelsBackend::softmax_forward(const Tensor& x, bool causal, Tensor& y) {
    if (x.dtype() != DType::f32) return reference_->softmax_forward(x, causal, y);
    const int64_t Tk = x.dim(-1), Tq = x.rank() >= 2 ? x.dim(-2) : 1, rows = x.numel() / Tk;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    // Row by row: y = exp(x - max) / sum over the keys the query may read, and exactly 0
    // beyond them (causal); the masked tail is never exponentiated (activation_kernels.cpp).
    // (oneDNN's softmax has no mask: it needed a masked copy first.)
#pragma omp parallel for schedule(static) if (x.numel() > kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t visible = causal ? std::min(Tk, r % Tq + (Tk - Tq) + 1) : Tk;
        detail::softmax_row(px + r * Tk, py + r * Tk, visible, Tk);
    }
}

// ---- attention ----

// task(p, scratch) for every (batch, head) pair p, over the threads, each with its own scratch.
template <class Task>
void OwnKernelsBackend::for_each_head(int64_t pairs, int64_t T, int64_t d, Task&& task) {
    const int64_t per_thread = detail::attention_scratch_floats(T, d);
    const size_t needed = static_cast<size_t>(per_thread) * omp_get_max_threads();
    if (attention_scratch_.size() < needed) attention_scratch_.resize(needed);  // grows, never shrinks
    float* scratch = attention_scratch_.data();
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pairs; ++p) task(p, scratch + omp_get_thread_num() * per_thread);
}

// One head of self-attention inside qkv [B,T,3D]: its q at `q`, its k and v D and 2D
// floats later, rows 3D apart; rope's tables when given.
detail::HeadInputs OwnKernelsBackend::head_of(const float* q, int64_t D, const RopeTable* table) {
    if (!table) return {q, q + D, q + 2 * D, 3 * D};
    return {q, q + D, q + 2 * D, 3 * D, table->cos_pairs.data(), table->sin_pairs.data()};
}

void OwnKernelsBackend::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal,
                                          Tensor& heads, Tensor& weights) {
    if (q.dtype() != DType::f32) return reference_->attention_forward(q, k, v, alpha, causal, heads, weights);
    const int64_t T = q.dim(-2), d = q.dim(-1);
    if (!in_blocks(causal, T, k.dim(-2), d))
        return Backend::attention_forward(q, k, v, alpha, causal, heads, weights);
    const float *pq = q.data<float>(), *pk = k.data<float>(), *pv = v.data<float>();
    float *ph = heads.data<float>(), *pw = weights.data<float>();
    for_each_head(q.numel() / (T * d), T, d, [&](int64_t p, float* scratch) {
        const int64_t at = p * T * d;  // this pair's [T,d] blocks
        detail::attention_forward_block({pq + at, pk + at, pv + at, d}, T, d, static_cast<float>(alpha), ph + at, d,
                                        pw + p * T * T, scratch);
    });
}

void OwnKernelsBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                           const Tensor& d_heads, double alpha, bool causal, Tensor& dq, Tensor& dk,
                                           Tensor& dv) {
    if (q.dtype() != DType::f32)
        return reference_->attention_backward(q, k, v, weights, d_heads, alpha, causal, dq, dk, dv);
    const int64_t T = q.dim(-2), d = q.dim(-1);
    if (!in_blocks(causal, T, k.dim(-2), d))
        return Backend::attention_backward(q, k, v, weights, d_heads, alpha, causal, dq, dk, dv);
    const float *pq = q.data<float>(), *pk = k.data<float>(), *pv = v.data<float>(), *pw = weights.data<float>(),
                *pdh = d_heads.data<float>();
    float *pdq = dq.data<float>(), *pdk = dk.data<float>(), *pdv = dv.data<float>();
    for_each_head(q.numel() / (T * d), T, d, [&](int64_t p, float* scratch) {
        const int64_t at = p * T * d;
        detail::attention_backward_block({pq + at, pk + at, pv + at, d}, pw + p * T * T, pdh + at, d, T, d,
                                         static_cast<float>(alpha), pdq + at, pdk + at, pdv + at, d, scratch);
    });
}

// Self-attention in blocks reads each head straight out of qkv [B,T,3D] (rows 3D apart),
// rotates its q and k in cache, and writes its output into its features of merged [B,T,D];
// the backward writes dq, dk and dv into their places in d_qkv. No [3,B,H,T,d] copy of the
// heads either way.
void OwnKernelsBackend::self_attention_forward(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start,
                                               double alpha, bool causal, Tensor& merged, Tensor& weights) {
    if (qkv.dtype() != DType::f32)
        return reference_->self_attention_forward(qkv, n_heads, rope, start, alpha, causal, merged, weights);
    const int64_t B = qkv.dim(0), T = qkv.dim(1), D = qkv.dim(2) / 3, H = n_heads, d = D / H;
    if (!in_blocks(causal, T, T, d))
        return Backend::self_attention_forward(qkv, n_heads, rope, start, alpha, causal, merged, weights);
    const RopeTable* table = rope ? &rope_table(start, T, d) : nullptr;
    const float* pqkv = qkv.data<float>();
    float *pm = merged.data<float>(), *pw = weights.data<float>();
    for_each_head(B * H, T, d, [&](int64_t p, float* scratch) {
        const int64_t b = p / H, h = p % H;
        detail::attention_forward_block(head_of(pqkv + b * T * 3 * D + h * d, D, table), T, d,
                                        static_cast<float>(alpha), pm + b * T * D + h * d, D, pw + p * T * T,
                                        scratch);
    });
}

void OwnKernelsBackend::self_attention_backward(const Tensor& qkv, const Tensor& weights, const Tensor& d_merged,
                                                int64_t n_heads, bool rope, int64_t start, double alpha, bool causal,
                                                Tensor& d_qkv) {
    if (qkv.dtype() != DType::f32)
        return reference_->self_attention_backward(qkv, weights, d_merged, n_heads, rope, start, alpha, causal,
                                                   d_qkv);
    const int64_t B = qkv.dim(0), T = qkv.dim(1), D = qkv.dim(2) / 3, H = n_heads, d = D / H;
    if (!in_blocks(causal, T, T, d))
        return Backend::self_attention_backward(qkv, weights, d_merged, n_heads, rope, start, alpha, causal,
                                                d_qkv);
    const RopeTable* table = rope ? &rope_table(start, T, d) : nullptr;
    const float *pqkv = qkv.data<float>(), *pw = weights.data<float>(), *pdm = d_merged.data<float>();
    float* pdqkv = d_qkv.data<float>();
    for_each_head(B * H, T, d, [&](int64_t p, float* scratch) {
        const int64_t b = p / H, h = p % H;
        float* dq = pdqkv + b * T * 3 * D + h * d;  // dk and dv follow D and 2D floats later
        detail::attention_backward_block(head_of(pqkv + b * T * 3 * D + h * d, D, table), pw + p * T * T,
                                         pdm + b * T * D + h * d, D, T, d, static_cast<float>(alpha), dq, dq + D,
                                         dq + 2 * D, 3 * D, scratch);
    });
}

// ---- rope ----

void OwnKernelsBackend::rope(const Tensor& x, int64_t start, bool inverse, Tensor& out) {
    if (x.dtype() != DType::f32) return reference_->rope(x, start, inverse, out);
    const int64_t d = x.dim(-1), T = x.dim(-2), rows = x.numel() / d;
    const RopeTable& table = rope_table(start, T, d);
    const float sign = inverse ? -1.0f : 1.0f;        // the inverse rotates by -theta
    const float* px = x.data<float>();
    float* po = out.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > kParallelWork)
    for (int64_t r = 0; r < rows; ++r)
        detail::rotate_row(px + r * d, po + r * d, table.cos_pairs.data() + (r % T) * d,
                           table.sin_pairs.data() + (r % T) * d, d, sign);
}

// ---- self-attention's heads ----

void OwnKernelsBackend::qkv_to_heads(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, Tensor& heads) {
    if (qkv.dtype() != DType::f32) return reference_->qkv_to_heads(qkv, n_heads, rope, start, heads);
    move_qkv(const_cast<float*>(qkv.data<float>()), heads.data<float>(), qkv.dim(0), qkv.dim(1), qkv.dim(2) / 3,
             n_heads, rope, start, /*to_heads=*/true);
}

void OwnKernelsBackend::heads_to_qkv(const Tensor& d_heads, bool rope, int64_t start, Tensor& d_qkv) {
    if (d_heads.dtype() != DType::f32) return reference_->heads_to_qkv(d_heads, rope, start, d_qkv);
    move_qkv(d_qkv.data<float>(), const_cast<float*>(d_heads.data<float>()), d_qkv.dim(0), d_qkv.dim(1),
             d_qkv.dim(2) / 3, d_heads.dim(2), rope, start, /*to_heads=*/false);
}

// Each (part, b, h) block of T rows of d numbers moves between qkv [B,T,3D] (rows 3D
// apart) and heads [3,B,H,T,d] (contiguous), q's and k's pairs rotated by +theta on the
// way to the heads, -theta on the way back. Threads take whole blocks.
void OwnKernelsBackend::move_qkv(float* qkv, float* heads, int64_t B, int64_t T, int64_t D, int64_t H, bool rope,
                                 int64_t start, bool to_heads) {
    const int64_t d = D / H, blocks = 3 * B * H;
    const RopeTable& table = rope_table(start, T, d);
    const float sign = to_heads ? 1.0f : -1.0f;
#pragma omp parallel for schedule(static) if (blocks * T * d > kParallelWork)
    for (int64_t block = 0; block < blocks; ++block) {
        const int64_t part = block / (B * H), b = block / H % B, h = block % H;
        for (int64_t t = 0; t < T; ++t) {
            float* row_qkv = qkv + (b * T + t) * 3 * D + part * D + h * d;
            float* row_heads = heads + (block * T + t) * d;
            const float* from = to_heads ? row_qkv : row_heads;
            float* to = to_heads ? row_heads : row_qkv;
            if (!rope || part == 2) {
                std::copy_n(from, d, to);
                continue;
            }
            detail::rotate_row(from, to, table.cos_pairs.data() + t * d, table.sin_pairs.data() + t * d, d, sign);
        }
    }
}

// cos and sin of theta = (start + t) * 10000^(-2j/d), computed in double and rounded to
// float as the reference does. Remade only when (start, T, d) changes.
const OwnKernelsBackend::RopeTable& OwnKernelsBackend::rope_table(int64_t start, int64_t T, int64_t d) {
    RopeTable& table = rope_table_;
    if (table.start == start && table.T == T && table.d == d) return table;
    table = RopeTable{start, T, d, std::vector<float>(T * d), std::vector<float>(T * d)};
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < d / 2; ++j) {
            const double theta = static_cast<double>(start + t) * std::pow(10000.0, -2.0 * j / d);
            const float c = static_cast<float>(std::cos(theta)), s = static_cast<float>(std::sin(theta));
            float *cos_pair = &table.cos_pairs[t * d + 2 * j], *sin_pair = &table.sin_pairs[t * d + 2 * j];
            cos_pair[0] = cos_pair[1] = c;
            sin_pair[0] = -s, sin_pair[1] = s;
        }
    return table;
}

// ---- cross-entropy ----

void OwnKernelsBackend::cross_entropy_backward(const Tensor& probs, const Tensor& targets, double d_loss,
                                               Tensor& d_logits) {
    if (probs.dtype() != DType::f32) return reference_->cross_entropy_backward(probs, targets, d_loss, d_logits);
    const int64_t V = probs.dim(-1), N = probs.numel() / V;
    const float* pp = probs.data<float>();
    const int32_t* pt = targets.data<int32_t>();
    float* pd = d_logits.data<float>();
    const float g = static_cast<float>(d_loss / N);
#pragma omp parallel for schedule(static) if (N * V > kParallelWork)
    for (int64_t n = 0; n < N; ++n) {
        detail::scale_span(pp + n * V, g, pd + n * V, V);
        pd[n * V + pt[n]] = g * (pp[n * V + pt[n]] - 1.0f);
    }
}

}  // namespace tinyformer
