// The oneDNN backend: float32 kernels from oneDNN (Intel's library of deep-learning
// primitives) for the work that matters — every matrix product, with its bias, its scale, the
// residual stream or the gradient accumulation applied by the product; the softmax backward —
// and OpenMP loops for the rest: the elementwise and data-movement ops, and the own kernels
// (GELU, layer norm, and causal attention one (batch, head) at a time with its blocks in
// cache, attention_blocks.cpp), each measured faster here than oneDNN's own. float64 calls (the
// gradient checks) go to the reference backend untouched, so they stay exact.
//
// oneDNN in three sentences. A *primitive* is a kernel generated (JIT) for one exact
// configuration: shapes, strides, flags. Making one is slow and running it is fast, so each
// is made once per configuration and cached here. A dnnl::memory is a descriptor (dims and
// strides) plus a pointer; ours point straight at the tensors' own buffers — no copies.
//
// Threads: oneDNN is built on OpenMP, and so are the loops below, so the OpenMP thread count
// (threads.hpp's running threads) sets both. The loops split their work with static schedules
// and never add up partial results from different threads, and oneDNN's products give the
// same bits on any number of threads; the one sum split by the thread count, a weight's
// gradient (product_split_over_rows), is split by num_threads(), whatever number of threads
// runs it. So the same inputs and `--threads` give bit-identical results, however many
// threads share_cores() lets run.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/bf16.hpp"
#include "tinyformer/engine/threads.hpp"
#include "activation_kernels.hpp"
#include "attention_blocks.hpp"
#include "elementwise_kernels.hpp"
#include "layer_norm_kernels.hpp"
#include "onednn_compat.hpp"

namespace tinyformer {

namespace {

using dnnl::memory;
using Dims = memory::dims;
constexpr auto f32 = memory::data_type::f32;
constexpr auto bf16 = memory::data_type::bf16;

// A loop over fewer elements than this runs on one thread: waking the pool would cost more.
constexpr int64_t kParallelWork = 1 << 15;

// task(begin, n) over [0, total) in spans of whole cache lines, one run of spans per thread
// (static), or the whole on one thread when it is small.
template <class SpanTask>
void for_each_span(int64_t total, SpanTask&& task) {
    constexpr int64_t span = 4096;  // floats: 16 KiB, a few microseconds of work
    const int64_t spans = (total + span - 1) / span;
#pragma omp parallel for schedule(static) if (total > kParallelWork)
    for (int64_t s = 0; s < spans; ++s) task(s * span, std::min(span, total - s * span));
}

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

// A primitive ready to run, with one memory object per argument (DNNL_ARG_SRC, ...). The
// memories' pointers are set anew on every call, to that call's tensors.
struct Kernel {
    dnnl::primitive primitive;
    std::unordered_map<int, memory> args;
    int residual_arg = 0;  // a matmul's: the argument its residual is passed as
};

// "name 3 64 64 ..." — a cache key from a primitive's kind and every number that shapes it.
std::string key_of(const char* kind, std::initializer_list<int64_t> numbers) {
    std::string key = kind;
    for (int64_t n : numbers) key += ' ' + std::to_string(n);
    return key;
}

// An operand of a batched matmul as oneDNN sees it: logically [batch, rows, cols], stored
// row-major as written or as its transpose, batch entries `stride` elements apart. Stride 0
// (one matrix shared by the whole batch) becomes a batch of 1, which oneDNN broadcasts.
memory::desc matrix_desc(int64_t batch, int64_t rows, int64_t cols, bool transposed, int64_t stride,
                         memory::data_type type = f32) {
    const int64_t entry = stride == 0 ? rows * cols : stride;
    const Dims dims = {stride == 0 ? 1 : batch, rows, cols};
    const Dims strides = transposed ? Dims{entry, 1, rows} : Dims{entry, cols, 1};
    return memory::desc(dims, type, strides);
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

class OneDnnBackend final : public Backend {
public:
    std::string name() const override { return "onednn"; }

    // oneDNN runs bf16 products on AVX512-BF16 (Cooper Lake, Zen 4 and later) or AMX (without
    // them 2.6 has no bf16 matmul at all); the effective ISA is what it dispatches to, lowered
    // by ONEDNN_MAX_CPU_ISA when that is set.
    std::string bf16_unsupported() const override {
        const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
        if (onednn::has_bf16_products(isa)) return "";
#if defined(__x86_64__)
        return "oneDNN's instruction set on this CPU, " + onednn::isa_name(isa) +
               ", has no bf16 instructions (AVX512-BF16 or AMX)";
#else
        return "oneDNN's instruction set on this CPU, " + onednn::isa_name(isa) +
               ", runs no bf16 products in this build (only x86's AVX512-BF16 and AMX are used)";
#endif
    }

    // ---- matmul ----

    void gemm(const Tensor& a, const Tensor& b, Tensor& c, const GemmSpec& s) override {
        if (c.dtype() != DType::f32) return reference_->gemm(a, b, c, s);
        const Operands in = operands_of(a, b);
        float* pc = c.data<float>();
        if (s.batch == 0 || s.M == 0 || s.N == 0) return;
        if (s.stride_c == 0 && s.batch > 1) {  // the batch is summed into one c
            if (s.trans_a && !s.trans_b && s.stride_a == s.K * s.M && s.stride_b == s.K * s.N) {
                // Both operands stack their batch along the contracted axis ([batch*K, M] and
                // [batch*K, N]), so the sum over the batch is one longer contraction.
                GemmSpec flat = s;
                flat.batch = 1, flat.K = s.batch * s.K;
                return matmul(in, pc, flat);
            }
            for (int64_t i = 0; i < s.batch; ++i) {  // otherwise one matrix at a time, adding up
                GemmSpec one = s;
                one.batch = 1, one.accumulate = s.accumulate || i > 0;
                matmul(in.entry(i, s), pc, one);
            }
            return;
        }
        matmul(in, pc, weight_flattened(s));
    }

    // A weight shared by the batch (nn.Linear): the batch stacks along the rows of a and c,
    // so [batch*M, K] @ [K, N] is one product, the biggest and fastest kind. Other specs
    // come back as they are.
    static GemmSpec weight_flattened(const GemmSpec& s) {
        if (s.batch <= 1 || s.stride_b != 0 || s.trans_a || s.stride_a != s.M * s.K || s.stride_c != s.M * s.N)
            return s;
        GemmSpec flat = s;
        flat.batch = 1, flat.M = s.batch * s.M;
        return flat;
    }

    void gemm_bias(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, const GemmSpec& s) override {
        // The nn.Linear shape (one product, or a weight shared by the batch, flattened to one)
        // takes the bias inside the product; anything else adds it in a pass after.
        const GemmSpec one = weight_flattened(s);
        if (c.dtype() != DType::f32 || one.batch != 1 || s.accumulate || s.K == 0 || s.M == 0 || s.N == 0)
            return Backend::gemm_bias(a, b, bias, c, s);
        matmul(operands_of(a, b), c.data<float>(), one, bias.data<float>());
    }

    void gemm_residual(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& residual, Tensor& c,
                       const GemmSpec& s) override {
        // The nn.Linear shape, as in gemm_bias, with the residual added by a post-op as the product writes c.
        const GemmSpec one = weight_flattened(s);
        if (c.dtype() != DType::f32 || one.batch != 1 || s.accumulate || s.K == 0 || s.M == 0 || s.N == 0)
            return Backend::gemm_residual(a, b, bias, residual, c, s);
        matmul(operands_of(a, b), c.data<float>(), one, bias.defined() ? bias.data<float>() : nullptr,
               residual.data<float>());
    }

    // out = x rounded to bfloat16, to nearest even (bf16.hpp's to_bf16_bits, in the own
    // kernels' vectors): as fast as oneDNN's reorder (35 µs against 39 µs for 393,216 floats on
    // 2 threads, as a plain loop) and plainer to read.
    void to_bf16(const Tensor& x, Tensor& out) override {
        const float* from = x.data<float>();
        uint16_t* to = out.data<uint16_t>();
        for_each_span(x.numel(), [&](int64_t begin, int64_t n) { detail::to_bf16_span(from + begin, to + begin, n); });
    }

    // ---- elementwise ----

    void add(const Tensor& a, const Tensor& b, Tensor& out) override {
        if (out.dtype() != DType::f32) return reference_->add(a, b, out);
        broadcast_binary(a, b, out, detail::add_span, [](float x, float y) { return x + y; });
    }

    void mul(const Tensor& a, const Tensor& b, Tensor& out) override {
        if (out.dtype() != DType::f32) return reference_->mul(a, b, out);
        broadcast_binary(a, b, out, detail::mul_span, [](float x, float y) { return x * y; });
    }

    void sum_to(const Tensor& in, Tensor& out) override {
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

    void scale(const Tensor& x, double factor, Tensor& out) override {
        if (out.dtype() != DType::f32) return reference_->scale(x, factor, out);
        const float* px = x.data<float>();
        float* po = out.data<float>();
        const float f = static_cast<float>(factor);
        for_each_span(out.numel(), [&](int64_t begin, int64_t n) { detail::scale_span(px + begin, f, po + begin, n); });
    }

    void add_inplace(Tensor& dst, const Tensor& src) override {
        if (dst.dtype() != DType::f32) return reference_->add_inplace(dst, src);
        const float* ps = src.data<float>();
        float* pd = dst.data<float>();
        for_each_span(dst.numel(), [&](int64_t begin, int64_t n) { detail::add_into_span(pd + begin, ps + begin, n); });
    }

    void transpose(const Tensor& x, int dim0, int dim1, Tensor& out) override {
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

    void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out) override {
        if (out.dtype() != DType::f32) return reference_->embedding_forward(table, ids, out);
        const int64_t D = table.dim(1), N = ids.numel();
        const int32_t* pid = ids.data<int32_t>();
        const float* pt = table.data<float>();
        float* po = out.data<float>();
#pragma omp parallel for schedule(static) if (N * D > kParallelWork)
        for (int64_t n = 0; n < N; ++n) std::copy_n(pt + pid[n] * D, D, po + n * D);
    }

    void embedding_backward(const Tensor& ids, const Tensor& d_out, Tensor& d_table) override {
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
    void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) override {
        if (x.dtype() != DType::f32) return reference_->layer_norm_forward(x, weight, bias, eps, y, mean, rstd);
        const int64_t C = x.dim(-1), N = x.numel() / C;
        const float *px = x.data<float>(), *pw = weight.data<float>(), *pb = bias.data<float>();
        float *py = y.data<float>(), *pm = mean.data<float>(), *pr = rstd.data<float>();
        for_each_row_block(N, C, [&](int64_t first, int64_t rows) {
            detail::layer_norm_rows(px + first * C, pw, pb, rows, C, static_cast<float>(eps), py + first * C,
                                    pm + first, pr + first);
        });
    }

    void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                             const Tensor& dy, Tensor& dx, Tensor& d_weight, Tensor& d_bias) override {
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

    void gelu_forward(const Tensor& x, Tensor& y) override {
        if (x.dtype() != DType::f32) return reference_->gelu_forward(x, y);
        // u / (1 + exp(-2z)), in activation_kernels.cpp. (oneDNN's eltwise GELU took twice as long.)
        const float* pu = x.data<float>();
        float* py = y.data<float>();
        for_each_span(x.numel(), [&](int64_t begin, int64_t n) { detail::gelu_forward_span(pu + begin, py + begin, n); });
    }

    void gelu_backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) override {
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

    void softmax_forward(const Tensor& x, bool causal, Tensor& y) override {
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

    void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
        if (y.dtype() != DType::f32) return reference_->softmax_backward(y, dy, dx);
        const int64_t Tk = y.dim(-1), rows = y.numel() / Tk;
        if (rows == 0) return;
        // dx = y * (dy - sum(dy * y)): where y is 0 (the causal mask), dx is exactly 0.
        run(softmax_kernel(rows, Tk, /*backward=*/true),
            {{DNNL_ARG_DST, y.data<float>()}, {DNNL_ARG_DIFF_DST, dy.data<float>()}, {DNNL_ARG_DIFF_SRC, dx.data<float>()}});
    }

    // ---- attention ----
    // Causal attention whose T and d are multiples of 16 runs one (batch, head) per task with
    // its blocks in cache (attention_blocks.cpp); any other attention (cross-attention,
    // sampling's new queries against a longer cache, odd T or d) is Backend's composition of
    // products and softmax.
    static bool in_blocks(bool causal, int64_t Tq, int64_t Tk, int64_t d) {
        return causal && Tq == Tk && Tq > 0 && Tq % 16 == 0 && d > 0 && d % 16 == 0;
    }

    // task(p, scratch) for every (batch, head) pair p, over the threads, each with its own scratch.
    template <class Task>
    void for_each_head(int64_t pairs, int64_t T, int64_t d, Task&& task) {
        const int64_t per_thread = detail::attention_scratch_floats(T, d);
        const size_t needed = static_cast<size_t>(per_thread) * omp_get_max_threads();
        if (attention_scratch_.size() < needed) attention_scratch_.resize(needed);  // grows, never shrinks
        float* scratch = attention_scratch_.data();
#pragma omp parallel for schedule(static)
        for (int64_t p = 0; p < pairs; ++p) task(p, scratch + omp_get_thread_num() * per_thread);
    }

    void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal,
                           Tensor& heads, Tensor& weights) override {
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

    void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                            const Tensor& d_heads, double alpha, bool causal, Tensor& dq, Tensor& dk,
                            Tensor& dv) override {
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
    void self_attention_forward(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, double alpha,
                                bool causal, Tensor& merged, Tensor& weights) override {
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

    void self_attention_backward(const Tensor& qkv, const Tensor& weights, const Tensor& d_merged, int64_t n_heads,
                                 bool rope, int64_t start, double alpha, bool causal, Tensor& d_qkv) override {
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

    void rope(const Tensor& x, int64_t start, bool inverse, Tensor& out) override {
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

    void qkv_to_heads(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, Tensor& heads) override {
        if (qkv.dtype() != DType::f32) return reference_->qkv_to_heads(qkv, n_heads, rope, start, heads);
        move_qkv(const_cast<float*>(qkv.data<float>()), heads.data<float>(), qkv.dim(0), qkv.dim(1), qkv.dim(2) / 3,
                 n_heads, rope, start, /*to_heads=*/true);
    }

    void heads_to_qkv(const Tensor& d_heads, bool rope, int64_t start, Tensor& d_qkv) override {
        if (d_heads.dtype() != DType::f32) return reference_->heads_to_qkv(d_heads, rope, start, d_qkv);
        move_qkv(d_qkv.data<float>(), const_cast<float*>(d_heads.data<float>()), d_qkv.dim(0), d_qkv.dim(1),
                 d_qkv.dim(2) / 3, d_heads.dim(2), rope, start, /*to_heads=*/false);
    }

    // Each (part, b, h) block of T rows of d numbers moves between qkv [B,T,3D] (rows 3D
    // apart) and heads [3,B,H,T,d] (contiguous), q's and k's pairs rotated by +theta on the
    // way to the heads, -theta on the way back. Threads take whole blocks.
    void move_qkv(float* qkv, float* heads, int64_t B, int64_t T, int64_t D, int64_t H, bool rope, int64_t start,
                  bool to_heads) {
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

    // ---- cross-entropy ----

    void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& probs) override {
        if (logits.dtype() != DType::f32) return reference_->cross_entropy_forward(logits, targets, loss, probs);
        const int64_t V = logits.dim(-1), N = logits.numel() / V;
        const float* pl = logits.data<float>();
        float* pp = probs.data<float>();
        const int32_t* pt = targets.data<int32_t>();
        run(softmax_kernel(N, V, /*backward=*/false), {{DNNL_ARG_SRC, pl}, {DNNL_ARG_DST, pp}});
        // Each row's loss is -log p[target]. A probability near float's underflow (a
        // confident, wrong model) would give infinity or a wrong finite loss, so such a row
        // is redone with log-sum-exp. "Near" is below 1e-30, not below float's smallest
        // normal: oneDNN's SVE softmax on arm64 clamps e^-150 to about 1e-38, not to 0
        // (scripts/cross-arm64.sh found it), and -log of that is 87, not 150.
        constexpr double kSmallestTrusted = 1e-30;
        row_losses_.resize(N);
#pragma omp parallel for schedule(static) if (N * V > kParallelWork)
        for (int64_t n = 0; n < N; ++n) {
            const double p = pp[n * V + pt[n]];
            row_losses_[n] = p >= kSmallestTrusted ? -std::log(p) : log_sum_exp(pl + n * V, V) - pl[n * V + pt[n]];
        }
        double total = 0;  // summed in order, on one thread: deterministic
        for (int64_t n = 0; n < N; ++n) total += row_losses_[n];
        loss.data<float>()[0] = static_cast<float>(total / N);
    }

    void cross_entropy_backward(const Tensor& probs, const Tensor& targets, double d_loss, Tensor& d_logits) override {
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

private:
    // cos and sin of every angle rope needs for one (start, T, d), [T, d] each, one entry per
    // feature so that a row rotates a register at a time (rotate_row, HeadInputs): for pair j of
    // position t, both of its features hold cos theta, and sin_pairs holds -sin theta, +sin theta.
    struct RopeTable {
        int64_t start = -1, T = 0, d = 0;
        std::vector<float> cos_pairs, sin_pairs;
    };

    std::unique_ptr<Backend> reference_ = make_reference_backend();
    dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream_{engine_};
    std::unordered_map<std::string, Kernel> kernels_;
    std::vector<float> parameter_shares_;  // layer_norm_backward's, [blocks of rows, 2, C]
    std::vector<float> row_sums_;          // sum_to's, [blocks of rows, inner]
    std::vector<float> partial_products_;  // product_split_over_rows', [parts, M, N]
    RopeTable rope_table_;  // the last one made: training asks for the same one every time
    std::vector<double> row_losses_;  // cross_entropy_forward's scratch [N]
    std::vector<float> attention_scratch_;  // for_each_head's, for every thread

    // One head of self-attention inside qkv [B,T,3D]: its q at `q`, its k and v D and 2D
    // floats later, rows 3D apart; rope's tables when given.
    static detail::HeadInputs head_of(const float* q, int64_t D, const RopeTable* table) {
        if (!table) return {q, q + D, q + 2 * D, 3 * D};
        return {q, q + D, q + 2 * D, 3 * D, table->cos_pairs.data(), table->sin_pairs.data()};
    }

    // The kernel cached under `key` (the thread count is part of it: oneDNN fixes a
    // primitive's work split when it makes it), made by make() on first use.
    template <class Make>
    Kernel& cached(const std::string& key, Make&& make) {
        const std::string full_key = key + " threads " + std::to_string(omp_get_max_threads());
        auto found = kernels_.find(full_key);
        if (found == kernels_.end()) found = kernels_.emplace(full_key, make()).first;
        return found->second;
    }

    Kernel make_kernel(dnnl::primitive primitive, const std::vector<std::pair<int, memory::desc>>& args) {
        Kernel k{std::move(primitive), {}};
        for (const auto& [arg, desc] : args) k.args.emplace(arg, memory(desc, engine_, DNNL_MEMORY_NONE));
        return k;
    }

    // Points the kernel's memories at this call's buffers and runs it.
    void run(Kernel& k, const std::vector<std::pair<int, const void*>>& buffers) {
        for (const auto& [arg, pointer] : buffers) k.args.at(arg).set_data_handle(const_cast<void*>(pointer));
        k.primitive.execute(stream_, k.args);
        stream_.wait();
    }

    // A product's two operands: float32 both, or bf16 both (mixed precision).
    struct Operands {
        const std::byte *a, *b;
        memory::data_type type;
        size_t element_bytes;
        Operands entry(int64_t i, const GemmSpec& s) const {  // batch entry i's
            return {a + i * s.stride_a * element_bytes, b + i * s.stride_b * element_bytes, type, element_bytes};
        }
    };
    static Operands operands_of(const Tensor& a, const Tensor& b) {
        auto start = [](const Tensor& t) { return t.storage()->bytes() + t.offset_bytes(); };
        if (a.dtype() == DType::bf16 && b.dtype() == DType::bf16) return {start(a), start(b), bf16, 2};
        return {reinterpret_cast<const std::byte*>(a.data<float>()), reinterpret_cast<const std::byte*>(b.data<float>()),
                f32, 4};
    }

    // c [M,N] (+)= aᵀ b, a [K,M] and b [K,N]: a weight's gradient, dW = dYᵀ X summed over the
    // K rows of a batch. The rows go in `parts` runs, one per thread, each summed by a one-thread
    // sgemm into its own partial sums; then c = (c +) part 0 + part 1 + ... in order. The runs
    // follow the rows as the kernels before split them (each thread its own run of rows, static),
    // so a thread reads the rows it wrote itself: oneDNN's own two threads each read half of
    // their operand from the other core's cache, which cost up to 15 % (docs/performance.md).
    // The bits depend on the number of runs, num_threads() (--threads), and not on how many
    // threads run them now (share_cores may run two runs on one thread).
    static constexpr int64_t kRowsPerPart = 128;  // fewer, and one sgemm over all rows is as fast
    void product_split_over_rows(const float* a, const float* b, float* c, const GemmSpec& s, int64_t parts) {
        const int64_t size = s.M * s.N;
        partial_products_.resize(parts * size);
        bool failed = false;
#pragma omp parallel for schedule(static) reduction(|| : failed)
        for (int64_t part = 0; part < parts; ++part) {
            const int64_t first = s.K * part / parts, rows = s.K * (part + 1) / parts - first;
            failed = dnnl_sgemm('T', 'N', s.M, s.N, rows, 1.0f, a + first * s.M, s.M, b + first * s.N, s.N, 0.0f,
                                partial_products_.data() + part * size, s.N) != dnnl_success || failed;
        }
        if (failed) throw std::runtime_error("oneDNN sgemm failed");
        for_each_span(size, [&](int64_t begin, int64_t n) {
            if (!s.accumulate) std::fill_n(c + begin, n, 0.0f);
            for (int64_t part = 0; part < parts; ++part)
                detail::add_into_span(c + begin, partial_products_.data() + part * size + begin, n);
        });
    }

    // c = alpha · op(a) @ op(b) (+ c), batched as GemmSpec says (stride_c is not 0 here, or batch is 1);
    // with a bias [N], + bias on every row; with a residual (shaped as c, batch 1), + residual.
    void matmul(const Operands& in, float* c, GemmSpec s, const float* bias = nullptr,
                const float* residual = nullptr) {
        // One matrix each: the strides mean nothing, and left in they would describe a
        // batch axis that is not densely packed, which oneDNN's fastest matmul (brgemm) refuses.
        if (s.batch == 1) s.stride_a = s.stride_b = s.stride_c = 0;
        if (s.K == 0) {  // an empty sum
            if (!s.accumulate) std::fill(c, c + (s.batch - 1) * s.stride_c + s.M * s.N, 0.0f);
            return;
        }
        const float alpha = static_cast<float>(s.alpha);
        if (in.type == f32 && !bias && (s.batch == 1 || (s.trans_a && !residual))) {
            // Float32 products without a bias go through oneDNN's BLAS-style sgemm; so do the
            // batched ones with a transposed a, attention's dV = weightsᵀ dO and dK = dScoresᵀ q.
            // Measured on this project's shapes inside training steps (2 threads, Zen 4):
            // - every weight gradient, dW = dYᵀ X (a transposed): 15-30 % faster than the
            //   matmul primitive, whose fastest kernel first copies a transposed a;
            // - the other products (the input gradients, the products with a residual): 5-15 %
            //   faster, the whole Shakespeare step 3 % and the lesson's 1-2 %;
            // - a batch with a transposed a, one whole product per thread (sgemm called inside a
            //   parallel region keeps to its thread): 35-45 % faster than the batched primitive
            //   on attention's 64×64 blocks.
            // A bias stays a post-op of the matmul primitive: written into c first and added by
            // sgemm's beta, it made the MLP's up-projection 10 % slower.
            // bf16 has no such call: its matmul kernel reads the transposed a itself, which on
            // the weight gradients' shapes takes 15-27 % longer than a plain a (measured
            // standalone) and far less than transposing it first.
            const float *a = reinterpret_cast<const float*>(in.a), *b = reinterpret_cast<const float*>(in.b);
            float beta = s.accumulate ? 1.0f : 0.0f;
            if (residual) {  // c = residual, then c += a @ b (gemm_residual never accumulates)
                // Copied by every thread, a span each: on one thread the other waited for it.
                for_each_span(s.M * s.N, [&](int64_t begin, int64_t n) { std::copy_n(residual + begin, n, c + begin); });
                beta = 1.0f;
            }
            auto product = [&](int64_t i) {  // entry i of the batch; true if it failed
                return dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.M, s.N, s.K, alpha,
                                  a + i * s.stride_a, s.trans_a ? s.M : s.K, b + i * s.stride_b,
                                  s.trans_b ? s.K : s.N, beta, c + i * s.stride_c, s.N) != dnnl_success;
            };
            bool failed = false;
            const int64_t parts = omp_in_parallel() ? 1 : num_threads();
            if (s.batch == 1 && s.trans_a && !s.trans_b && !residual && alpha == 1.0f && parts > 1 &&
                s.K >= kRowsPerPart * parts) {
                product_split_over_rows(a, b, c, s, parts);  // a weight's gradient: each thread its own rows
            } else if (s.batch == 1) {
                failed = product(0);  // outside any parallel region: sgemm uses every thread
            } else {
#pragma omp parallel for schedule(static) reduction(|| : failed)
                for (int64_t i = 0; i < s.batch; ++i) failed = product(i) || failed;
            }
            if (failed) throw std::runtime_error("oneDNN sgemm failed");
            return;
        }
        // bf16 operands: oneDNN's kernel for bf16 inputs, float32 sums and float32 c, with the
        // same bias, scale, residual and accumulation.
        const memory::data_type input_type = in.type;
        int32_t alpha_bits;
        std::memcpy(&alpha_bits, &alpha, sizeof alpha_bits);
        Kernel& k = cached(key_of("matmul", {s.batch, s.M, s.N, s.K, s.trans_a, s.trans_b, s.stride_a, s.stride_b,
                                             s.stride_c, s.accumulate, alpha_bits, bias != nullptr,
                                             residual != nullptr, input_type == bf16}),
                           [&] {
                               const memory::desc a_desc = matrix_desc(s.batch, s.M, s.K, s.trans_a, s.stride_a, input_type);
                               const memory::desc b_desc = matrix_desc(s.batch, s.K, s.N, s.trans_b, s.stride_b, input_type);
                               const memory::desc c_desc = matrix_desc(s.batch, s.M, s.N, false, s.stride_c);
                               dnnl::primitive_attr attr;
                               dnnl::post_ops ops;
                               if (alpha != 1.0f) onednn::scale_output(attr, ops, alpha);  // c = alpha · a @ b
                               if (s.accumulate) ops.append_sum(1.0f);  // c += a @ b: a "sum" post-op adds the old c
                               // + residual: a binary post-op, whose input is named by its place among the post-ops
                               const int residual_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len()) | DNNL_ARG_SRC_1;
                               if (residual) ops.append_binary(dnnl::algorithm::binary_add, c_desc);
                               attr.set_post_ops(ops);
                               std::vector<std::pair<int, memory::desc>> args = {
                                   {DNNL_ARG_SRC, a_desc}, {DNNL_ARG_WEIGHTS, b_desc}, {DNNL_ARG_DST, c_desc}};
                               const memory::desc bias_desc({1, 1, s.N}, f32, Dims{s.N, s.N, 1});  // [1,1,N], broadcast over rows
                               if (bias) args.emplace_back(DNNL_ARG_BIAS, bias_desc);
                               if (residual) args.emplace_back(residual_arg, c_desc);
                               const auto pd = onednn::matmul(engine_, a_desc, b_desc, bias ? &bias_desc : nullptr,
                                                              c_desc, attr);
                               Kernel kernel = make_kernel(dnnl::matmul(pd), args);
                               kernel.residual_arg = residual_arg;
                               return kernel;
                           });
        std::vector<std::pair<int, const void*>> buffers = {{DNNL_ARG_SRC, in.a}, {DNNL_ARG_WEIGHTS, in.b},
                                                            {DNNL_ARG_DST, c}};
        if (bias) buffers.emplace_back(DNNL_ARG_BIAS, bias);
        if (residual) buffers.emplace_back(k.residual_arg, residual);
        run(k, buffers);
    }

    // Softmax over the last axis of [rows, n]; the backward takes y and dy and gives dx.
    Kernel& softmax_kernel(int64_t rows, int64_t n, bool backward) {
        return cached(key_of(backward ? "softmax_backward" : "softmax_forward", {rows, n}), [&] {
            const memory::desc data({rows, n}, f32, memory::format_tag::ab);
            const auto forward = onednn::softmax_forward(engine_, data, 1);
            if (!backward)
                return make_kernel(dnnl::softmax_forward(forward), {{DNNL_ARG_SRC, data}, {DNNL_ARG_DST, data}});
            const auto pd = onednn::softmax_backward(engine_, data, 1, forward);
            return make_kernel(dnnl::softmax_backward(pd),
                               {{DNNL_ARG_DST, data}, {DNNL_ARG_DIFF_DST, data}, {DNNL_ARG_DIFF_SRC, data}});
        });
    }

    // cos and sin of theta = (start + t) * 10000^(-2j/d), computed in double and rounded to
    // float as the reference does. Remade only when (start, T, d) changes.
    const RopeTable& rope_table(int64_t start, int64_t T, int64_t d) {
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

    // log(sum exp(row)), in double, shifted by the row's maximum so nothing overflows.
    static double log_sum_exp(const float* row, int64_t n) {
        const double max = *std::max_element(row, row + n);
        double sum = 0;
        for (int64_t v = 0; v < n; ++v) sum += std::exp(row[v] - max);
        return max + std::log(sum);
    }

    // sum_to for any broadcast (e.g. [B,T,D] → [T,1]): the reference's walk, on one thread.
    static void sum_to_any(const Tensor& in, Tensor& out, const Broadcast& target) {
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
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<OneDnnBackend>(); }

}  // namespace tinyformer
