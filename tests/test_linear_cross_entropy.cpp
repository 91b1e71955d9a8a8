// linear_cross_entropy: the LM head and the loss in blocks of rows. It must give what
// cross_entropy(linear(...)) gives — to the bit in one block (the lesson's numbers depend on
// it), to rounding in many — and never hold more than a block of logits.
#include "catch.hpp"

#include <cmath>
#include <cstring>

#include "test_helpers.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/buffer_pool.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/model.hpp"

using namespace tinyformer;
using tinyformer::testing::BackendScope;

namespace {

Tensor random_tensor(Rng& rng, const Shape& shape, DType dtype) {
    std::vector<double> values(static_cast<size_t>(numel_of(shape)));
    for (double& v : values) v = rng.normal(0.0, 1.0);
    return Tensor::from(values, shape, dtype);
}

Tensor random_targets(Rng& rng, const Shape& shape, int64_t V) {
    std::vector<int32_t> ids(static_cast<size_t>(numel_of(shape)));
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(static_cast<uint64_t>(V)));
    return Tensor::ids(ids, shape);
}

struct LossAndGrads {
    double loss;
    Tensor d_hidden, d_weight;
};

// The loss, and the gradients of `upstream` · loss, computed by `loss_of`.
template <class LossFn>
LossAndGrads run(const Tensor& hidden_values, const Tensor& weight_values, double upstream, LossFn loss_of) {
    Tensor hidden = hidden_values.clone().set_requires_grad();
    Tensor weight = weight_values.clone().set_requires_grad();
    Tensor loss = loss_of(hidden, weight);
    const double value = loss.item();
    if (upstream == 1.0) loss.backward();
    else scale(loss, upstream).backward();
    return {value, hidden.grad(), weight.grad()};
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           std::memcmp(a.data<float>(), b.data<float>(), static_cast<size_t>(a.numel()) * 4) == 0;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.at(i) - b.at(i)));
    return worst;
}

}  // namespace

TEST_CASE("linear_cross_entropy in many blocks gives cross_entropy(linear) and its gradients", "[ops]") {
    Rng rng(5);
    const Tensor hidden = random_tensor(rng, {2, 7, 5}, DType::f64);  // N = 14 rows
    const Tensor weight = random_tensor(rng, {11, 5}, DType::f64);    // V = 11
    const Tensor targets = random_targets(rng, {2, 7}, 11);
    for (double upstream : {1.0, -2.5}) {
        const LossAndGrads expected = run(hidden, weight, upstream, [&](const Tensor& h, const Tensor& w) {
            return cross_entropy(linear(h, w), targets);
        });
        // 33 logits a block: blocks of 3 rows and a last one of 2; 1 logit: a row at a time.
        for (int64_t block_logits : {int64_t{33}, int64_t{1}, int64_t{14 * 11}}) {
            INFO("block_logits " << block_logits << ", upstream gradient " << upstream);
            const LossAndGrads got = run(hidden, weight, upstream, [&](const Tensor& h, const Tensor& w) {
                return linear_cross_entropy(h, w, targets, block_logits);
            });
            CHECK(got.loss == Approx(expected.loss).epsilon(1e-14));
            REQUIRE(got.d_hidden.shape() == hidden.shape());
            CHECK(max_abs_difference(got.d_hidden, expected.d_hidden) < 1e-15);
            CHECK(max_abs_difference(got.d_weight, expected.d_weight) < 1e-15);
        }
    }
}

TEST_CASE("linear_cross_entropy in one block is cross_entropy(linear) to the bit", "[ops]") {
    // The lesson's shape on the training backend: its losses and checkpoints stay what they were.
    BackendScope onednn(make_onednn_backend());
    Rng rng(7);
    const Tensor hidden = random_tensor(rng, {32, 64, 64}, DType::f32);
    const Tensor weight = random_tensor(rng, {79, 64}, DType::f32);
    const Tensor targets = random_targets(rng, {32, 64}, 79);
    const LossAndGrads expected = run(hidden, weight, 1.0, [&](const Tensor& h, const Tensor& w) {
        return cross_entropy(linear(h, w), targets);
    });
    const LossAndGrads got = run(hidden, weight, 1.0, [&](const Tensor& h, const Tensor& w) {
        return linear_cross_entropy(h, w, targets);
    });
    CHECK(got.loss == expected.loss);
    CHECK(same_bits(got.d_hidden, expected.d_hidden));
    CHECK(same_bits(got.d_weight, expected.d_weight));
}

TEST_CASE("The model's loss adds the LM head's gradient into the arena as the unfused pair does", "[ops]") {
    BackendScope onednn(make_onednn_backend());
    ModelConfig config;
    config.vocab_size = 79, config.d_model = 32, config.n_heads = 2, config.n_layers = 1, config.context = 16;
    Transformer model(config, 3);
    Rng rng(9);
    const Tensor ids = random_targets(rng, {4, 16}, 79), targets = random_targets(rng, {4, 16}, 79);
    auto gradients = [&](auto loss_of) {
        model.parameters().zero_grad();
        loss_of().backward();
        std::vector<Tensor> grads;
        for (const auto& [name, p] : model.parameters().named()) grads.push_back(p.grad().clone());
        return grads;
    };
    const auto fused = gradients([&] { return model.loss(ids, targets); });
    const auto unfused = gradients([&] { return cross_entropy(model.forward(ids), targets); });
    REQUIRE(fused.size() == unfused.size());
    for (size_t i = 0; i < fused.size(); ++i) CHECK(same_bits(fused[i], unfused[i]));
}

TEST_CASE("linear_cross_entropy never holds all the logits", "[ops]") {
    // 512 rows × 6,000 characters: 12 MB of logits in one piece; in blocks of 2^18 logits (1 MB),
    // the op's forward and backward must stay far below that.
    BackendScope onednn(make_onednn_backend());
    Rng rng(11);
    Tensor hidden = random_tensor(rng, {8, 64, 32}, DType::f32).set_requires_grad();
    Tensor weight = random_tensor(rng, {6000, 32}, DType::f32).set_requires_grad();
    const Tensor targets = random_targets(rng, {8, 64}, 6000);
    const size_t before = buffer_pool::stats().bytes_in_use;
    buffer_pool::reset_peak();
    Tensor loss = linear_cross_entropy(hidden, weight, targets, int64_t{1} << 18);
    loss.backward();
    const size_t peak = buffer_pool::stats().peak_bytes_in_use - before;
    const size_t all_logits = size_t{512} * 6000 * 4;
    INFO("peak " << peak << " bytes beyond what was held before; all the logits are " << all_logits);
    // Three blocks of logits, probabilities and their gradient (3 MB), d_weight and d_hidden.
    CHECK(peak < all_logits / 2);
    CHECK(std::isfinite(loss.item()));
}

TEST_CASE("linear_cross_entropy without grad mode records nothing and scores the same", "[ops]") {
    Rng rng(13);
    const Tensor hidden = random_tensor(rng, {3, 4, 6}, DType::f64).set_requires_grad();
    const Tensor weight = random_tensor(rng, {9, 6}, DType::f64).set_requires_grad();
    const Tensor targets = random_targets(rng, {3, 4}, 9);
    const double with_grad = linear_cross_entropy(hidden, weight, targets, 20).item();
    NoGradScope no_grad;
    Tensor loss = linear_cross_entropy(hidden, weight, targets, 20);
    CHECK(loss.grad_fn() == nullptr);
    CHECK(loss.item() == with_grad);
    CHECK(loss.item() == Approx(cross_entropy(linear(hidden, weight), targets).item()).epsilon(1e-14));
}

TEST_CASE("linear_cross_entropy names what is wrong with its inputs", "[ops]") {
    const Tensor hidden = Tensor::zeros({2, 3, 4}), weight = Tensor::zeros({5, 4});
    REQUIRE_THROWS_WITH(linear_cross_entropy(hidden, weight, Tensor::ids({0, 1, 2, 3, 4, 5}, {6})),
                        ContainsSubstring("linear_cross_entropy") && ContainsSubstring("[2,3]") &&
                            ContainsSubstring("[6]"));
    REQUIRE_THROWS_WITH(linear_cross_entropy(hidden, weight, Tensor::ids({0, 1, 2, 3, 4, 5}, {2, 3})),
                        ContainsSubstring("target 5") && ContainsSubstring("5 classes"));
    REQUIRE_THROWS_WITH(linear_cross_entropy(hidden, Tensor::zeros({5, 3}), Tensor::ids({0, 0, 0, 0, 0, 0}, {2, 3})),
                        ContainsSubstring("[5,3]"));
}
