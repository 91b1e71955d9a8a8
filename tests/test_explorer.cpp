// The explorer (tinyformer serve): its runs against the model's own forward pass (attention
// maps, head ablation), and its JSON API — every kind of bad request, and many requests at
// once giving exactly what each gives alone (run under ThreadSanitizer by scripts/test.sh).
#include "catch.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <thread>

#include "test_helpers.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/explore/explorer.hpp"
#include "tinyformer/explore/explorer_api.hpp"
#include "tinyformer/train/checkpoint.hpp"

using namespace tinyformer;
using nlohmann::json;

namespace {

// Widths that are not multiples of the decoder's 64-float blocks; rope and learned positions.
ModelConfig explorer_config(const std::string& positions) {
    return ModelConfig{.vocab_size = 13, .d_model = 24, .n_heads = 3, .n_layers = 2, .context = 9,
                       .positions = positions};
}

Vocabulary letters(int64_t n) {
    std::vector<char32_t> chars;
    for (int64_t i = 0; i < n; ++i) chars.push_back(U'a' + static_cast<char32_t>(i));
    return Vocabulary(chars);
}

std::vector<int32_t> random_ids(int64_t n, int64_t V, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(V));
    return ids;
}

// The largest |a − b| over two float arrays of the same size.
double max_difference(const float* a, const float* b, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst;
}

// A saved run the API can load: a model trained on nothing (random weights are enough), a
// validation text (for mean ablation) and a probes file.
struct SavedRun {
    testing::TempDir dir{"tinyformer_explorer"};
    std::string checkpoint;
    explicit SavedRun(bool with_text = true) {
        const std::string text = "abcab cabbage. a cab. bad cab. ";
        Vocabulary vocab = Vocabulary::from_text(decode_utf8(text, "text"));
        RunConfig config;
        config.name = "explorer";
        config.model = {.vocab_size = vocab.size(), .d_model = 16, .n_heads = 2, .n_layers = 2, .context = 12,
                        .positions = "rope"};
        if (with_text) {
            config.data.train_path = dir.write("train.txt", text);
            config.data.val_path = dir.write("val.txt", text);
            config.data.probes_path = dir.write("probes.tsv", "a cab. \tbad\nabc\tab\n");
        }
        Transformer model(config.model, 5);
        checkpoint = dir.file("model.safetensors");
        save_model(checkpoint, model, vocab, config, 7);
    }
};

std::string run_body(const std::string& text, const std::string& extra = "") {
    return "{\"text\": \"" + text + "\"" + extra + "}";
}

}  // namespace

TEST_CASE("explore: every head's attention equals the model's forward pass, row by row", "[explorer]") {
    for (const std::string positions : {"rope", "learned"}) {
        const ModelConfig config = explorer_config(positions);
        Transformer model(config, 3);
        const std::vector<int32_t> ids = random_ids(config.context, config.vocab_size, 4);
        const ExplorerRun run = explore(model, letters(config.vocab_size), ids);

        NoGradScope no_grad;
        std::vector<Tensor> per_layer;  // each [1,H,T,T]
        const Tensor logits = model.forward(Tensor::ids(ids, {1, config.context}), &per_layer).to(DType::f32);
        const int64_t T = config.context, H = config.n_heads;
        REQUIRE(run.maps.weights.size() == static_cast<size_t>(config.n_layers * H * T * T));
        for (int64_t l = 0; l < config.n_layers; ++l) {
            const Tensor expected = per_layer[l].to(DType::f32);
            INFO(positions << " layer " << l);
            CHECK(max_difference(run.maps.map(l, 0), expected.data<float>(), H * T * T) < 1e-5);
        }
        CHECK(max_difference(run.logits.data(), logits.data<float>(), T * config.vocab_size) < 1e-4);
        CHECK(check_attention(run.maps).empty());
    }
}

TEST_CASE("explore: an ablated head gives the model's own ablation, by zeros or by a mean", "[explorer]") {
    const ModelConfig config = explorer_config("rope");
    Transformer model(config, 6);
    const std::vector<int32_t> ids = random_ids(7, config.vocab_size, 8);
    const int64_t T = 7, V = config.vocab_size, d = config.head_width();
    std::vector<float> mean(d);
    for (int64_t i = 0; i < d; ++i) mean[i] = 0.3f * static_cast<float>(i % 5) - 0.5f;
    std::vector<std::vector<float>> means(config.n_layers * config.n_heads, mean);

    const ExplorerRun intact = explore(model, letters(V), ids);
    for (const Ablation ablation : {Ablation::zero, Ablation::mean}) {
        const ExplorerRun ablated = explore(model, letters(V), ids, {{0, 1}}, ablation, &means);
        NoGradScope no_grad;
        ForwardHooks hooks;
        hooks.ablations = {{.layer = 0, .head = 1}};
        if (ablation == Ablation::mean)
            hooks.ablations[0].with = Tensor::from(std::vector<double>(mean.begin(), mean.end()), {d});
        const Tensor expected = model.forward(Tensor::ids(ids, {1, T}), hooks).to(DType::f32);
        CHECK(max_difference(ablated.logits.data(), expected.data<float>(), T * V) < 1e-4);
        // ... and it changed something: the test would pass for a decoder that ignored it otherwise.
        CHECK(max_difference(ablated.logits.data(), intact.logits.data(), T * V) > 1e-3);
        // The ablated head's own attention is the same; a later layer's is not.
        CHECK(max_difference(ablated.maps.map(0, 1), intact.maps.map(0, 1), T * T) == 0);
        CHECK(max_difference(ablated.maps.map(1, 0), intact.maps.map(1, 0), T * T) > 0);
    }
}

TEST_CASE("top_next_chars: the softmax's largest, most likely first, equal ones by id", "[explorer]") {
    const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f, -1.0f};
    const std::vector<NextChar> top = top_next_chars(logits.data(), 5, 3);
    REQUIRE(top.size() == 3);
    CHECK(top[0].id == 1);
    CHECK(top[1].id == 3);
    CHECK(top[2].id == 2);
    double sum = 0;
    for (float z : logits) sum += std::exp(static_cast<double>(z));
    CHECK(top[0].probability == Approx(std::exp(2.0) / sum).epsilon(1e-12));
    CHECK(top_next_chars(logits.data(), 5, 10).size() == 5);
}

TEST_CASE("parse_head: L<layer>H<head> of this model, and nothing else", "[explorer]") {
    const ModelConfig config = explorer_config("rope");  // 2 layers, 3 heads
    CHECK(parse_head("L1H2", config, "ablate") == HeadRef{1, 2});
    CHECK(head_name({1, 2}) == "L1H2");
    for (const std::string bad : {"L2H0", "L0H3", "l0h0", "L0", "H1", "L-1H0", "L0H", "LH0", "L0H1x", "L 0H1", ""})
        CHECK_THROWS_WITH(parse_head(bad, config, "ablate"), ContainsSubstring("expected a head such as L0H1"));
}

TEST_CASE("ExplorerApi: bad requests are 400 with a one-line error naming what is wrong", "[explorer]") {
    SavedRun saved;
    const ExplorerApi api(saved.checkpoint);
    const std::vector<std::pair<std::string, std::string>> bad_runs = {
        {"{\"text\": \"ab", "not JSON at byte"},
        {"[1]", "expected a JSON object"},
        {run_body("ab", ", \"x\": 1"), "unknown field \"x\""},
        {"{}", "text: missing"},
        {run_body(""), "text: empty"},
        {run_body("abZ"), "character 'Z' (U+005A) at character 2 is not in the model's"},
        {run_body("ab", ", \"ablate\": [\"L2H0\"]"), "\"L2H0\" is not in this model"},
        {run_body("ab", ", \"ablate\": \"L0H0\""), "ablate: expected an array"},
        {run_body("ab", ", \"ablation\": \"half\""), "expected \"zero\" or \"mean\""},
        {std::string(kMaxBodyBytes + 1, ' '), "expected at most 65536"},
    };
    for (const auto& [body, message] : bad_runs) {
        const ApiReply reply = api.run(body);
        INFO(body.substr(0, 60));
        CHECK(reply.status == 400);
        CHECK_THAT(reply.body.value("error", ""), ContainsSubstring(message));
    }
    const std::vector<std::pair<std::string, std::string>> bad_samples = {
        {"{\"prompt\": \"ab\", \"max_new\": 2001}", "max_new: 2001"},
        {"{\"prompt\": \"ab\", \"max_new\": 0}", "max_new: 0"},
        {"{\"prompt\": \"ab\", \"temperature\": -0.5}", "temperature: -0.5"},
        {"{\"prompt\": \"ab\", \"top_k\": 99}", "top_k: 99"},
        {"{\"prompt\": \"ab\", \"top_p\": 1.5}", "top_p: 1.5"},
        {"{\"prompt\": \"ab\", \"seed\": -3}", "seed: -3"},
        {"{\"prompt\": \"\"}", "prompt: empty"},
    };
    for (const auto& [body, message] : bad_samples) {
        const ApiReply reply = api.sample(body);
        INFO(body);
        CHECK(reply.status == 400);
        CHECK_THAT(reply.body.value("error", ""), ContainsSubstring(message));
    }
    // Every unknown character is listed with its position, for the page to underline.
    const ApiReply unknown = api.run(run_body("aXbY"));
    REQUIRE(unknown.body.contains("unknown"));
    CHECK(unknown.body["unknown"].size() == 2);
    CHECK(unknown.body["unknown"][1]["position"] == 3);
    CHECK(unknown.body["unknown"][1]["character"] == "Y");
}

TEST_CASE("ExplorerApi: a run gives the maps, the next characters and the ablated model", "[explorer]") {
    SavedRun saved;
    const ExplorerApi api(saved.checkpoint);
    const ApiReply reply = api.run(run_body("abcab cabbage. a cab.", ", \"ablate\": [\"L1H0\"], \"ablation\": \"mean\""));
    REQUIRE(reply.status == 200);
    const json& body = reply.body;
    CHECK(body["dropped"] == 9);  // 21 characters, context 12
    CHECK(body["text"] == "bage. a cab.");
    CHECK(body["attention"].size() == 2);
    CHECK(body["attention"][1].size() == 2);
    CHECK(body["attention"][1][0].size() == 12);
    CHECK(body["top"][11].size() == 8);  // the 10 likeliest, of a vocabulary of 8
    REQUIRE(body["ablated"].is_object());
    CHECK(body["ablated"]["heads"] == json::array({"L1H0"}));
    CHECK(body["top"][11] != body["ablated"]["top"][11]);

    const ApiReply model = api.model();
    CHECK(model.body["mean_ablation"] == true);
    CHECK(model.body["probes"].size() == 2);
    CHECK(model.body["probes"][1]["kind"].is_string());

    // Without a validation text there is no mean ablation, and the API says why.
    SavedRun bare(false);
    const ExplorerApi bare_api(bare.checkpoint);
    CHECK(bare_api.model().body["mean_ablation"] == false);
    const ApiReply mean = bare_api.run(run_body("abc", ", \"ablate\": [\"L0H0\"], \"ablation\": \"mean\""));
    CHECK(mean.status == 400);
    CHECK_THAT(mean.body.value("error", ""), ContainsSubstring("needs the run's validation text"));
}

TEST_CASE("ExplorerApi: the attention weights print as their float32 values in at most 9 digits", "[explorer]") {
    // The maps are float32: 0.4365f goes out as 0.4365, not as 0.43650001287460327, and reads
    // back as the same float (json_number.hpp).
    SavedRun saved;
    const ExplorerApi api(saved.checkpoint);
    const std::string text = "abcab cabbage. a cab.";
    const ApiReply reply = api.run(run_body(text, ", \"ablate\": [\"L0H1\"]"));
    REQUIRE(reply.status == 200);
    const LoadedModel loaded = load_model(saved.checkpoint);
    const std::vector<int32_t> ids = loaded.vocab.encode(decode_utf8(text, "text").substr(9), "text");  // the last 12
    const ExplorerRun whole = explore(*loaded.model, loaded.vocab, ids);
    const ExplorerRun ablated = explore(*loaded.model, loaded.vocab, ids, {HeadRef{0, 1}});
    int64_t checked = 0, long_numbers = 0, other_floats = 0;
    std::string first_long;
    for (const auto& [maps, attention] : {std::pair{&whole.maps, reply.body["attention"]},
                                          std::pair{&ablated.maps, reply.body["ablated"]["attention"]}}) {
        const int64_t T = maps->length();
        REQUIRE(static_cast<int64_t>(attention.size()) == maps->layers);
        for (int64_t l = 0; l < maps->layers; ++l)
            for (int64_t h = 0; h < maps->heads; ++h)
                for (int64_t i = 0; i < T; ++i)
                    for (int64_t j = 0; j < T; ++j) {
                        const std::string number = attention[l][h][i][j].dump();
                        std::string digits;
                        for (char c : number.substr(0, number.find('e')))
                            if (c >= '0' && c <= '9') digits += c;
                        const size_t first = digits.find_first_not_of('0');
                        const size_t significant =
                            first == std::string::npos ? 0 : digits.find_last_not_of('0') - first + 1;
                        if (significant > 9 && long_numbers++ == 0) first_long = number;
                        float back = 0;
                        std::from_chars(number.data(), number.data() + number.size(), back);
                        const float weight = maps->map(l, h)[i * T + j];
                        other_floats += std::bit_cast<uint32_t>(back) != std::bit_cast<uint32_t>(weight);
                        ++checked;
                    }
    }
    CHECK(checked == 2 * 2 * 2 * 12 * 12);
    INFO("the first: " << first_long);
    CHECK(long_numbers == 0);
    CHECK(other_floats == 0);
}

TEST_CASE("ExplorerApi: 16 threads at once get exactly what each request gets alone", "[explorer][concurrency]") {
    set_num_threads(1);  // the start-up's kernels on one thread: the test is about the requests
    SavedRun saved;
    const ExplorerApi api(saved.checkpoint);
    const std::vector<std::string> runs = {run_body("abcab cab"), run_body("a cab. bad", ", \"ablate\": [\"L0H1\"]"),
                                           run_body("cabbage", ", \"ablate\": [\"L1H0\", \"L0H0\"], \"ablation\": \"mean\"")};
    const std::string sample = "{\"prompt\": \"ab\", \"max_new\": 40, \"seed\": 9, \"temperature\": 0.9}";
    std::vector<std::string> expected;
    for (const std::string& body : runs) expected.push_back(api.run(body).body.dump());
    const std::string expected_sample = api.sample(sample).body.dump();

    constexpr int kThreads = 16, kRequests = 12;
    std::vector<int> wrong(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int r = 0; r < kRequests; ++r) {
                const size_t k = static_cast<size_t>(t + r) % (runs.size() + 1);
                const std::string got = k < runs.size() ? api.run(runs[k]).body.dump() : api.sample(sample).body.dump();
                wrong[t] += got != (k < runs.size() ? expected[k] : expected_sample);
            }
        });
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) CHECK(wrong[t] == 0);
}
