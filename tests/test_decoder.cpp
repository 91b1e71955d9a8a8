// The one-character-at-a-time decoder against the model's own forward pass: the same
// logits at every position, within the context and (rope) beyond it.
#include "catch.hpp"
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

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

// The contract's formulas (docs/model.md) in plain loops and float64, for a rope model that
// reads `ids` one position at a time and attends over a sliding window: position p reads
// positions p-context+1..p, whose keys and values were computed when each was read. The
// reference for the decoder past the context, where its ring of cached positions slides.
// Row p of the result: the logits after position p.
std::vector<std::vector<double>> sliding_window_logits(const Transformer& model, const std::vector<int32_t>& ids) {
    const ModelConfig& c = model.config();
    const int64_t D = c.d_model, H = c.n_heads, d = c.head_width(), T = c.context, V = c.vocab_size;
    auto weight = [&](const std::string& name) { return model.parameters().get(name).to_vector(); };
    // y = W x (+ b) for W [out, in], as nn.Linear.
    auto linear = [](const std::vector<double>& W, const std::vector<double>& x, int64_t n_out,
                     const std::vector<double>* b = nullptr) {
        const int64_t n_in = static_cast<int64_t>(x.size());
        std::vector<double> y(n_out);
        for (int64_t o = 0; o < n_out; ++o) {
            double sum = b ? (*b)[o] : 0.0;
            for (int64_t i = 0; i < n_in; ++i) sum += W[o * n_in + i] * x[i];
            y[o] = sum;
        }
        return y;
    };
    auto layer_norm = [&](const std::vector<double>& x, const std::string& name) {
        const std::vector<double> w = weight(name + ".weight"), b = weight(name + ".bias");
        double mean = 0, variance = 0;
        for (double value : x) mean += value / D;
        for (double value : x) variance += (value - mean) * (value - mean) / D;
        std::vector<double> y(D);
        for (int64_t i = 0; i < D; ++i) y[i] = (x[i] - mean) / std::sqrt(variance + 1e-5) * w[i] + b[i];
        return y;
    };
    auto rotate = [&](std::vector<double>& u, int64_t position) {  // pairs (2j, 2j+1) of each head
        for (int64_t h = 0; h < H; ++h)
            for (int64_t j = 0; j < d / 2; ++j) {
                const double theta = static_cast<double>(position) * std::pow(10000.0, -2.0 * j / d);
                double &u0 = u[h * d + 2 * j], &u1 = u[h * d + 2 * j + 1];
                const double r0 = u0 * std::cos(theta) - u1 * std::sin(theta), r1 = u0 * std::sin(theta) + u1 * std::cos(theta);
                u0 = r0, u1 = r1;
            }
    };
    const std::vector<double> tok_emb = weight("tok_emb.weight"), lm_head = weight("lm_head.weight");
    std::vector<std::vector<std::vector<double>>> keys(c.n_layers), values(c.n_layers);  // [L][position][D]
    std::vector<std::vector<double>> logits;
    for (int64_t p = 0; p < static_cast<int64_t>(ids.size()); ++p) {
        std::vector<double> x(tok_emb.begin() + ids[p] * D, tok_emb.begin() + (ids[p] + 1) * D);
        for (int64_t l = 0; l < c.n_layers; ++l) {
            const std::string at = "blocks." + std::to_string(l) + ".";
            const std::vector<double> h = layer_norm(x, at + "ln1");
            std::vector<double> q = linear(weight(at + "attn.q_proj.weight"), h, D);
            std::vector<double> k = linear(weight(at + "attn.k_proj.weight"), h, D);
            rotate(q, p), rotate(k, p);
            keys[l].push_back(k);
            values[l].push_back(linear(weight(at + "attn.v_proj.weight"), h, D));
            std::vector<double> z(D, 0.0);  // the heads side by side
            const int64_t first = std::max<int64_t>(0, p - T + 1);
            for (int64_t head = 0; head < H; ++head) {
                std::vector<double> scores;
                double top = -1e300, total = 0;
                for (int64_t j = first; j <= p; ++j) {
                    double dot = 0;
                    for (int64_t i = 0; i < d; ++i) dot += q[head * d + i] * keys[l][j][head * d + i];
                    scores.push_back(dot / std::sqrt(static_cast<double>(d)));
                    top = std::max(top, scores.back());
                }
                for (double& score : scores) total += (score = std::exp(score - top));
                for (int64_t j = first; j <= p; ++j)
                    for (int64_t i = 0; i < d; ++i) z[head * d + i] += scores[j - first] / total * values[l][j][head * d + i];
            }
            const std::vector<double> attn_out = linear(weight(at + "attn.out_proj.weight"), z, D);
            for (int64_t i = 0; i < D; ++i) x[i] += attn_out[i];
            const std::vector<double> fc1_bias = weight(at + "mlp.fc1.bias"), fc2_bias = weight(at + "mlp.fc2.bias");
            std::vector<double> hidden = linear(weight(at + "mlp.fc1.weight"), layer_norm(x, at + "ln2"), 4 * D, &fc1_bias);
            for (double& u : hidden) u = 0.5 * u * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (u + 0.044715 * u * u * u)));
            const std::vector<double> mlp_out = linear(weight(at + "mlp.fc2.weight"), hidden, D, &fc2_bias);
            for (int64_t i = 0; i < D; ++i) x[i] += mlp_out[i];
        }
        logits.push_back(linear(lm_head, layer_norm(x, "ln_f"), V));
    }
    return logits;
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

TEST_CASE("decoder with rope slides past the context: each position reads the last context ones", "[decoder]") {
    const ModelConfig config = small_config("rope");
    Transformer model(config, 11);
    const std::vector<int32_t> ids = random_ids(3 * config.context, config.vocab_size, 5);
    const std::vector<std::vector<double>> expected = sliding_window_logits(model, ids);
    // The reference is the model: within the context it is the full forward pass.
    {
        NoGradScope no_grad;
        const Tensor full = model.forward(Tensor::ids(std::vector<int32_t>(ids.begin(), ids.begin() + config.context),
                                                      {1, config.context}));
        for (int64_t t = 0; t < config.context; ++t) {
            std::vector<float> row(expected[t].begin(), expected[t].end());
            REQUIRE(relative_difference(row, full, t) < 1e-5);
        }
    }
    Decoder decoder(model);
    const int64_t V = config.vocab_size;
    for (size_t t = 0; t < ids.size(); ++t) {
        INFO("position " << t);
        const std::vector<float>& decoded = decoder.step(ids[t]);
        double worst = 0, scale = 0;
        for (int64_t v = 0; v < V; ++v) {
            worst = std::max(worst, std::abs(decoded[v] - expected[t][v]));
            scale = std::max(scale, std::abs(expected[t][v]));
        }
        REQUIRE(worst / scale < 1e-5);
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

