// bf16 matrix products (train.precision = "bf16"): the rounding itself, and each product held
// to its float32 twin within a bound derived from the formats, not tuned. For c = a·b summed
// over K terms, with u = 2^-8 (bfloat16's unit roundoff: 8 bits of precision) and
// γ_K = K·2^-24 / (1 - K·2^-24) (float32's error bound for a K-term sum):
//
//   rounding both inputs:  |ã·b̃ - a·b| <= (2u + u²)·|a|·|b|     per term
//   summing in float32:    |fl(Σ ã·b̃) - Σ ã·b̃| <= γ_K · Σ |ã|·|b̃|
//
// so |c_bf16 - c_exact| <= (2u + u²)·S + γ_K·(1 + u)²·S with S = Σ |a|·|b|, and the float32
// product is within γ_K·S of exact. A product that summed in bfloat16 would be off by up to
// K·u·S, which these bounds reject (tested below).
#include "catch.hpp"
#include "test_helpers.hpp"

#include <cmath>
#include <array>
#include <functional>
#include <limits>
#include <vector>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/bf16.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/rng.hpp"

using namespace tinyformer;
using tinyformer::testing::BackendScope;

namespace {

Tensor random_tensor(Rng& rng, const Shape& shape, bool positive = false) {
    std::vector<double> values(static_cast<size_t>(numel_of(shape)));
    for (double& v : values) v = positive ? rng.uniform() : rng.normal(0.0, 1.0);
    return Tensor::from(values, shape, DType::f32);
}

constexpr double u = kBf16Roundoff;  // 2^-8

double gamma_f32(int64_t K) {
    const double k_eps = static_cast<double>(K) * std::ldexp(1.0, -24);
    return k_eps / (1.0 - k_eps);
}

// a [M,K] (row-major) times b [K,N]: the exact product (in double) and S = |a|·|b|.
struct Exact {
    std::vector<double> c, magnitude;
};
Exact exact_product(const Tensor& a, const Tensor& b, int64_t M, int64_t K, int64_t N) {
    Exact e{std::vector<double>(M * N, 0.0), std::vector<double>(M * N, 0.0)};
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < N; ++j) {
                const double term = a.at(i * K + k) * b.at(k * N + j);
                e.c[i * N + j] += term;
                e.magnitude[i * N + j] += std::abs(term);
            }
    return e;
}

double bf16_bound(double magnitude, int64_t K) {
    return (2 * u + u * u) * magnitude + gamma_f32(K) * (1 + u) * (1 + u) * magnitude;
}

// The number of elements of c outside bf16_bound of the exact product.
int64_t outside_bound(const std::vector<double>& c, const Exact& exact, int64_t K) {
    int64_t outside = 0;
    for (size_t i = 0; i < c.size(); ++i)
        if (std::abs(c[i] - exact.c[i]) > bf16_bound(exact.magnitude[i], K)) ++outside;
    return outside;
}

// A product that rounds its inputs to bf16 and, wrongly, also keeps its running sum in bf16.
std::vector<double> product_summed_in_bf16(const Tensor& a, const Tensor& b, int64_t M, int64_t K, int64_t N) {
    std::vector<double> c(M * N);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            float sum = 0;
            for (int64_t k = 0; k < K; ++k)
                sum = round_to_bf16(sum + round_to_bf16(a.data<float>()[i * K + k]) *
                                              round_to_bf16(b.data<float>()[k * N + j]));
            c[i * N + j] = sum;
        }
    return c;
}

// The product of a and b rounded to bf16 (bf16_copy), through the current backend.
std::vector<double> gemm_bf16(const Tensor& a, const Tensor& b, int64_t M, int64_t K, int64_t N) {
    Tensor c = Tensor::empty({M, N}, DType::f32);
    GemmSpec spec;
    spec.M = M, spec.N = N, spec.K = K;
    backend().gemm(bf16_copy(a), bf16_copy(b), c, spec);
    return c.to_vector();
}

}  // namespace

TEST_CASE("round_to_bf16 rounds to nearest, ties to even, keeping float32's range", "[bf16]") {
    CHECK(round_to_bf16(1.0f) == 1.0f);
    CHECK(round_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 1.0f);  // a tie: to the even (1.0)
    CHECK(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 1.0f + std::ldexp(1.0f, -6));  // a tie, up to even
    CHECK(round_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 1.0f + std::ldexp(1.0f, -7));
    CHECK(std::isfinite(round_to_bf16(-3.0e38f)));  // below bfloat16's largest, 3.39e38
    CHECK(round_to_bf16(1e-30f) > 0);
    CHECK(std::isinf(round_to_bf16(std::numeric_limits<float>::infinity())));
    CHECK(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
    Rng rng(1);
    for (int i = 0; i < 10000; ++i) {
        const float x = static_cast<float>(rng.normal(0.0, 100.0));
        CHECK(std::abs(round_to_bf16(x) - x) <= u * std::abs(x));
        CHECK(round_to_bf16(round_to_bf16(x)) == round_to_bf16(x));
    }
}

TEST_CASE("bf16 products stay within the bound of bf16 inputs summed in float32", "[bf16]") {
    for (const char* backend_name : {"reference", "onednn"}) {
        BackendScope scope(std::string(backend_name) == "onednn" ? make_onednn_backend() : make_reference_backend());
        if (!backend().bf16_unsupported().empty()) {
            WARN("not tried on " << backend_name << " (its bf16 kernels, the fast path): " << backend().bf16_unsupported());
            continue;
        }
        // The model's shapes: projections and MLP (K = 128, 512), a weight gradient (K = B·T).
        for (auto [M, K, N] : {std::array<int64_t, 3>{96, 128, 64}, {64, 512, 48}, {48, 768, 32}}) {
            INFO(backend_name << " " << M << "×" << K << "×" << N);
            Rng rng(static_cast<uint64_t>(M * K));
            const Tensor a = random_tensor(rng, {M, K}), b = random_tensor(rng, {K, N});
            const Exact exact = exact_product(a, b, M, K, N);
            CHECK(outside_bound(gemm_bf16(a, b, M, K, N), exact, K) == 0);
            // The bound is tight enough to matter: summing in bf16 breaks it (positive data,
            // where the running sum grows and its rounding with it).
            const Tensor pa = random_tensor(rng, {M, K}, true), pb = random_tensor(rng, {K, N}, true);
            const Exact positive = exact_product(pa, pb, M, K, N);
            CHECK(outside_bound(gemm_bf16(pa, pb, M, K, N), positive, K) == 0);
            CHECK(outside_bound(product_summed_in_bf16(pa, pb, M, K, N), positive, K) > M * N / 2);
            // ... and bf16 is really used: a float32 product would be within 2 γ_K of this one.
            Tensor c32 = Tensor::empty({M, N}, DType::f32);
            GemmSpec spec;
            spec.M = M, spec.N = N, spec.K = K;
            backend().gemm(pa, pb, c32, spec);
            const std::vector<double> c16 = gemm_bf16(pa, pb, M, K, N), c32v = c32.to_vector();
            double largest = 0;
            for (size_t i = 0; i < c16.size(); ++i) largest = std::max(largest, std::abs(c16[i] - c32v[i]) / c32v[i]);
            CHECK(largest > 2 * gamma_f32(K));
        }
    }
}

TEST_CASE("oneDNN's bf16 products equal the reference's bf16 emulation up to float32 summation", "[bf16]") {
    // Both round the inputs the same way (to nearest even); only the order of the float32 sums
    // differs, so they agree within 2 γ_K of |ã|·|b̃|. Rounding by truncation would not.
    BackendScope onednn(make_onednn_backend());
    if (!backend().bf16_unsupported().empty()) {
        WARN("not tried: oneDNN's bf16 kernels (the fast path): " << backend().bf16_unsupported());
        return;
    }
    Rng rng(3);
    const int64_t M = 64, K = 512, N = 96;
    const Tensor a = random_tensor(rng, {M, K}, true), b = random_tensor(rng, {K, N}, true);
    const std::vector<double> ours = gemm_bf16(a, b, M, K, N);
    set_backend(make_reference_backend());
    const std::vector<double> reference = gemm_bf16(a, b, M, K, N);
    const Exact rounded = exact_product(a, b, M, K, N);  // |a|·|b| ≈ |ã|·|b̃| within (1 + u)²
    for (size_t i = 0; i < ours.size(); ++i)
        REQUIRE(std::abs(ours[i] - reference[i]) <= 2 * gamma_f32(K) * (1 + u) * (1 + u) * rounded.magnitude[i]);
}

TEST_CASE("Inside a bf16 scope the model's ops take bf16 products, forward and backward", "[bf16]") {
    // On oneDNN where this CPU has its bf16 kernels, else on the reference backend's emulation
    // of the same rounding, so that every CPU checks the ops' bf16 paths and their bounds.
    BackendScope onednn(make_onednn_backend());
    const bool on_onednn = backend().bf16_unsupported().empty();
    if (!on_onednn) {
        WARN("oneDNN's bf16 kernels not tried (" << backend().bf16_unsupported() << "): on the reference backend");
        set_backend(make_reference_backend());
    }
    Rng rng(5);
    const int64_t B = 4, T = 16, D = 128, V = 300;
    const Tensor x_values = random_tensor(rng, {B, T, D}), w_values = random_tensor(rng, {V, D});
    const Tensor bias_values = random_tensor(rng, {V});
    std::vector<int32_t> ids(B * T);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(V));
    const Tensor targets = Tensor::ids(ids, {B, T});

    // The op's result and gradients in a precision; each compared with float32 below.
    struct Result {
        std::vector<double> out, dx, dw;
    };
    auto run = [&](MatmulPrecision precision, const std::function<Tensor(const Tensor&, const Tensor&)>& op) {
        MatmulPrecisionScope scope(precision);
        Tensor x = x_values.clone().set_requires_grad(), w = w_values.clone().set_requires_grad();
        Tensor out = op(x, w);
        Tensor seed = Tensor::ones(out.shape());
        out.backward(out.numel() == 1 ? Tensor() : seed);
        return Result{out.to_vector(), x.grad().to_vector(), w.grad().to_vector()};
    };
    // The per-element bound on |bf16 - float32|: each is within its bound of the exact product.
    auto within = [](const std::vector<double>& got, const std::vector<double>& want,
                     const std::vector<double>& magnitude, int64_t K) {
        int64_t outside = 0, differ = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            if (std::abs(got[i] - want[i]) > bf16_bound(magnitude[i], K) + gamma_f32(K) * magnitude[i]) ++outside;
            if (got[i] != want[i]) ++differ;
        }
        CHECK(outside == 0);
        CHECK(differ > static_cast<int64_t>(got.size()) / 2);  // bf16 was used: float32 agrees to the bit
    };
    const int64_t N = B * T;
    std::vector<double> x_abs(N * D), w_abs(V * D);
    for (int64_t i = 0; i < N * D; ++i) x_abs[i] = std::abs(x_values.at(i));
    for (int64_t i = 0; i < V * D; ++i) w_abs[i] = std::abs(w_values.at(i));
    std::vector<double> s_out(N * V, 0.0), s_dx(N * D, 0.0), s_dw(V * D, 0.0);  // Σ|a||b| per element
    for (int64_t n = 0; n < N; ++n)
        for (int64_t v = 0; v < V; ++v)
            for (int64_t k = 0; k < D; ++k) s_out[n * V + v] += x_abs[n * D + k] * w_abs[v * D + k];
    for (int64_t n = 0; n < N; ++n)  // dx = dy W with dy = 1
        for (int64_t v = 0; v < V; ++v)
            for (int64_t k = 0; k < D; ++k) s_dx[n * D + k] += w_abs[v * D + k];
    for (int64_t v = 0; v < V; ++v)  // dW = dyᵀ x with dy = 1
        for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < D; ++k) s_dw[v * D + k] += x_abs[n * D + k];

    SECTION("linear: y = x Wᵀ + b, dx = dy W, dW = dyᵀ x") {
        auto op = [&](const Tensor& x, const Tensor& w) { return linear(x, w, bias_values); };
        const Result r16 = run(MatmulPrecision::bf16, op), r32 = run(MatmulPrecision::float32, op);
        std::vector<double> s_y = s_out;  // + the bias, added in float32
        for (int64_t i = 0; i < N * V; ++i) s_y[i] += std::abs(bias_values.at(i % V));
        within(r16.out, r32.out, s_y, D + 1);
        within(r16.dx, r32.dx, s_dx, V);
        within(r16.dw, r32.dw, s_dw, N);
    }
    SECTION("linear_cross_entropy: the LM head's products, and the loss they give") {
        auto fused = [&](const Tensor& x, const Tensor& w) { return linear_cross_entropy(x, w, targets); };
        auto pair = [&](const Tensor& x, const Tensor& w) { return cross_entropy(linear(x, w), targets); };
        const Result r16 = run(MatmulPrecision::bf16, fused), pair16 = run(MatmulPrecision::bf16, pair);
        CHECK(r16.out == pair16.out);  // one block: the same bf16 kernels as the pair, to the bit
        CHECK(r16.dx == pair16.dx);
        if (on_onednn) {
            CHECK(r16.dw == pair16.dw);
        } else {  // fused, the reference reads d_logits transposed (Eigen sums in another order): within the bound
            within(r16.dw, run(MatmulPrecision::float32, fused).dw, s_dw, N);
        }
        // A row's loss, log Σ exp(logits) - logit[target], moves by at most twice its largest
        // logit error, so the mean loss by at most the mean of those.
        const Result r32 = run(MatmulPrecision::float32, fused);
        double loss_bound = 0;
        for (int64_t n = 0; n < N; ++n) {
            double largest = 0;
            for (int64_t v = 0; v < V; ++v)
                largest = std::max(largest, bf16_bound(s_out[n * V + v], D) + gamma_f32(D) * s_out[n * V + v]);
            loss_bound += 2 * largest / static_cast<double>(N);
        }
        INFO("loss " << r16.out[0] << " in bf16, " << r32.out[0] << " in float32, bound " << loss_bound);
        CHECK(std::abs(r16.out[0] - r32.out[0]) <= loss_bound);
        CHECK(r16.out[0] != r32.out[0]);
    }
}

TEST_CASE("A bf16 scope converts a parameter once and forgets the copy when it ends", "[bf16]") {
    Rng rng(7);
    Tensor weight = random_tensor(rng, {8, 16}).set_requires_grad();  // a parameter: a leaf that requires grad
    const Tensor activation = random_tensor(rng, {4, 16});
    CHECK(product_operand(weight).same_as(weight));  // float32 outside any scope: the tensor itself
    Tensor first_copy;
    {
        MatmulPrecisionScope scope(MatmulPrecision::bf16);
        first_copy = product_operand(weight);
        REQUIRE(first_copy.dtype() == DType::bf16);
        CHECK(product_operand(weight).same_as(first_copy));  // reused inside the scope
        CHECK(!product_operand(activation).same_as(product_operand(activation)));  // not a parameter: converted each time
        for (int64_t i = 0; i < weight.numel(); ++i)
            REQUIRE(first_copy.at(i) == round_to_bf16(static_cast<float>(weight.at(i))));
    }
    weight.data<float>()[0] += 1.0f;  // an optimizer step, outside the scope
    MatmulPrecisionScope scope(MatmulPrecision::bf16);
    const Tensor second_copy = product_operand(weight);
    CHECK(!second_copy.same_as(first_copy));
    CHECK(second_copy.at(0) == round_to_bf16(weight.data<float>()[0]));
}
