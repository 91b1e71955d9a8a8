// The oneDNN backend against the reference backend: every op forward and backward, and the
// whole model's loss and gradients, agree to float32 rounding; float64 calls are passed to
// the reference unchanged; and results repeat to the bit.
//
// Agreement is measured per tensor: max|onednn - reference| / max(max|reference|, 1e-6),
// the worst difference relative to the tensor's own scale (an element that is nearly 0 in a
// tensor of size-1 values carries float32 rounding of size 1e-7, not of its own size). The
// bound is 1e-4.
//
// The own kernels (attention, softmax, GELU, exp) are compiled for several instruction sets
// and dispatched at run time (kernel_targets.hpp): the checks marked so run once on every
// target this CPU can run, so an AVX-512 machine proves the AVX2, SSE4 and scalar code too.
#include "catch.hpp"
#include "test_helpers.hpp"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/op_list.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/model.hpp"

using namespace tinyformer;
using tinyformer::testing::BackendScope;
using tinyformer::testing::KernelTargetScope;

namespace {

// check() once on each kernel target this CPU runs, best first, with the target named in
// any failure; the best target is current again afterwards.
template <class Check>
void on_every_kernel_target(Check&& check) {
    for (const KernelTarget& target : kernel_targets_on_this_cpu()) {
        KernelTargetScope scope(target.name);
        INFO("kernel target " << target.name << " (Highway's " << target.highway_name << ")");
        REQUIRE(kernel_target() == target.name);
        check();
    }
}

constexpr double kTolerance = 1e-4;

// Makes `backend` current for a scope, and the reference backend again after it.
// fn() computed with `backend` current; the reference backend is current again afterwards,
// even if fn throws.
template <class Fn>
auto computed_by(std::unique_ptr<Backend> backend, Fn&& fn) {
    BackendScope scope(std::move(backend));
    return fn();
}

// Sets the thread count for a scope and restores the previous one after it.
struct ThreadsScope {
    explicit ThreadsScope(int n) : previous(num_threads()) { set_num_threads(n); }
    ~ThreadsScope() { set_num_threads(previous); }
    ThreadsScope(const ThreadsScope&) = delete;
    ThreadsScope& operator=(const ThreadsScope&) = delete;
    int previous;
};

Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype, double std = 1.0) {
    Rng rng(seed);
    std::vector<double> values(numel_of(shape));
    for (double& v : values) v = rng.normal(0.0, std);
    return Tensor::from(values, shape, dtype);
}

std::vector<int32_t> random_ids(int64_t count, int32_t below, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> ids(count);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(below));
    return ids;
}

double relative_error(const Tensor& got, const Tensor& want) {
    std::vector<double> g = got.to_vector(), w = want.to_vector();
    double worst = 0, scale = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        worst = std::max(worst, std::abs(g[i] - w[i]));
        scale = std::max(scale, std::abs(w[i]));
    }
    return worst / std::max(scale, 1e-6);
}

// One row of the table: the shapes of the differentiable inputs and the op applied to them.
struct OpCase {
    std::string name;
    std::vector<Shape> inputs;
    std::function<Tensor(const std::vector<Tensor>&)> forward;
};

// The case's output and then each input's gradient, computed by the current backend from
// inputs and a backward seed that depend only on the case (fixed seeds).
std::vector<Tensor> case_inputs(const OpCase& c, DType dtype) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i)
        inputs.push_back(random_tensor(c.inputs[i], 100 + i, dtype).set_requires_grad(true));
    return inputs;
}

std::vector<Tensor> run_case(const OpCase& c, DType dtype) {
    std::vector<Tensor> inputs = case_inputs(c, dtype);
    Tensor out = c.forward(inputs);
    out.backward(random_tensor(out.shape(), 7, dtype));
    std::vector<Tensor> results = {out};
    for (const Tensor& input : inputs) results.push_back(input.grad());
    return results;
}

std::vector<OpCase> op_cases() {
    auto ids = [](const Shape& shape, int32_t below) {
        return Tensor::ids(random_ids(numel_of(shape), below, 3), shape);
    };
    return {
        {"matmul", {{5, 7}, {7, 3}}, [](auto& x) { return matmul(x[0], x[1]); }},
        {"matmul a^T", {{7, 5}, {7, 3}}, [](auto& x) { return matmul(x[0], x[1], true, false); }},
        {"matmul b^T", {{5, 7}, {3, 7}}, [](auto& x) { return matmul(x[0], x[1], false, true); }},
        {"matmul a^T b^T", {{7, 5}, {3, 7}}, [](auto& x) { return matmul(x[0], x[1], true, true); }},
        {"matmul batched 4-D", {{2, 3, 5, 7}, {2, 3, 7, 4}}, [](auto& x) { return matmul(x[0], x[1]); }},
        {"matmul batched a^T b^T", {{2, 3, 7, 5}, {2, 3, 4, 7}}, [](auto& x) { return matmul(x[0], x[1], true, true); }},
        {"matmul batched b^T", {{2, 3, 5, 7}, {2, 3, 4, 7}}, [](auto& x) { return matmul(x[0], x[1], false, true); }},
        {"matmul batched b^T scaled", {{2, 3, 5, 7}, {2, 3, 4, 7}},
         [](auto& x) { return matmul(x[0], x[1], false, true, 0.125); }},
        {"matmul 3-D @ weight", {{4, 5, 7}, {7, 3}}, [](auto& x) { return matmul(x[0], x[1]); }},
        {"matmul 3-D @ weight^T", {{4, 5, 7}, {3, 7}}, [](auto& x) { return matmul(x[0], x[1], false, true); }},
        {"matmul 3-D^T @ weight", {{4, 7, 5}, {7, 3}}, [](auto& x) { return matmul(x[0], x[1], true, false); }},
        {"matmul 3-D^T @ weight^T", {{4, 7, 5}, {3, 7}}, [](auto& x) { return matmul(x[0], x[1], true, true); }},
        {"linear with bias", {{2, 5, 7}, {3, 7}, {3}}, [](auto& x) { return linear(x[0], x[1], x[2]); }},
        {"residual_linear with bias", {{2, 5, 3}, {2, 5, 7}, {3, 7}, {3}},
         [](auto& x) { return residual_linear(x[0], x[1], x[2], x[3]); }},
        {"residual_linear", {{2, 5, 3}, {2, 5, 7}, {3, 7}}, [](auto& x) { return residual_linear(x[0], x[1], x[2]); }},
        {"residual_linear d_model 128", {{2, 64, 128}, {2, 64, 512}, {128, 512}, {128}},
         [](auto& x) { return residual_linear(x[0], x[1], x[2], x[3]); }},
        {"add same shape", {{5, 7, 3}, {5, 7, 3}}, [](auto& x) { return add(x[0], x[1]); }},
        {"add bias", {{5, 7, 3}, {3}}, [](auto& x) { return add(x[0], x[1]); }},
        {"add bias on the left", {{7, 3}, {5, 7, 3}}, [](auto& x) { return add(x[0], x[1]); }},
        {"add both sides broadcast", {{5, 1, 3}, {7, 1}}, [](auto& x) { return add(x[0], x[1]); }},
        {"mul same shape", {{5, 7, 3}, {5, 7, 3}}, [](auto& x) { return mul(x[0], x[1]); }},
        {"mul broadcast", {{5, 7, 3}, {7, 1}}, [](auto& x) { return mul(x[0], x[1]); }},
        {"scale", {{5, 7, 3}}, [](auto& x) { return scale(x[0], 0.37); }},
        {"transpose middle axes", {{2, 3, 4, 5}}, [](auto& x) { return transpose(x[0], 1, 2); }},
        {"transpose outer and last", {{2, 3, 4, 5}}, [](auto& x) { return transpose(x[0], 0, 3); }},
        {"transpose last two", {{5, 7, 3}}, [](auto& x) { return transpose(x[0], -1, -2); }},
        {"split_heads", {{2, 5, 12}}, [](auto& x) { return split_heads(x[0], 3); }},
        {"merge_heads", {{2, 3, 5, 4}}, [](auto& x) { return merge_heads(x[0]); }},
        {"matmul batched a^T", {{2, 3, 7, 5}, {2, 3, 7, 4}}, [](auto& x) { return matmul(x[0], x[1], true, false); }},
        {"matmul batched a^T scaled", {{2, 3, 7, 5}, {2, 3, 7, 4}},
         [](auto& x) { return matmul(x[0], x[1], true, false, 0.25); }},
        {"select", {{3, 5, 7}}, [](auto& x) { return select(x[0], 1); }},
        {"embedding (repeated ids)", {{11, 6}},
         [](auto& x) { return embedding(x[0], Tensor::ids({3, 1, 3, 0, 10, 3, 1, 7, 7, 2}, {2, 5})); }},
        {"layer_norm", {{5, 7, 12}, {12}, {12}}, [](auto& x) { return layer_norm(x[0], x[1], x[2]); }},
        {"layer_norm d_model 64", {{3, 33, 64}, {64}, {64}}, [](auto& x) { return layer_norm(x[0], x[1], x[2]); }},
        // past the one-thread size: blocks of rows, and of columns for the parameters; 100
        // columns: whole registers, then a tail
        {"layer_norm d_model 128 in blocks", {{12, 64, 128}, {128}, {128}},
         [](auto& x) { return layer_norm(x[0], x[1], x[2]); }},
        {"layer_norm d_model 100 in blocks", {{3, 128, 100}, {100}, {100}},
         [](auto& x) { return layer_norm(x[0], x[1], x[2]); }},
        {"gelu", {{5, 7, 3}}, [](auto& x) { return gelu(scale(x[0], 3.0)); }},
        {"gelu large", {{4, 64, 256}}, [](auto& x) { return gelu(x[0]); }},
        {"softmax", {{5, 7, 3}}, [](auto& x) { return softmax(x[0]); }},
        {"softmax causal", {{2, 3, 7, 7}}, [](auto& x) { return softmax(x[0], true); }},
        {"softmax causal Tq < Tk", {{2, 3, 5, 9}}, [](auto& x) { return softmax(x[0], true); }},
        // attention: the oneDNN backend's per-(batch, head) blocks (causal, T and d multiples of
        // 16: one to four 16-lane columns, and T = 128 in two 64-column strips), and the
        // composition it keeps for every other shape
        {"attention causal T 64 d 32", {{2, 3, 64, 32}, {2, 3, 64, 32}, {2, 3, 64, 32}},
         [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.17, true).heads; }},
        {"attention causal T 128 d 64", {{1, 2, 128, 64}, {1, 2, 128, 64}, {1, 2, 128, 64}},
         [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.125, true).heads; }},
        {"attention causal T 16 d 48", {{3, 16, 48}, {3, 16, 48}, {3, 16, 48}},
         [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.3, true).heads; }},
        {"attention causal T 32 d 16", {{2, 1, 32, 16}, {2, 1, 32, 16}, {2, 1, 32, 16}},
         [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.25, true).heads; }},
        {"attention causal T 7 (composed)", {{2, 2, 7, 8}, {2, 2, 7, 8}, {2, 2, 7, 8}},
         [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.35, true).heads; }},
        {"attention causal Tq < Tk (composed)", {{2, 2, 16, 16}, {2, 2, 32, 16}, {2, 2, 32, 16}},
         [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.25, true).heads; }},
        {"attention unmasked (composed)", {{2, 2, 5, 8}, {2, 2, 9, 8}, {2, 2, 9, 8}},
         [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.35, false).heads; }},
        // self-attention from qkv [B,T,3D]: in blocks read straight out of qkv (causal, T and d
        // multiples of 16), with and without rope, and composed otherwise
        {"self_attention causal rope T 64 H 4 d 32", {{2, 64, 384}},
         [](auto& x) { return self_attention(x[0], 4, true, 0, 0.17, true).heads; }},
        {"self_attention causal rope from 5 T 32 H 2 d 16", {{3, 32, 96}},
         [](auto& x) { return self_attention(x[0], 2, true, 5, 0.25, true).heads; }},
        {"self_attention causal T 16 H 3 d 48", {{2, 16, 432}},
         [](auto& x) { return self_attention(x[0], 3, false, 0, 0.3, true).heads; }},
        {"self_attention causal rope T 7 (composed)", {{2, 7, 36}},
         [](auto& x) { return self_attention(x[0], 2, true, 0, 0.4, true).heads; }},
        {"self_attention unmasked rope (composed)", {{2, 16, 96}},
         [](auto& x) { return self_attention(x[0], 2, true, 3, 0.25, false).heads; }},
        {"rope", {{2, 3, 7, 8}}, [](auto& x) { return rope(x[0]); }},
        {"rope from position 5", {{2, 3, 7, 8}}, [](auto& x) { return rope(x[0], 5); }},
        {"cross_entropy", {{2, 5, 79}}, [ids](auto& x) { return cross_entropy(x[0], ids({2, 5}, 79)); }},
        {"linear_cross_entropy", {{2, 5, 16}, {79, 16}},
         [ids](auto& x) { return linear_cross_entropy(x[0], x[1], ids({2, 5}, 79)); }},
        {"linear_cross_entropy in blocks of 3 rows", {{2, 5, 16}, {79, 16}},
         [ids](auto& x) { return linear_cross_entropy(x[0], x[1], ids({2, 5}, 79), 3 * 79); }},
        {"cross_entropy, target probabilities underflow", {{3, 7}},  // class 0 leads by 150: p[target] ~ e^-150
         [](auto& x) {
             std::vector<double> lead(3 * 7, 0.0);
             for (int row = 0; row < 3; ++row) lead[row * 7] = 150.0;
             return cross_entropy(add(x[0], Tensor::from(lead, {3, 7}, x[0].dtype())), Tensor::ids({1, 2, 3}, {3}));
         }},
    };
}

// The model's loss and then every parameter's gradient, for one batch.
std::vector<Tensor> model_loss_and_gradients(const std::string& positions, DType dtype = DType::f32) {
    ModelConfig config{.vocab_size = 79, .d_model = 64, .n_heads = 2, .n_layers = 2, .context = 64,
                       .positions = positions};
    Transformer model(config, 11, dtype);
    const int64_t B = 3, T = 64;
    Tensor ids = Tensor::ids(random_ids(B * T, 79, 21), {B, T});
    Tensor targets = Tensor::ids(random_ids(B * T, 79, 22), {B, T});
    model.parameters().zero_grad();
    Tensor loss = model.loss(ids, targets);
    loss.backward();
    std::vector<Tensor> results = {loss.clone()};
    for (const auto& [name, parameter] : model.parameters().named()) results.push_back(parameter.grad().clone());
    return results;
}

std::vector<std::string> model_tensor_names(const std::string& positions) {
    ModelConfig config{.positions = positions};
    std::vector<std::string> names = {"loss"};
    for (const ParameterSpec& spec : parameter_specs(config)) names.push_back(spec.name + " gradient");
    return names;
}

}  // namespace

TEST_CASE("the oneDNN backend agrees with the reference on every op, forward and backward", "[parity]") {
    on_every_kernel_target([&] {
        for (const OpCase& c : op_cases()) {
            std::vector<Tensor> want = computed_by(make_reference_backend(), [&] { return run_case(c, DType::f32); });
            std::vector<Tensor> got = computed_by(make_onednn_backend(), [&] {
                REQUIRE(backend().name() == "onednn");
                return run_case(c, DType::f32);
            });
            REQUIRE(got.size() == want.size());
            for (size_t i = 0; i < want.size(); ++i) {
                INFO(c.name << (i == 0 ? ": output" : ": gradient of input " + std::to_string(i - 1)));
                REQUIRE(got[i].shape() == want[i].shape());
                CHECK(relative_error(got[i], want[i]) <= kTolerance);
            }
        }
    });
}

TEST_CASE("the parity table has a row for every op in the op list", "[parity]") {
    std::set<std::string> ops_covered;
    for (const OpCase& c : op_cases())
        for (const std::string& op : recorded_ops(c.forward(case_inputs(c, DType::f32)))) {
            INFO(c.name << " records a node named " << op);
            CHECK(find_op(op) != nullptr);
            ops_covered.insert(op);
        }
    for (const OpEntry& op : kOps) {
        INFO(op.name << " has no row in op_cases()");
        if (op.built_from.empty()) CHECK(ops_covered.count(std::string(op.name)) == 1);
    }
}

TEST_CASE("the oneDNN causal softmax gives the future exactly 0", "[parity]") {
    on_every_kernel_target([&] {
        const int64_t Tq = 5, Tk = 9;
        Tensor w = computed_by(make_onednn_backend(),
                               [&] { return softmax(random_tensor({2, Tq, Tk}, 1, DType::f32, 10.0), true); });
        for (int64_t r = 0; r < 2 * Tq; ++r)
            for (int64_t j = 0; j < Tk; ++j)
                if (j > r % Tq + (Tk - Tq)) REQUIRE(w.at(r * Tk + j) == 0.0);
    });
}

TEST_CASE("the oneDNN attention's weights agree, and give the future exactly 0", "[parity]") {
    on_every_kernel_target([&] {
        for (const Shape& shape : {Shape{2, 3, 64, 32}, Shape{1, 2, 128, 64}, Shape{2, 16, 48}, Shape{1, 2, 7, 8}}) {
            INFO(shape_str(shape));
            auto weights = [&] {
                const Tensor q = random_tensor(shape, 1, DType::f32, 3.0), k = random_tensor(shape, 2, DType::f32, 3.0),
                             v = random_tensor(shape, 3, DType::f32);
                return scaled_dot_product_attention(q, k, v, 0.2, true).weights;
            };
            const Tensor want = computed_by(make_reference_backend(), weights);
            const Tensor got = computed_by(make_onednn_backend(), weights);
            REQUIRE(got.shape() == want.shape());
            CHECK(relative_error(got, want) <= kTolerance);
            const int64_t T = shape[shape.size() - 2];
            for (int64_t r = 0; r < got.numel() / T; ++r)
                for (int64_t j = r % T + 1; j < T; ++j) REQUIRE(got.at(r * T + j) == 0.0);
        }
    });
}

TEST_CASE("the oneDNN backend trains the model as the reference does", "[parity]") {
    on_every_kernel_target([&] {
        for (const std::string positions : {"rope", "learned"}) {
            auto loss_and_gradients = [&] { return model_loss_and_gradients(positions); };
            std::vector<Tensor> want = computed_by(make_reference_backend(), loss_and_gradients);
            std::vector<Tensor> got = computed_by(make_onednn_backend(), loss_and_gradients);
            const std::vector<std::string> names = model_tensor_names(positions);
            REQUIRE(got.size() == names.size());
            for (size_t i = 0; i < want.size(); ++i) {
                INFO(positions << " positions, " << names[i]);
                CHECK(relative_error(got[i], want[i]) <= kTolerance);
            }
        }
    });
}

TEST_CASE("the oneDNN backend hands float64 to the reference unchanged", "[parity]") {
    auto require_identical = [](const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < want.size(); ++i) {
            INFO("tensor " << i);
            REQUIRE(got[i].dtype() == DType::f64);
            REQUIRE(got[i].to_vector() == want[i].to_vector());  // bit for bit
        }
    };
    for (const OpCase& c : op_cases()) {
        INFO(c.name);
        auto run = [&] { return run_case(c, DType::f64); };
        require_identical(computed_by(make_onednn_backend(), run), computed_by(make_reference_backend(), run));
    }
    auto model = [] { return model_loss_and_gradients("rope", DType::f64); };
    require_identical(computed_by(make_onednn_backend(), model), computed_by(make_reference_backend(), model));
}

TEST_CASE("the oneDNN backend repeats its results to the bit", "[parity]") {
    on_every_kernel_target([&] {
        ThreadsScope two_threads(2);
        BackendScope onednn(make_onednn_backend());  // the second step reuses the first's cached primitives
        for (const std::string positions : {"rope", "learned"}) {
            INFO(positions << " positions");
            std::vector<Tensor> first = model_loss_and_gradients(positions), second = model_loss_and_gradients(positions);
            REQUIRE(first.size() == second.size());
            for (size_t i = 0; i < first.size(); ++i) REQUIRE(first[i].to_vector() == second[i].to_vector());
        }
    });
}

#include "../src/engine/backends/activation_kernels.hpp"

namespace {
// exp of each of xs through the kernels' exp_span, in one call (whole registers, then the tail)
std::vector<float> kernel_exp(const std::vector<float>& xs) {
    std::vector<float> ys(xs.size());
    tinyformer::detail::exp_span(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
    return ys;
}
}  // namespace

TEST_CASE("the kernels' exp is within 2 ulp of libm's over float's range, on every target", "[parity][exp]") {
    std::vector<float> xs;
    for (float x = -87.0f; x <= 88.0f; x += 0.0137f) xs.push_back(x);
    xs.push_back(88.0f);  // 12,774 values: not a whole number of registers on any target
    on_every_kernel_target([&] {
        const std::vector<float> ys = kernel_exp(xs);
        double worst = 0;
        for (size_t i = 0; i < xs.size(); ++i) {
            const double exact = std::exp(static_cast<double>(xs[i]));
            worst = std::max(worst, std::fabs(ys[i] - exact) / exact);
            // a float alone (the one-lane tail) gets the same bits as inside a register
            const float alone = kernel_exp({xs[i]})[0];
            REQUIRE(alone == ys[i]);
        }
        CHECK(worst < 2.5e-7);
        const std::vector<float> extremes =
            kernel_exp({0.0f, -1000.0f, 1000.0f, -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()});
        CHECK(extremes[0] == 1.0f);
        CHECK(extremes[1] < 1e-37f);  // clamped, not 0, never NaN
        CHECK(extremes[1] > 0.0f);
        CHECK(std::isfinite(extremes[2]));
        CHECK(extremes[3] < 1e-37f);
        CHECK(std::isnan(extremes[4]));  // a NaN is not hidden
    });
}

#if defined(__x86_64__) || defined(__i386__)
TEST_CASE("the kernel targets on this CPU are the ones /proc/cpuinfo lists", "[parity]") {
    // Asked of the CPU independently of Highway: what the dispatch should find.
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, flags;
    while (std::getline(cpuinfo, line))
        if (line.rfind("flags", 0) == 0) {
            flags = line + " ";
            break;
        }
    REQUIRE_FALSE(flags.empty());
    auto has = [&](const std::string& flag) { return flags.find(" " + flag + " ") != std::string::npos; };
    std::set<std::string> expected = {"ssse3"};  // every x86-64 oneDNN runs on has SSSE3
    if (has("sse4_2") && has("pclmulqdq") && has("aes")) expected.insert("sse4");
    if (expected.count("sse4") && has("avx2") && has("fma") && has("bmi2") && has("f16c")) expected.insert("avx2");
    if (expected.count("avx2") && has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl"))
        expected.insert("avx512");
    std::set<std::string> found;
    for (const KernelTarget& target : kernel_targets_on_this_cpu()) found.insert(target.name);
    // Highway 1.1 and later add targets above avx512 (avx512_bf16 on Zen 4): not asked here.
    // The lowest is a fallback every x86-64 runs: scalar (Highway 1.0 with GCC 12), else sse2.
    REQUIRE(!kernel_targets_on_this_cpu().empty());
    const std::string lowest = kernel_targets_on_this_cpu().back().name;
    CHECK((lowest == "scalar" || lowest == "emu128" || lowest == "sse2"));
    for (const std::string extra : {"avx512_vnni", "avx512_bf16", "avx512_fp16", "sse2", "emu128", "scalar"})
        found.erase(extra);
    CHECK(found == expected);
    CHECK(kernel_target() == kernel_targets_on_this_cpu().front().name);  // the best is in use
}
#elif defined(__aarch64__)
TEST_CASE("the kernel targets on this CPU are the ones its hardware capabilities list", "[parity]") {
    // Asked of the kernel independently of Highway, through the auxiliary vector (under
    // qemu-user, /proc/cpuinfo is the host's; the auxiliary vector is the emulated CPU's). Of
    // the targets compiled in: neon (Highway's needs AES on aarch64), sve, sve2, and the
    // fixed-length sve_256 and sve2_128 where the vectors have that length.
    const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    const int vector_bytes = (hwcap & HWCAP_SVE) ? prctl(PR_SVE_GET_VL) & PR_SVE_VL_LEN_MASK : 0;
    std::set<std::string> could;
    if ((hwcap & HWCAP_ASIMD) && (hwcap & HWCAP_AES)) could.insert("neon");
    if (hwcap & HWCAP_SVE) could.insert("sve");
    if ((hwcap & HWCAP_SVE) && (hwcap2 & HWCAP2_SVE2)) could.insert("sve2");
    if ((hwcap & HWCAP_SVE) && vector_bytes == 32) could.insert("sve_256");
    if ((hwcap & HWCAP_SVE) && (hwcap2 & HWCAP2_SVE2) && vector_bytes == 16) could.insert("sve2_128");
    std::set<std::string> expected, found;
    for (const KernelTarget& target : kernel_targets_compiled())
        if (could.count(target.name)) expected.insert(target.name);
    for (const KernelTarget& target : kernel_targets_on_this_cpu()) found.insert(target.name);
    REQUIRE(!kernel_targets_on_this_cpu().empty());
    // The lowest: neon, the baseline every aarch64 has (Highway 1.0 with GCC 12), else a fallback.
    const std::string lowest = kernel_targets_on_this_cpu().back().name;
    CHECK((lowest == "neon" || lowest == "scalar" || lowest == "emu128"));
    for (const std::string extra : {"neon_bf16", "neon_without_aes", "emu128", "scalar"}) found.erase(extra);
    CHECK(found == expected);
    CHECK(kernel_target() == kernel_targets_on_this_cpu().front().name);  // the best is in use
}
#endif

#include "tinyformer/engine/optimizer_kernels.hpp"

TEST_CASE("the AdamW kernel follows its formula on every target, whatever the split", "[parity][optim]") {
    const int64_t n = 1000;  // not a whole number of registers on any target
    const AdamWStep step{.decay = 0.99f, .beta1 = 0.9f, .beta2 = 0.95f, .step_size = 0.01f,
                         .inv_sqrt_bias2 = 3.0f, .eps = 1e-8f};
    const std::vector<double> p0 = random_tensor({n}, 1, DType::f64).to_vector(),
                              g = random_tensor({n}, 2, DType::f64).to_vector(),
                              m0 = random_tensor({n}, 3, DType::f64, 0.1).to_vector(),
                              v0 = random_tensor({n}, 4, DType::f64, 0.1).to_vector();
    std::vector<uint8_t> decays(n);
    for (int64_t i = 0; i < n; ++i) decays[i] = i % 3 == 0;
    auto floats = [](const std::vector<double>& xs) { return std::vector<float>(xs.begin(), xs.end()); };
    on_every_kernel_target([&] {
        std::vector<float> p = floats(p0), m = floats(m0), v = floats(v0), gf = floats(g);
        for (float& v_i : v) v_i = std::fabs(v_i);
        std::vector<float> p_alone = p, m_alone = m, v_alone = v;
        const std::vector<float> v_before = v;
        adamw_update(step, p.data(), gf.data(), m.data(), v.data(), decays.data(), n);
        for (int64_t i = 0; i < n; ++i)  // one element per call: the one-lane path
            adamw_update(step, &p_alone[i], &gf[i], &m_alone[i], &v_alone[i], &decays[i], 1);
        for (int64_t i = 0; i < n; ++i) {
            INFO("element " << i);
            REQUIRE(p[i] == p_alone[i]);
            REQUIRE(m[i] == m_alone[i]);
            REQUIRE(v[i] == v_alone[i]);
            // the formula in double, from the same float inputs
            const double gi = gf[i], decayed = float(p0[i]) * (decays[i] ? double(step.decay) : 1.0);
            const double mi = 0.9 * float(m0[i]) + 0.1 * gi, vi = 0.95 * v_before[i] + 0.05 * gi * gi;
            const double update = 0.01 * mi / (std::sqrt(vi) * 3.0 + 1e-8), pi = decayed - update;
            // float rounding, relative to the terms' sizes (their sum may cancel)
            CHECK(std::fabs(m[i] - mi) <= 1e-6 * (0.9 * std::fabs(m0[i]) + 0.1 * std::fabs(gi)));
            CHECK(std::fabs(v[i] - vi) <= 1e-6 * vi);
            CHECK(std::fabs(p[i] - pi) <= 1e-6 * (std::fabs(decayed) + std::fabs(update)));
        }
    });
}

#include "tinyformer/engine/vector_kernels.hpp"

TEST_CASE("the matrix-vector kernel computes W x + b on every target", "[parity]") {
    const int64_t n_in = 37, n_out = 79, stride = 128;  // 79 outputs: a last block cut short
    const std::vector<double> w = random_tensor({n_out, n_in}, 5, DType::f64).to_vector(),
                              x = random_tensor({n_in}, 6, DType::f64).to_vector(),
                              bias = random_tensor({n_out}, 7, DType::f64).to_vector();
    std::vector<float> w_t(n_in * stride, 1e30f);  // the padding must not be read into an output
    for (int64_t o = 0; o < n_out; ++o)
        for (int64_t i = 0; i < n_in; ++i) w_t[i * stride + o] = static_cast<float>(w[o * n_in + i]);
    const std::vector<float> xf(x.begin(), x.end()), bf(bias.begin(), bias.end());
    on_every_kernel_target([&] {
        for (const bool with_bias : {false, true}) {
            INFO((with_bias ? "with" : "without") << " bias");
            std::vector<float> out(n_out + 1, -7.0f);  // one past the end, to see it untouched
            matvec_transposed(w_t.data(), stride, with_bias ? bf.data() : nullptr, xf.data(), n_in, n_out, out.data());
            for (int64_t o = 0; o < n_out; ++o) {
                double want = with_bias ? bf[o] : 0.0, scale = std::fabs(want);
                for (int64_t i = 0; i < n_in; ++i) {
                    want += static_cast<double>(w_t[i * stride + o]) * xf[i];
                    scale += std::fabs(static_cast<double>(w_t[i * stride + o]) * xf[i]);
                }
                INFO("output " << o);
                CHECK(std::fabs(out[o] - want) <= 1e-6 * scale);
            }
            CHECK(out[n_out] == -7.0f);
        }
    });
}

TEST_CASE("the rows kernel gives every row the matrix-vector kernel's bits, on every target", "[parity]") {
    const int64_t n_in = 37, n_out = 79, stride = 128, x_stride = 40, out_stride = 83;
    std::vector<float> w_t(n_in * stride, 1e30f);  // the padding must not be read into an output
    const std::vector<double> w = random_tensor({n_out, n_in}, 5, DType::f64).to_vector(),
                              bias = random_tensor({n_out}, 7, DType::f64).to_vector();
    for (int64_t o = 0; o < n_out; ++o)
        for (int64_t i = 0; i < n_in; ++i) w_t[i * stride + o] = static_cast<float>(w[o * n_in + i]);
    const std::vector<float> bf(bias.begin(), bias.end());
    on_every_kernel_target([&] {
        for (const int64_t rows : {1, 2, 3, 4, 5, 7, 64}) {  // whole blocks of rows and the rest
            INFO(rows << " rows");
            const std::vector<double> x = random_tensor({rows, x_stride}, 6 + rows, DType::f64).to_vector();
            const std::vector<float> xf(x.begin(), x.end());
            std::vector<float> out(rows * out_stride, -7.0f), one_row(n_out);
            matmul_transposed(w_t.data(), stride, bf.data(), xf.data(), x_stride, rows, n_in, n_out, out.data(),
                              out_stride);
            for (int64_t r = 0; r < rows; ++r) {
                matvec_transposed(w_t.data(), stride, bf.data(), xf.data() + r * x_stride, n_in, n_out, one_row.data());
                INFO("row " << r);
                CHECK(std::equal(one_row.begin(), one_row.end(), out.begin() + r * out_stride));
                CHECK(out[r * out_stride + n_out] == -7.0f);  // past n_out: untouched
            }
        }
    });
}

#include "tinyformer/engine/bf16.hpp"

#include "../src/engine/backends/elementwise_kernels.hpp"

namespace {
// The bits of a float: equal bits, not ==, so that NaNs and signed zeros are compared too.
uint32_t float_bits(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
}

float float_with_bits(uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// 37 floats (no whole number of registers on any target): the edges of float and of the
// rounding to bfloat16 (ties to either side, NaNs of both signs, infinities, subnormals,
// the largest float, whose rounding overflows to infinity), then random values.
std::vector<float> edge_and_random_floats() {
    std::vector<float> xs = {0.0f, -0.0f, 1.0f, -1.0f,
                             float_with_bits(0x3f808000u), float_with_bits(0x3f818000u),  // ties: down to even, up to even
                             float_with_bits(0x3f808001u), float_with_bits(0xbf818000u), float_with_bits(0x7f7fffffu),
                             std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                             float_with_bits(0x7fc00001u), float_with_bits(0xffc12345u), float_with_bits(0x7f800001u),  // NaNs
                             float_with_bits(0x00000001u), float_with_bits(0x80018000u), 1e-30f};
    const std::vector<double> random = random_tensor({37 - static_cast<int64_t>(xs.size())}, 11, DType::f64).to_vector();
    xs.insert(xs.end(), random.begin(), random.end());
    return xs;
}
}  // namespace

TEST_CASE("the elementwise kernels give every element its formula's bits, on every target", "[parity]") {
    const std::vector<float> a = edge_and_random_floats();
    std::vector<float> b(a.rbegin(), a.rend());
    const int64_t n = static_cast<int64_t>(a.size());
    on_every_kernel_target([&] {
        std::vector<float> sum(n), product(n), scaled(n), added = a;
        std::vector<uint16_t> halves(n);
        detail::add_span(a.data(), b.data(), sum.data(), n);
        detail::mul_span(a.data(), b.data(), product.data(), n);
        detail::scale_span(a.data(), 0.3f, scaled.data(), n);
        detail::add_into_span(added.data(), b.data(), n);
        detail::to_bf16_span(a.data(), halves.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            INFO("element " << i << ": " << a[i] << " and " << b[i]);
            CHECK(float_bits(sum[i]) == float_bits(a[i] + b[i]));
            CHECK(float_bits(product[i]) == float_bits(a[i] * b[i]));
            CHECK(float_bits(scaled[i]) == float_bits(0.3f * a[i]));
            CHECK(float_bits(added[i]) == float_bits(a[i] + b[i]));
            CHECK(halves[i] == to_bf16_bits(a[i]));
        }
    });
}

TEST_CASE("the rotation kernel turns each pair by its angle, on every target, in place too", "[parity]") {
    for (const int64_t d : {6, 32, 38}) {  // 38: whole registers and then single pairs on every target
        INFO("d = " << d);
        const std::vector<double> row = random_tensor({d}, 12, DType::f64).to_vector();
        const std::vector<float> from(row.begin(), row.end());
        std::vector<float> cos_pairs(d), sin_pairs(d);
        for (int64_t j = 0; j < d / 2; ++j) {
            const double theta = 0.7 * (j + 1);
            cos_pairs[2 * j] = cos_pairs[2 * j + 1] = static_cast<float>(std::cos(theta));
            sin_pairs[2 * j] = -static_cast<float>(std::sin(theta)), sin_pairs[2 * j + 1] = static_cast<float>(std::sin(theta));
        }
        on_every_kernel_target([&] {
            for (const float sign : {1.0f, -1.0f}) {
                std::vector<float> to(d), in_place = from;
                detail::rotate_row(from.data(), to.data(), cos_pairs.data(), sin_pairs.data(), d, sign);
                detail::rotate_row(in_place.data(), in_place.data(), cos_pairs.data(), sin_pairs.data(), d, sign);
                for (int64_t j = 0; j < d / 2; ++j) {
                    INFO("pair " << j << ", sign " << sign);
                    const float c = cos_pairs[2 * j], s = sign * sin_pairs[2 * j + 1];
                    const float u0 = from[2 * j], u1 = from[2 * j + 1];
                    // (u0 c - u1 s, u1 c + u0 s), each product rounded on its own (volatile: not
                    // fused into a multiply-add by this file's compiler)
                    const volatile float u0c = u0 * c, u1s = u1 * s, u1c = u1 * c, u0s = u0 * s;
                    CHECK(float_bits(to[2 * j]) == float_bits(u0c - u1s));
                    CHECK(float_bits(to[2 * j + 1]) == float_bits(u1c + u0s));
                }
                CHECK(in_place == to);
            }
        });
    }
}

TEST_CASE("the sum of squares adds in its documented order, to the bit on every target", "[parity][optim]") {
    const std::vector<double> values = random_tensor({1003}, 13, DType::f64).to_vector();
    const std::vector<float> g(values.begin(), values.end());
    for (const int64_t n : {0, 1, 7, 8, 9, 64, 1003}) {
        // element i into running sum i % 8, the tail (past the last whole 8) into sum 0, then 0..7
        double lanes[8] = {};
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; ++l) lanes[l] += static_cast<double>(g[i + l]) * g[i + l];
        for (; i < n; ++i) lanes[0] += static_cast<double>(g[i]) * g[i];
        double want = 0;
        for (double lane : lanes) want += lane;
        on_every_kernel_target([&] {
            INFO("n = " << n);
            CHECK(sum_of_squares(g.data(), n) == want);
            std::vector<float> scaled = g;
            scale_in_place(scaled.data(), 0.25f, n);
            for (int64_t k = 0; k < n; ++k) REQUIRE(scaled[k] == 0.25f * g[k]);
        });
    }
}

TEST_CASE("a weight's gradient over many rows, split over the threads, agrees with the reference", "[parity]") {
    // 400 rows: on 2 or 3 threads the oneDNN backend sums each thread's run of rows apart and
    // adds the runs; the LM head's blocks of 512 rows add a second block's runs onto the first's.
    const Tensor hidden = random_tensor({4, 100, 24}, 21, DType::f32), weight = random_tensor({40, 24}, 22, DType::f32);
    const Tensor seed = random_tensor({4, 100, 40}, 23, DType::f32);
    const Tensor lm_hidden = random_tensor({1024, 24}, 24, DType::f32), lm_weight = random_tensor({11, 24}, 25, DType::f32);
    const std::vector<int32_t> ids = random_ids(1024, 11, 26);
    const Tensor targets = Tensor::from(std::vector<double>(ids.begin(), ids.end()), {1024}, DType::i32);
    auto gradients = [&] {
        Tensor w = weight.clone().set_requires_grad(true), lm_w = lm_weight.clone().set_requires_grad(true);
        linear(hidden, w).backward(seed);
        linear_cross_entropy(lm_hidden, lm_w, targets, /*block_logits=*/512 * 11).backward();
        return std::vector<Tensor>{w.grad(), lm_w.grad()};
    };
    const std::vector<Tensor> want = computed_by(make_reference_backend(), gradients);
    for (const int threads : {1, 2, 3}) {
        ThreadsScope scope(threads);
        const std::vector<Tensor> got = computed_by(make_onednn_backend(), gradients);
        INFO(threads << " threads");
        CHECK(relative_error(got[0], want[0]) <= 1e-5);  // float32 sums of 400 products
        CHECK(relative_error(got[1], want[1]) <= 1e-5);  // two blocks of 512 rows
    }
}
