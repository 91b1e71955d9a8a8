// Memory in a training step: buffers are reused from the first step on, and the backward
// frees activations as it passes them.
#include "catch.hpp"

#include "tinyformer/engine/buffer_pool.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/model.hpp"
#include "tinyformer/train/optim.hpp"

using namespace tinyformer;

namespace {

struct Step {
    Transformer model{ModelConfig{.vocab_size = 79, .d_model = 64, .n_heads = 2, .n_layers = 2, .context = 32}, 1};
    AdamW adam{model.parameters(), OptimConfig{}};
    Rng rng{2};

    Tensor random_ids(int64_t B, int64_t T) {
        std::vector<int32_t> ids(B * T);
        for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(79));
        return Tensor::ids(ids, {B, T});
    }
    void run(int64_t B, int64_t T) {  // the trainer's step
        model.parameters().zero_grad();
        Tensor loss = model.loss(random_ids(B, T), random_ids(B, T));
        loss.backward();
        clip_grad_norm(model.parameters(), 1.0);
        adam.step(1e-3);
    }
};

}  // namespace

TEST_CASE("after the first step, a training step takes no tensor buffer from the system", "[memory]") {
    Step step;
    step.run(8, 32);
    const buffer_pool::Stats after_first = buffer_pool::stats();
    for (int i = 0; i < 3; ++i) step.run(8, 32);
    const buffer_pool::Stats after_more = buffer_pool::stats();
    REQUIRE(after_more.system_allocations == after_first.system_allocations);
    REQUIRE(after_more.reuses > after_first.reuses);  // the steps did take buffers: from the pool

    // The count is real: a step of a new shape needs new buffers.
    step.run(4, 16);
    REQUIRE(buffer_pool::stats().system_allocations > after_more.system_allocations);
}

TEST_CASE("the backward frees activations as it goes: the step's peak is about the forward's", "[memory]") {
    Step step;
    step.run(8, 32);  // warm: buffers pooled
    step.model.parameters().zero_grad();
    const size_t before = buffer_pool::stats().bytes_in_use;
    Tensor loss = step.model.loss(step.random_ids(8, 32), step.random_ids(8, 32));
    const size_t forward = buffer_pool::stats().bytes_in_use - before;  // what the graph holds
    buffer_pool::reset_peak();
    loss.backward();
    const size_t backward_peak = buffer_pool::stats().peak_bytes_in_use - before;
    // Keeping every activation and every gradient until the end would need about twice
    // the forward's memory; releasing as it goes stays close to the forward's (1.26 times
    // here since residual_linear stores no branch output: the forward holds less).
    REQUIRE(backward_peak < forward * 1.35);
    loss = Tensor();
    REQUIRE(buffer_pool::stats().bytes_in_use == before);  // nothing of the step is left behind
}
