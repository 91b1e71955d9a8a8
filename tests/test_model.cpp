// The model against the contract: names, shapes, count, initialisation, forward.
#include "catch.hpp"
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/model/model.hpp"

using namespace tinyformer;

TEST_CASE("parameter names and shapes follow the contract", "[model]") {
    Transformer model(ModelConfig{}, 1);
    const Parameters& p = model.parameters();
    REQUIRE(p.count() == 109696);
    REQUIRE(p.get("tok_emb.weight").shape() == Shape{79, 64});
    REQUIRE(p.get("blocks.1.attn.q_proj.weight").shape() == Shape{64, 64});
    REQUIRE(p.get("blocks.0.attn.out_proj.weight").shape() == Shape{64, 64});
    REQUIRE(p.get("blocks.0.mlp.fc1.weight").shape() == Shape{256, 64});
    REQUIRE(p.get("blocks.0.mlp.fc1.bias").shape() == Shape{256});
    REQUIRE(p.get("blocks.0.mlp.fc2.weight").shape() == Shape{64, 256});
    REQUIRE(p.get("blocks.1.ln2.bias").shape() == Shape{64});
    REQUIRE(p.get("ln_f.weight").shape() == Shape{64});
    REQUIRE(p.get("lm_head.weight").shape() == Shape{79, 64});
    REQUIRE_FALSE(p.contains("pos_emb.weight"));
    REQUIRE(p.named().size() == 1 + 2 * 12 + 3);

    ModelConfig learned;
    learned.positions = "learned";
    Transformer with_positions(learned, 1);
    REQUIRE(with_positions.parameters().get("pos_emb.weight").shape() == Shape{64, 64});
    REQUIRE(with_positions.parameters().count() == 109696 + 64 * 64);
}

TEST_CASE("initialisation is deterministic from the seed, and documented", "[model]") {
    Transformer a(ModelConfig{}, 42), b(ModelConfig{}, 42), c(ModelConfig{}, 43);
    REQUIRE(a.parameters().values().to_vector() == b.parameters().values().to_vector());
    REQUIRE(a.parameters().values().to_vector() != c.parameters().values().to_vector());
    // PyTorch's defaults: layer norms 1 and 0, embeddings N(0,1), linear layers U(±1/√in)
    REQUIRE(a.parameters().get("ln_f.weight").to_vector() == std::vector<double>(64, 1.0));
    REQUIRE(a.parameters().get("blocks.0.ln1.bias").to_vector() == std::vector<double>(64, 0.0));
    auto rms = [](const Tensor& t) {
        double sum = 0;
        for (double v : t.to_vector()) sum += v * v;
        return std::sqrt(sum / t.numel());
    };
    auto max_abs = [](const Tensor& t) {
        double m = 0;
        for (double v : t.to_vector()) m = std::max(m, std::abs(v));
        return m;
    };
    REQUIRE(rms(a.parameters().get("tok_emb.weight")) == Approx(1.0).epsilon(0.05));
    const Tensor& fc2 = a.parameters().get("blocks.0.mlp.fc2.weight");  // [64,256]: in = 256
    REQUIRE(max_abs(fc2) <= 1.0 / 16);
    REQUIRE(rms(fc2) == Approx(1.0 / 16 / std::sqrt(3.0)).epsilon(0.05));  // uniform: bound/√3
    const Tensor& fc1_bias = a.parameters().get("blocks.0.mlp.fc1.bias");  // fc1 [256,64]: in = 64
    REQUIRE(max_abs(fc1_bias) <= 1.0 / 8);
    REQUIRE(max_abs(fc1_bias) > 1.0 / 16);
}

TEST_CASE("forward gives [B,T,V] logits and a loss a little above ln V at initialisation", "[model]") {
    Transformer model(ModelConfig{}, 7);
    std::vector<int32_t> ids(2 * 10);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 31) % 79);
    Tensor x = Tensor::ids(ids, {2, 10});
    REQUIRE(model.forward(x).shape() == Shape{2, 10, 79});
    double loss = model.loss(x, x).item();
    // Nearly uniform predictions: ln 79 = 4.37, plus a little for the untrained logits' spread.
    REQUIRE(loss > std::log(79.0));
    REQUIRE(loss < std::log(79.0) + 0.5);
    REQUIRE_THROWS_WITH(model.forward(Tensor::ids(std::vector<int32_t>(65, 0), {1, 65})),
                        ContainsSubstring("65") && ContainsSubstring("context"));
}

TEST_CASE("the hook points of a batch are each sequence's own, q, k and v split right", "[model]") {
    // ForwardHooks::activations with B = 2: each sequence's q, k, v, rotated q and k equal
    // those of a forward of that sequence alone (B = 1 and B > 1 take q, k and v apart
    // differently), and the rotated q and k give the pattern.
    Transformer model(ModelConfig{}, 7);
    const int64_t T = 6, H = 2, d = 32;
    std::vector<int32_t> ids(2 * T);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 31 + 5) % 79);
    NoGradScope no_grad;
    std::map<std::string, Tensor> batch;
    model.forward(Tensor::ids(ids, {2, T}), ForwardHooks{.activations = &batch});
    for (int64_t b = 0; b < 2; ++b) {
        std::map<std::string, Tensor> alone;
        model.forward(Tensor::ids(std::vector<int32_t>(ids.begin() + b * T, ids.begin() + (b + 1) * T), {1, T}),
                      ForwardHooks{.activations = &alone});
        for (const char* name : {"attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_rot_q", "attn.hook_rot_k",
                                 "attn.hook_z", "attn.hook_pattern", "hook_attn_out", "hook_mlp_out"}) {
            const std::string at = std::string("blocks.1.") + name;
            const Tensor& mine = alone.at(at);
            REQUIRE(batch.at(at).dim(0) == 2);
            const std::vector<double> all = batch.at(at).to_vector(), one = mine.to_vector();
            for (size_t i = 0; i < one.size(); ++i) REQUIRE(all[b * one.size() + i] == Approx(one[i]).margin(1e-5));
        }
        // softmax(rot_q · rot_k / √d) over j ≤ i is the pattern.
        const Tensor &q = alone.at("blocks.0.attn.hook_rot_q"), &k = alone.at("blocks.0.attn.hook_rot_k");  // [1,H,T,d]
        const Tensor& pattern = alone.at("blocks.0.attn.hook_pattern");                                      // [1,H,T,T]
        REQUIRE(q.shape() == Shape{1, H, T, d});
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i) {
                std::vector<double> scores;
                double total = 0, top = -1e300;
                for (int64_t j = 0; j <= i; ++j) {
                    double dot = 0;
                    for (int64_t c = 0; c < d; ++c) dot += q.at(((h * T) + i) * d + c) * k.at(((h * T) + j) * d + c);
                    scores.push_back(dot / std::sqrt(double(d)));
                    top = std::max(top, scores.back());
                }
                for (double& score : scores) total += (score = std::exp(score - top));
                for (int64_t j = 0; j <= i; ++j)
                    REQUIRE(pattern.at((h * T + i) * T + j) == Approx(scores[j] / total).margin(1e-5));
            }
    }
}

TEST_CASE("float32 and float64 models agree to float32 rounding", "[model]") {
    ModelConfig config{.vocab_size = 13, .d_model = 16, .n_heads = 2, .n_layers = 2, .context = 8};
    Transformer single(config, 5, DType::f32), twice(config, 5, DType::f64);
    std::vector<int32_t> ids = {1, 5, 2, 12, 0, 7, 7, 3};
    Tensor x = Tensor::ids(ids, {1, 8}), y = Tensor::ids({5, 2, 12, 0, 7, 7, 3, 1}, {1, 8});
    Tensor l32 = single.loss(x, y), l64 = twice.loss(x, y);
    REQUIRE(l32.item() == Approx(l64.item()).epsilon(1e-5));
    l32.backward();
    l64.backward();
    auto g32 = single.parameters().gradients().to_vector(), g64 = twice.parameters().gradients().to_vector();
    double worst = 0;
    for (size_t i = 0; i < g32.size(); ++i) worst = std::max(worst, std::abs(g32[i] - g64[i]) / std::max(1e-3, std::abs(g64[i])));
    REQUIRE(worst < 1e-3);
}

TEST_CASE("the model's parameters receive gradients in the arena", "[model]") {
    Transformer model(ModelConfig{.vocab_size = 11, .d_model = 8, .n_heads = 2, .n_layers = 1, .context = 4}, 3);
    Tensor x = Tensor::ids({1, 2, 3, 4}, {1, 4});
    model.parameters().zero_grad();
    model.loss(x, x).backward();
    for (const auto& [name, p] : model.parameters().named()) {
        INFO(name);
        double norm = 0;
        for (double g : p.grad().to_vector()) norm += g * g;
        CHECK(norm > 0);  // every parameter is on the path to the loss
    }
    NoGradScope no_grad;
    REQUIRE(model.loss(x, x).grad_fn() == nullptr);
}

TEST_CASE("invalid model configurations name the key", "[model]") {
    ModelConfig odd_heads{.d_model = 64, .n_heads = 3};
    REQUIRE_THROWS_WITH(odd_heads.validate(), ContainsSubstring("n_heads") && ContainsSubstring("divisible"));
    ModelConfig no_context{.context = 0};
    REQUIRE_THROWS_WITH(no_context.validate(), ContainsSubstring("context"));
    ModelConfig bad_positions{.positions = "absolute"};
    REQUIRE_THROWS_WITH(bad_positions.validate(), ContainsSubstring("positions") && ContainsSubstring("absolute"));
}
