// The oneDNN backend: float32 kernels from oneDNN (Intel's library of deep-learning
// primitives) for the work that matters — every matrix product, with its bias, its scale, the
// residual stream or the gradient accumulation applied by the product; the softmax backward,
// and the softmax under cross-entropy's loss — on top of OwnKernelsBackend
// (own_kernels_backend.hpp/.cpp): OpenMP loops for the rest, the elementwise and data-movement
// ops and the own kernels (GELU, layer norm, and causal attention one (batch, head) at a time
// with its blocks in cache, attention_blocks.cpp), each measured faster there than oneDNN's
// own. float64 calls (the gradient checks) go to the reference backend untouched, so they stay
// exact.
//
// oneDNN in three sentences. A *primitive* is a kernel generated (JIT) for one exact
// configuration: shapes, strides, flags. Making one is slow and running it is fast, so each
// is made once per configuration and cached here. A dnnl::memory is a descriptor (dims and
// strides) plus a pointer; ours point straight at the tensors' own buffers — no copies.
//
// Threads: oneDNN is built on OpenMP, and so are the own kernels' loops, so the OpenMP thread
// count (threads.hpp's running threads) sets both. Those loops never add up partial results
// from different threads (own_kernels_backend.hpp), and oneDNN's products give the same bits
// on any number of threads; the one sum split by the thread count, a weight's gradient
// (product_split_over_rows), is split by num_threads(), whatever number of threads runs it.
// So the same inputs and `--threads` give bit-identical results, however many threads
// share_cores() lets run.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/threads.hpp"
#include "elementwise_kernels.hpp"
#include "onednn_compat.hpp"
#include "own_kernels_backend.hpp"

namespace tinyformer {

namespace {

using dnnl::memory;
using Dims = memory::dims;
constexpr auto f32 = memory::data_type::f32;
constexpr auto bf16 = memory::data_type::bf16;

using detail::for_each_span;
using detail::kParallelWork;

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

class OneDnnBackend final : public OwnKernelsBackend {
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
        // A batch that is one product (a shared weight, or a weight's gradient summed over the
        // batch) runs as that one product, the biggest and fastest kind (as_one_product).
        const GemmSpec one = as_one_product(s);
        if (one.stride_c == 0 && one.batch > 1) {  // any other batch summed into one c
            for (int64_t i = 0; i < s.batch; ++i) {  // one matrix at a time, adding up
                GemmSpec entry = s;
                entry.batch = 1, entry.accumulate = s.accumulate || i > 0;
                matmul(in.entry(i, s), pc, entry);
            }
            return;
        }
        matmul(in, pc, one);
    }

    void gemm_bias(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, const GemmSpec& s) override {
        // The nn.Linear shape (one product, or a weight shared by the batch, folded into one)
        // takes the bias inside the product; anything else adds it in a pass after.
        const GemmSpec one = as_one_product(s);
        if (c.dtype() != DType::f32 || one.batch != 1 || (s.batch > 1 && s.stride_c == 0) || s.accumulate || s.K == 0 ||
            s.M == 0 || s.N == 0)
            return Backend::gemm_bias(a, b, bias, c, s);
        matmul(operands_of(a, b), c.data<float>(), one, bias.data<float>());
    }

    void gemm_residual(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& residual, Tensor& c,
                       const GemmSpec& s) override {
        // The nn.Linear shape, as in gemm_bias, with the residual added by a post-op as the product writes c.
        const GemmSpec one = as_one_product(s);
        if (c.dtype() != DType::f32 || one.batch != 1 || (s.batch > 1 && s.stride_c == 0) || s.accumulate || s.K == 0 ||
            s.M == 0 || s.N == 0)
            return Backend::gemm_residual(a, b, bias, residual, c, s);
        matmul(operands_of(a, b), c.data<float>(), one, bias.defined() ? bias.data<float>() : nullptr,
               residual.data<float>());
    }

    // ---- softmax ----

    void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
        if (y.dtype() != DType::f32) return reference_->softmax_backward(y, dy, dx);
        const int64_t Tk = y.dim(-1), rows = y.numel() / Tk;
        if (rows == 0) return;
        // dx = y * (dy - sum(dy * y)): where y is 0 (the causal mask), dx is exactly 0.
        run(softmax_kernel(rows, Tk, /*backward=*/true),
            {{DNNL_ARG_DST, y.data<float>()}, {DNNL_ARG_DIFF_DST, dy.data<float>()}, {DNNL_ARG_DIFF_SRC, dx.data<float>()}});
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

private:
    dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream_{engine_};
    std::unordered_map<std::string, Kernel> kernels_;
    std::vector<float> partial_products_;  // product_split_over_rows', [parts, M, N]
    std::vector<double> row_losses_;  // cross_entropy_forward's scratch [N]

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
            // Measured on this project's shapes inside training steps (2 threads, Zen 5):
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

    // log(sum exp(row)), in double, shifted by the row's maximum so nothing overflows.
    static double log_sum_exp(const float* row, int64_t n) {
        const double max = *std::max_element(row, row + n);
        double sum = 0;
        for (int64_t v = 0; v < n; ++v) sum += std::exp(row[v] - max);
        return max + std::log(sum);
    }
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<OneDnnBackend>(); }

}  // namespace tinyformer
