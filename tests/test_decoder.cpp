// The one-character-at-a-time decoder against the model's own forward pass: the same
// logits at every position, within the context and (rope) beyond it.
#include "catch.hpp"
#include <algorithm>
#include <cmath>

#include "test_helpers.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/kernel_targets.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/decoder.hpp"

using namespace tinyformer;

namespace {

ModelConfig small_config(const std::string& positions) {
    // Widths that are not multiples of the decoder's 64-float blocks, and V = 79.
    return ModelConfig{.vocab_size = 79, .d_model = 48, .n_heads = 3, .n_layers = 2, .context = 12,
                       .positions = positions};
}

std::vector<int32_t> random_ids(int64_t n, int64_t V, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(V));
    return ids;
}

// The largest |a - b| relative to the largest |b|, over row `row` of logits [1,T,V].
double relative_difference(const std::vector<float>& decoded, const Tensor& logits, int64_t row) {
    const int64_t V = logits.dim(-1);
    double worst = 0, scale = 0;
    for (int64_t v = 0; v < V; ++v) {
        const double expected = logits.at(row * V + v);
        worst = std::max(worst, std::abs(decoded[v] - expected));
        scale = std::max(scale, std::abs(expected));
    }
    return worst / scale;
}

}  // namespace

TEST_CASE("decoder logits equal the full forward pass at every position", "[decoder]") {
    for (const std::string positions : {"rope", "learned"}) {
        INFO("positions = " << positions);
        const ModelConfig config = small_config(positions);
        Transformer model(config, 7);
        const std::vector<int32_t> ids = random_ids(config.context, config.vocab_size, 3);
        NoGradScope no_grad;
        const Tensor full = model.forward(Tensor::ids(ids, {1, config.context}));  // [1,T,V]
        Decoder decoder(model);
        for (int64_t t = 0; t < config.context; ++t) {
            INFO("position " << t);
            REQUIRE(relative_difference(decoder.step(ids[t]), full, t) < 1e-5);
        }
        REQUIRE(decoder.length() == config.context);
    }
}

TEST_CASE("decoder with rope slides past the context as the cached forward pass does", "[decoder]") {
    const ModelConfig config = small_config("rope");
    Transformer model(config, 11);
    const std::vector<int32_t> ids = random_ids(3 * config.context, config.vocab_size, 5);
    NoGradScope no_grad;
    KVCache cache = model.make_cache();
    Decoder decoder(model);
    for (size_t t = 0; t < ids.size(); ++t) {
        INFO("position " << t);
        const Tensor expected = model.forward_cached(Tensor::ids({ids[t]}, {1, 1}), cache);  // [1,1,V]
        REQUIRE(relative_difference(decoder.step(ids[t]), expected, 0) < 1e-5);
    }
    REQUIRE(decoder.length() == config.context);
    REQUIRE(decoder.next_position() == 3 * config.context);
}

TEST_CASE("decoder: learned positions end at the context, and reset starts again at position 0", "[decoder]") {
    const ModelConfig config = small_config("learned");
    Transformer model(config, 13);
    const std::vector<int32_t> ids = random_ids(config.context, config.vocab_size, 9);
    Decoder decoder(model);
    std::vector<float> first;
    for (int32_t id : ids) {
        const std::vector<float>& logits = decoder.step(id);
        if (first.empty()) first = logits;
    }
    REQUIRE_THROWS_AS(decoder.step(ids[0]), std::logic_error);
    decoder.reset();
    REQUIRE(decoder.step(ids[0]) == first);  // bit-identical: nothing of the old cache is read
    REQUIRE_THROWS_AS(decoder.step(static_cast<int32_t>(config.vocab_size)), std::out_of_range);
}

TEST_CASE("decoder prefill gives the bits of one step per position, on every kernel target", "[decoder]") {
    for (const std::string positions : {"rope", "learned"}) {
        // D = 20: 4D = 80 floats of GELU, not a whole number of AVX-512 registers per position.
        const ModelConfig config{.vocab_size = 79, .d_model = 20, .n_heads = 2, .n_layers = 2, .context = 12,
                                 .positions = positions};
        Transformer model(config, 11);
        const std::vector<int32_t> ids = random_ids(config.context, config.vocab_size, 5);
        for (const KernelTarget& target : kernel_targets_on_this_cpu()) {
            tinyformer::testing::KernelTargetScope scope(target.name);
            for (const int64_t n : {int64_t{1}, int64_t{5}, config.context}) {
                INFO(positions << ", kernel target " << target.name << ", " << n << " positions");
                Decoder stepped(model), prefilled(model);
                std::vector<float> step_logits;
                for (int64_t t = 0; t < n; ++t) step_logits = stepped.step(ids[t]);
                const std::vector<float> prefill_logits = prefilled.prefill(ids.data(), n);
                CHECK(prefill_logits == step_logits);
                CHECK(prefilled.length() == n);
                CHECK(prefilled.next_position() == n);
                for (int64_t layer = 0; layer < config.n_layers; ++layer)
                    for (int64_t head = 0; head < config.n_heads; ++head)
                        CHECK(std::equal(stepped.attention_weights(layer, head),
                                         stepped.attention_weights(layer, head) + n,
                                         prefilled.attention_weights(layer, head)));
                if (n < config.context)  // the cache it leaves: the next step reads the same keys
                    CHECK(prefilled.step(ids[n]) == stepped.step(ids[n]));
            }
        }
    }
}

TEST_CASE("decoder: products split across threads give one thread's bits", "[decoder]") {
    // D = 96: the MLP's 96 × 384 products (36,864 weights, 6 blocks of 64 outputs) are split
    // across the threads; the attention's 96 × 96 ones are not.
    const ModelConfig config{.vocab_size = 79, .d_model = 96, .n_heads = 3, .n_layers = 2, .context = 12,
                             .positions = "rope"};
    Transformer model(config, 13);
    const std::vector<int32_t> ids = random_ids(config.context, config.vocab_size, 9);
    struct Logits {
        std::vector<std::vector<float>> stepped;  // after each step
        std::vector<float> prefilled;             // after a prefill of all of ids
    };
    auto decode = [&](int threads) {
        set_num_threads(threads);
        Logits logits;
        Decoder decoder(model);
        for (const int32_t id : ids) logits.stepped.push_back(decoder.step(id));
        logits.prefilled = Decoder(model).prefill(ids.data(), config.context);
        return logits;
    };
    const int threads_before = num_threads();
    const Logits one = decode(1), two = decode(2), three = decode(3);
    set_num_threads(threads_before);
    CHECK(two.stepped == one.stepped);
    CHECK(three.stepped == one.stepped);  // 6 blocks, 2 per thread
    CHECK(two.prefilled == one.prefilled);
    CHECK(three.prefilled == one.prefilled);
    // ... and they are the model's logits, so the split path is not merely self-consistent.
    NoGradScope no_grad;
    const Tensor full = model.forward(Tensor::ids(ids, {1, config.context}));  // [1,T,V]
    for (int64_t t = 0; t < config.context; ++t) CHECK(relative_difference(two.stepped[t], full, t) < 1e-5);
}

TEST_CASE("decoder prefill refuses an empty or too long window and unknown ids", "[decoder]") {
    const ModelConfig config = small_config("rope");
    Transformer model(config, 7);
    Decoder decoder(model);
    const std::vector<int32_t> ids = random_ids(config.context + 1, config.vocab_size, 3);
    CHECK_THROWS_AS(decoder.prefill(ids.data(), 0), std::out_of_range);
    CHECK_THROWS_AS(decoder.prefill(ids.data(), config.context + 1), std::out_of_range);
    const std::vector<int32_t> bad = {1, 79};
    CHECK_THROWS_AS(decoder.prefill(bad.data(), 2), std::out_of_range);
}

