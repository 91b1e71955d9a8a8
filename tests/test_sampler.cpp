// Sampling: the filters, and the key/value cache against full recomputation.
#include "catch.hpp"
#include <cmath>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/model/decoder.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/support/errors.hpp"

using namespace tinyformer;

TEST_CASE("temperature 0 is greedy", "[sampler]") {
    auto p = next_char_distribution({0.1, 2.0, -1.0, 2.0}, 0.0, 0, 1.0);
    REQUIRE(p == std::vector<double>{0, 1, 0, 0});  // the first of the tied maxima
}

TEST_CASE("top-k keeps the k most likely characters", "[sampler]") {
    std::vector<double> logits = {std::log(0.1), std::log(0.4), std::log(0.2), std::log(0.3)};
    auto p = next_char_distribution(logits, 1.0, 2, 1.0);
    REQUIRE(p[0] == 0.0);
    REQUIRE(p[2] == 0.0);
    REQUIRE(p[1] == Approx(0.4 / 0.7));
    REQUIRE(p[3] == Approx(0.3 / 0.7));
    auto all = next_char_distribution(logits, 1.0, 0, 1.0);
    REQUIRE(all[0] == Approx(0.1));
}

TEST_CASE("top-p keeps the smallest set reaching p", "[sampler]") {
    std::vector<double> logits = {std::log(0.1), std::log(0.4), std::log(0.2), std::log(0.3)};
    auto p = next_char_distribution(logits, 1.0, 0, 0.65);  // 0.4 + 0.3 = 0.7 >= 0.65
    REQUIRE(p[1] == Approx(0.4 / 0.7));
    REQUIRE(p[3] == Approx(0.3 / 0.7));
    REQUIRE(p[0] == 0.0);
    REQUIRE(p[2] == 0.0);
    auto just_top = next_char_distribution(logits, 1.0, 0, 0.4);  // the top one alone reaches 0.4
    REQUIRE(just_top[1] == 1.0);
}

TEST_CASE("temperature sharpens and flattens", "[sampler]") {
    std::vector<double> logits = {0.0, 1.0};
    REQUIRE(next_char_distribution(logits, 0.5, 0, 1.0)[1] > next_char_distribution(logits, 1.0, 0, 1.0)[1]);
    REQUIRE(next_char_distribution(logits, 100.0, 0, 1.0)[1] == Approx(0.5).epsilon(0.01));
}

TEST_CASE("draw follows the distribution", "[sampler]") {
    Rng rng(11);
    std::vector<int> counts(3);
    for (int i = 0; i < 20000; ++i) ++counts[draw({0.2, 0.0, 0.8}, rng)];
    REQUIRE(counts[1] == 0);
    REQUIRE(counts[0] / 20000.0 == Approx(0.2).margin(0.015));
}

static Vocabulary letters(int n) {
    std::vector<char32_t> chars;
    for (int i = 0; i < n; ++i) chars.push_back(U'a' + i);
    return Vocabulary(chars);
}

TEST_CASE("KV-cache generation equals full recomputation", "[sampler]") {
    for (const std::string positions : {"rope", "learned"}) {
        INFO(positions);
        ModelConfig config{.vocab_size = 7, .d_model = 16, .n_heads = 2, .n_layers = 2, .context = 12,
                           .positions = positions};
        Transformer model(config, 21);
        for (const auto& [name, p] : model.parameters().named()) {  // larger weights: a peaked, varied model
            Tensor param = p;
            Rng rng(5);
            for (int64_t i = 0; i < param.numel(); ++i) param.data<float>()[i] += static_cast<float>(rng.normal(0, 0.3));
        }
        Vocabulary vocab = letters(7);

        // The logits of every prefix position agree.
        std::vector<int32_t> ids = {1, 4, 2, 6, 0, 3, 3, 5};
        NoGradScope no_grad;
        Tensor full = model.forward(Tensor::ids(ids, {1, 8}));  // [1,8,7]
        Decoder decoder(model);
        decoder.prefill(ids.data(), 3);  // a prompt of 3, then one at a time, as generate() reads them
        for (int t = 3; t < 8; ++t) {
            const std::vector<float>& step = decoder.step(ids[t]);
            for (int v = 0; v < 7; ++v) REQUIRE(step[v] == Approx(full.at(t * 7 + v)).margin(1e-5));
        }

        // Greedy text agrees within the context.
        SampleOptions greedy;
        greedy.temperature = 0;
        greedy.max_new = 9;  // 3 + 9 = 12 = the context
        Rng a(1), b(1);
        REQUIRE(encode_utf8(generate(model, vocab, U"bca", greedy, a)) ==
                encode_utf8(generate_uncached(model, vocab, U"bca", greedy, b)));

        // Past the context, the default (KvCache::window) is the full forward pass on the last
        // 12 characters, greedy and sampled. (With KvCache::rolling the sampled text departs
        // from it within these 200 characters.)
        for (const SampleOptions& options : {greedy, SampleOptions{}}) {
            SampleOptions longer = options;
            longer.max_new = 200;
            Rng c(3), d(3);
            REQUIRE(encode_utf8(generate(model, vocab, U"bca", longer, c)) ==
                    encode_utf8(generate_uncached(model, vocab, U"bca", longer, d)));
        }
    }
}

TEST_CASE("a decoder kept from sample to sample gives what a new one gives", "[sampler]") {
    ModelConfig config{.vocab_size = 7, .d_model = 16, .n_heads = 2, .n_layers = 2, .context = 12};
    Transformer model(config, 21);
    for (const auto& [name, p] : model.parameters().named()) {
        Tensor param = p;
        Rng rng(6);
        for (int64_t i = 0; i < param.numel(); ++i) param.data<float>()[i] += static_cast<float>(rng.normal(0, 0.3));
    }
    Vocabulary vocab = letters(7);
    SampleOptions window, rolling, short_one;
    window.max_new = rolling.max_new = 40;  // past the context of 12
    rolling.cache = KvCache::rolling;
    short_one.max_new = 3;
    Decoder kept(model);
    // Each sample after another one, long or short, rolling or not, from a long prompt or a
    // short one: as a fresh decoder's.
    const std::vector<std::pair<std::u32string, SampleOptions>> runs = {
        {U"bca", window}, {U"gfedcbagfedcbag", rolling}, {U"a", short_one}, {U"bca", rolling}, {U"bca", window}};
    for (size_t i = 0; i < runs.size(); ++i) {
        INFO("sample " << i);
        const auto& [prompt, options] = runs[i];
        Rng a(11 + i), b(11 + i);
        REQUIRE(encode_utf8(generate(kept, vocab, prompt, options, a)) ==
                encode_utf8(generate(model, vocab, prompt, options, b)));
    }
}

TEST_CASE("learned positions restart the window beyond the context, matching recomputation", "[sampler]") {
    ModelConfig config{.vocab_size = 5, .d_model = 8, .n_heads = 2, .n_layers = 2, .context = 6, .positions = "learned"};
    Transformer model(config, 4);
    for (const auto& [name, p] : model.parameters().named()) {
        Tensor param = p;
        Rng rng(9);
        for (int64_t i = 0; i < param.numel(); ++i) param.data<float>()[i] += static_cast<float>(rng.normal(0, 0.5));
    }
    SampleOptions sampled;
    sampled.max_new = 30;  // five windows' worth
    Rng a(7), b(7);
    Vocabulary vocab = letters(5);
    REQUIRE(encode_utf8(generate(model, vocab, U"ab", sampled, a)) ==
            encode_utf8(generate_uncached(model, vocab, U"ab", sampled, b)));
}

TEST_CASE("the stop string ends a sample, and bad prompts are errors", "[sampler]") {
    ModelConfig config{.vocab_size = 3, .d_model = 8, .n_heads = 2, .n_layers = 1, .context = 8};
    Transformer model(config, 2);
    Vocabulary vocab = letters(3);
    SampleOptions options;
    options.max_new = 500;
    options.stop = U"a";
    Rng rng(3);
    std::u32string text = generate(model, vocab, U"b", options, rng);
    REQUIRE(text.back() == U'a');
    REQUIRE(text.find(U'a') == text.size() - 1);
    REQUIRE_THROWS_WITH(generate(model, vocab, U"bz", options, rng), ContainsSubstring("'z'") && ContainsSubstring("prompt"));
    REQUIRE_THROWS_WITH(generate(model, vocab, U"", options, rng), ContainsSubstring("empty"));
    // A prompt longer than the context is read through its last `context` characters.
    options.stop.clear();
    options.max_new = 4;
    options.temperature = 0;
    Rng r1(1), r2(1);
    REQUIRE(generate(model, vocab, U"ccccccccccab", options, r1) == generate(model, vocab, U"ccccccab", options, r2));
}

TEST_CASE("the sampling options are checked in one place, with the caller's names", "[sampler]") {
    const int64_t V = 79, limit = 2000;
    auto problem = [&](auto change, const SampleOptionNames& names = {}) {
        SampleOptions options;
        change(options);
        return sample_options_problem(options, V, limit, names);
    };
    CHECK(problem([](SampleOptions&) {}).empty());  // the defaults
    CHECK(problem([](SampleOptions& o) { o.max_new = limit, o.temperature = 0, o.top_k = V, o.top_p = 1; }).empty());
    CHECK(problem([](SampleOptions& o) { o.max_new = 0; }) == "--max-new: 0, expected an integer 1..2000");
    CHECK(problem([](SampleOptions& o) { o.max_new = limit + 1; }) == "--max-new: 2001, expected an integer 1..2000");
    CHECK(problem([](SampleOptions& o) { o.temperature = -1; }) == "--temperature: -1, expected a number >= 0");
    CHECK(problem([](SampleOptions& o) { o.temperature = NAN; }) == "--temperature: nan, expected a number >= 0");
    CHECK(problem([](SampleOptions& o) { o.temperature = INFINITY; }) == "--temperature: inf, expected a number >= 0");
    CHECK(problem([](SampleOptions& o) { o.top_k = -1; }) == "--top-k: -1, expected an integer 0..79 (0 = all)");
    CHECK(problem([](SampleOptions& o) { o.top_k = V + 1; }) == "--top-k: 80, expected an integer 0..79 (0 = all)");
    CHECK(problem([](SampleOptions& o) { o.top_p = 0; }) == "--top-p: 0, expected a number in (0, 1]");
    CHECK(problem([](SampleOptions& o) { o.top_p = 1.5; }) == "--top-p: 1.5, expected a number in (0, 1]");
    const SampleOptionNames api{"max_new", "temperature", "top_k", "top_p"};
    CHECK(problem([](SampleOptions& o) { o.top_p = 0.25 - 1; }, api) == "top_p: -0.75, expected a number in (0, 1]");
}
