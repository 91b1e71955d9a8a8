// Own kernel or oneDNN's primitive, on each kernel target? The measurement behind
// docs/measurements.md's "Own kernels against oneDNN's primitives" table.
//
//   cmake --build build --target bench_own_vs_onednn
//   build/bench_own_vs_onednn TARGET [REPEATS]      TARGET: sse4, avx2, avx512, avx512_bf16
//
// One process per target: the own kernels run on TARGET (Highway's dispatch, forced as
// TINYFORMER_ISA does) and oneDNN is capped at the same instruction set (set_max_cpu_isa,
// which must come before oneDNN's first primitive). For the lesson and the Shakespeare
// shapes, 2 threads, it times the work where oneDNN has a primitive:
//   GELU forward and backward: the own Highway kernels against oneDNN's eltwise gelu_tanh;
//   layer norm forward and backward: the own kernels against oneDNN's layer normalization
//     (with scale and shift, the variance turned into rstd and back as the backend did);
//   causal attention forward and backward: the own per-(batch, head) blocks against
//     oneDNN's batched matmuls with the softmax between them (Backend's composition).
// Each line: median milliseconds over REPEATS (default 21) calls after 3 warm-ups, and the
// ratio own / oneDNN (below 1: the own kernel is faster).
#include <dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backends/onednn_compat.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/kernel_targets.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/engine/tensor.hpp"

using namespace tinyformer;
using dnnl::memory;

namespace {

double median_ms(const std::function<void()>& work, int repeats) {
    for (int i = 0; i < 3; ++i) work();
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) {
        const auto start = std::chrono::steady_clock::now();
        work();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
}

Tensor random(const Shape& shape, uint64_t seed) {
    Rng rng(seed);
    Tensor t = Tensor::zeros(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng.normal(0, 1));
    return t;
}

// oneDNN's GELU (tanh form) over n floats, forward or backward (from the input, as ours).
struct OnednnGelu {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    dnnl::primitive forward, backward;
    memory::desc desc;

    explicit OnednnGelu(int64_t n) : desc({n}, memory::data_type::f32, memory::format_tag::a) {
        const auto algorithm = dnnl::algorithm::eltwise_gelu_tanh;
#if DNNL_VERSION_MAJOR >= 3
        const dnnl::eltwise_forward::primitive_desc fwd(engine, dnnl::prop_kind::forward_training, algorithm, desc,
                                                        desc, 0.0f, 0.0f);
        forward = dnnl::eltwise_forward(fwd);
        backward = dnnl::eltwise_backward(
            dnnl::eltwise_backward::primitive_desc(engine, algorithm, desc, desc, desc, 0.0f, 0.0f, fwd));
#else
        const dnnl::eltwise_forward::primitive_desc fwd(
            {dnnl::prop_kind::forward_training, algorithm, desc, 0.0f, 0.0f}, engine);
        forward = dnnl::eltwise_forward(fwd);
        backward = dnnl::eltwise_backward(
            dnnl::eltwise_backward::primitive_desc({algorithm, desc, desc, 0.0f, 0.0f}, engine, fwd));
#endif
    }
    void run_forward(const Tensor& x, Tensor& y) {
        forward.execute(stream, {{DNNL_ARG_SRC, memory(desc, engine, const_cast<float*>(x.data<float>()))},
                                 {DNNL_ARG_DST, memory(desc, engine, y.data<float>())}});
        stream.wait();
    }
    void run_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
        backward.execute(stream, {{DNNL_ARG_SRC, memory(desc, engine, const_cast<float*>(x.data<float>()))},
                                  {DNNL_ARG_DIFF_DST, memory(desc, engine, const_cast<float*>(dy.data<float>()))},
                                  {DNNL_ARG_DIFF_SRC, memory(desc, engine, dx.data<float>())}});
        stream.wait();
    }
};

// oneDNN's layer normalization over rows [N, C], with scale and shift, as the backend ran it
// before its own kernels: the forward reports the variance, which becomes rstd in a loop; the
// backward takes a variance again (1/rstd² with eps 0) and a shift, which it does not read.
struct OnednnLayerNorm {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    dnnl::primitive forward, backward;
    memory::desc data, stats, channels;
    std::vector<float> variance, unused_shift;

    OnednnLayerNorm(int64_t N, int64_t C)
        : data({N, C}, memory::data_type::f32, memory::format_tag::ab),
          stats({N}, memory::data_type::f32, memory::format_tag::a),
          channels({C}, memory::data_type::f32, memory::format_tag::a), variance(N), unused_shift(C, 0.0f) {
        const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
        forward = dnnl::layer_normalization_forward(onednn::layer_norm_forward(engine, data, stats, 1e-5f, flags));
        const auto hint = onednn::layer_norm_forward(engine, data, stats, 0.0f, flags);
        backward = dnnl::layer_normalization_backward(onednn::layer_norm_backward(engine, data, stats, 0.0f, flags, hint));
    }
    memory in(const memory::desc& desc, const Tensor& t) {
        return memory(desc, engine, const_cast<float*>(t.data<float>()));
    }
    void run_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& mean, Tensor& rstd) {
        float* pr = rstd.data<float>();
        forward.execute(stream, {{DNNL_ARG_SRC, in(data, x)}, {DNNL_ARG_DST, in(data, y)}, {DNNL_ARG_SCALE, in(channels, w)},
                                 {DNNL_ARG_SHIFT, in(channels, b)}, {DNNL_ARG_MEAN, in(stats, mean)},
                                 {DNNL_ARG_VARIANCE, memory(stats, engine, pr)}});
        stream.wait();
        for (int64_t n = 0; n < rstd.numel(); ++n) pr[n] = static_cast<float>(1.0 / std::sqrt(double(pr[n]) + 1e-5));
    }
    void run_backward(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                      Tensor& dx, Tensor& dw, Tensor& db) {
        const float* pr = rstd.data<float>();
        for (int64_t n = 0; n < rstd.numel(); ++n) variance[n] = 1.0f / (pr[n] * pr[n]);
        backward.execute(stream, {{DNNL_ARG_SRC, in(data, x)}, {DNNL_ARG_DIFF_DST, in(data, dy)},
                                  {DNNL_ARG_DIFF_SRC, in(data, dx)}, {DNNL_ARG_SCALE, in(channels, w)},
                                  {DNNL_ARG_SHIFT, memory(channels, engine, unused_shift.data())},
                                  {DNNL_ARG_DIFF_SCALE, in(channels, dw)}, {DNNL_ARG_DIFF_SHIFT, in(channels, db)},
                                  {DNNL_ARG_MEAN, in(stats, mean)}, {DNNL_ARG_VARIANCE, memory(stats, engine, variance.data())}});
        stream.wait();
    }
};

struct Shape4 {
    const char* name;
    int64_t B, H, T, D;
};

void line(const char* what, const Shape4& s, double own, double onednn) {
    std::printf("%-12s %-22s own %8.3f ms   oneDNN %8.3f ms   own/oneDNN %.2f\n", s.name, what, own, onednn,
                own / onednn);
}

}  // namespace

int main(int argc, char** argv) {
    const std::map<std::string, dnnl::cpu_isa> caps = {{"sse4", dnnl::cpu_isa::sse41},
                                                       {"avx2", dnnl::cpu_isa::avx2},
                                                       {"avx512", dnnl::cpu_isa::avx512_core},
                                                       {"avx512_bf16", dnnl::cpu_isa::avx512_core_bf16}};
    if (argc < 2 || !caps.count(argv[1])) {
        std::fprintf(stderr, "usage: bench_own_vs_onednn sse4|avx2|avx512|avx512_bf16 [REPEATS]\n");
        return 2;
    }
    const std::string target = argv[1];
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 21;
    dnnl::set_max_cpu_isa(caps.at(target));  // before any primitive
    // Highway 1.0 (Debian 12) has no avx512_bf16 target: its avx512 kernels then.
    const std::vector<KernelTarget> available = kernel_targets_on_this_cpu();
    const bool has_target = std::any_of(available.begin(), available.end(),
                                        [&](const KernelTarget& t) { return t.name == target; });
    use_kernel_target(has_target ? target : "avx512");
    set_num_threads(2);
    std::unique_ptr<Backend> backend = make_onednn_backend();
    std::printf("own kernels on %s, oneDNN on %s, %d threads\n", kernel_target().c_str(),
                onednn::isa_name(dnnl::get_effective_cpu_isa()).c_str(), num_threads());

    for (const Shape4& s : {Shape4{"lesson", 32, 2, 64, 64}, Shape4{"shakespeare", 12, 4, 64, 128}}) {
        const int64_t rows = s.B * s.T, d = s.D / s.H;
        // GELU on the MLP's hidden [B·T, 4D].
        const Tensor x = random({rows, 4 * s.D}, 1), dy = random({rows, 4 * s.D}, 2);
        Tensor y = Tensor::zeros(x.shape()), dx = Tensor::zeros(x.shape());
        OnednnGelu onednn(x.numel());
        line("GELU forward", s, median_ms([&] { backend->gelu_forward(x, y); }, repeats),
             median_ms([&] { onednn.run_forward(x, y); }, repeats));
        backend->gelu_forward(x, y);
        line("GELU backward", s, median_ms([&] { backend->gelu_backward(x, y, dy, dx); }, repeats),
             median_ms([&] { onednn.run_backward(x, dy, dx); }, repeats));

        // Layer norm on the residual stream [B·T, D].
        {
            const Tensor x_ln = random({rows, s.D}, 7), w = random({s.D}, 8), b = random({s.D}, 9),
                         dy_ln = random({rows, s.D}, 10);
            Tensor y_ln = Tensor::zeros(x_ln.shape()), dx_ln = Tensor::zeros(x_ln.shape());
            Tensor mean = Tensor::zeros({rows}), rstd = Tensor::zeros({rows});
            Tensor dw = Tensor::zeros({s.D}), db = Tensor::zeros({s.D});
            OnednnLayerNorm onednn_ln(rows, s.D);
            line("layer norm forward", s,
                 median_ms([&] { backend->layer_norm_forward(x_ln, w, b, 1e-5, y_ln, mean, rstd); }, repeats),
                 median_ms([&] { onednn_ln.run_forward(x_ln, w, b, y_ln, mean, rstd); }, repeats));
            backend->layer_norm_forward(x_ln, w, b, 1e-5, y_ln, mean, rstd);
            line("layer norm backward", s,
                 median_ms([&] { backend->layer_norm_backward(x_ln, w, mean, rstd, dy_ln, dx_ln, dw, db); }, repeats),
                 median_ms([&] { onednn_ln.run_backward(x_ln, w, mean, rstd, dy_ln, dx_ln, dw, db); }, repeats));
        }

        // Causal attention over [B, H, T, d].
        const Tensor q = random({s.B, s.H, s.T, d}, 3), k = random({s.B, s.H, s.T, d}, 4),
                     v = random({s.B, s.H, s.T, d}, 5), d_heads = random({s.B, s.H, s.T, d}, 6);
        Tensor heads = Tensor::zeros(q.shape()), weights = Tensor::zeros({s.B, s.H, s.T, s.T});
        Tensor dq = Tensor::zeros(q.shape()), dk = Tensor::zeros(q.shape()), dv = Tensor::zeros(q.shape());
        const double alpha = 1.0 / std::sqrt(static_cast<double>(d));
        line("attention forward", s,
             median_ms([&] { backend->attention_forward(q, k, v, alpha, true, heads, weights); }, repeats),
             median_ms([&] { backend->Backend::attention_forward(q, k, v, alpha, true, heads, weights); }, repeats));
        backend->attention_forward(q, k, v, alpha, true, heads, weights);
        line("attention backward", s,
             median_ms([&] { backend->attention_backward(q, k, v, weights, d_heads, alpha, true, dq, dk, dv); },
                       repeats),
             median_ms([&] { backend->Backend::attention_backward(q, k, v, weights, d_heads, alpha, true, dq, dk, dv); },
                       repeats));
    }
    return 0;
}
