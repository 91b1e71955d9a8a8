// The optimizer recipe: schedule, clipping, AdamW.
#include "catch.hpp"
#include <cmath>

#include "tinyformer/train/optim.hpp"

using namespace tinyformer;

TEST_CASE("learning rate: linear warm-up, then cosine to min_lr", "[optim]") {
    OptimConfig optim;
    optim.lr = 1e-3, optim.min_lr = 1e-4, optim.warmup_steps = 100;
    REQUIRE(learning_rate(optim, 0, 2000) == Approx(1e-3 / 101));
    REQUIRE(learning_rate(optim, 99, 2000) == Approx(1e-3 * 100 / 101));
    REQUIRE(learning_rate(optim, 100, 2000) == Approx(1e-3));
    REQUIRE(learning_rate(optim, 1050, 2000) == Approx(5.5e-4));  // half-way: the mean of lr and min_lr
    REQUIRE(learning_rate(optim, 2000, 2000) == Approx(1e-4));
    REQUIRE(learning_rate(optim, 5000, 2000) == Approx(1e-4));
}

TEST_CASE("global-norm clipping scales all gradients together", "[optim]") {
    Parameters params({{"a", {2}}, {"b", {1}}}, DType::f32);
    Tensor g = params.gradients();
    g.data<float>()[0] = 3, g.data<float>()[1] = 0, g.data<float>()[2] = 4;  // norm 5
    REQUIRE(clip_grad_norm(params, 1.0) == Approx(5.0));
    REQUIRE(g.at(0) == Approx(0.6).epsilon(1e-5));
    REQUIRE(g.at(2) == Approx(0.8).epsilon(1e-5));
    REQUIRE(clip_grad_norm(params, 10.0) == Approx(1.0).epsilon(1e-5));  // under the limit: untouched
    REQUIRE(g.at(0) == Approx(0.6).epsilon(1e-5));
}

TEST_CASE("AdamW: bias-corrected step, weight decay on matrices only", "[optim]") {
    Parameters params({{"w", {1, 2}}, {"bias", {1}}}, DType::f32);
    params.values().fill(1.0);
    Tensor g = params.gradients();
    g.data<float>()[0] = 0.5, g.data<float>()[1] = -2, g.data<float>()[2] = 0.5;
    OptimConfig optim;
    optim.weight_decay = 0.1, optim.beta1 = 0.9, optim.beta2 = 0.99, optim.eps = 1e-8;
    AdamW adam(params, optim);
    adam.step(0.01);
    // First step: m̂ = g, v̂ = g², so the update is lr * sign(g) (up to eps), plus decay on w.
    REQUIRE(params.values().at(0) == Approx(1 * (1 - 0.01 * 0.1) - 0.01).epsilon(1e-6));
    REQUIRE(params.values().at(1) == Approx(1 * (1 - 0.01 * 0.1) + 0.01).epsilon(1e-6));
    REQUIRE(params.values().at(2) == Approx(1 - 0.01).epsilon(1e-6));  // the bias: no decay
    // Second step with the same gradient: m̂ and v̂ still g and g² after bias correction.
    adam.step(0.01);
    REQUIRE(params.values().at(2) == Approx(1 - 0.02).epsilon(1e-6));
    REQUIRE(adam.steps_taken() == 2);
}
