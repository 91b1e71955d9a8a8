// PyTorch's generator reproduced: TorchRng and initialise_like_torch against numbers that
// PyTorch 1.13 itself drew (tests/data/torch_draws.json, written by make_torch_draws.py in
// the same directory), and the generator state's round trip for --resume.
#include "catch.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/engine/torch_rng.hpp"
#include "tinyformer/model/model.hpp"

using namespace tinyformer;

namespace {

const nlohmann::json& torch_draws() {
    static const nlohmann::json draws = [] {
        std::ifstream in(std::string(TINYFORMER_SOURCE_DIR) + "/tests/data/torch_draws.json");
        REQUIRE(in.good());
        return nlohmann::json::parse(in);
    }();
    return draws;
}

std::vector<float> floats(const nlohmann::json& list) {
    std::vector<float> values;
    for (const auto& value : list) values.push_back(static_cast<float>(value.get<double>()));
    return values;
}

// The largest |a - b|, with the sizes required equal.
template <class A>
double largest_difference(const std::vector<A>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst;
}

std::vector<float> drawn_normal(TorchRng& rng, int64_t n, double mean, double std) {
    std::vector<float> values(static_cast<size_t>(n));
    rng.normal(values.data(), n, mean, std);
    return values;
}

// torch computes the ≥16-value normals' log, sin and cos with AVX polynomials
// (avx_mathfun.h), we with libm: the same numbers to a few float roundings.
constexpr double kNormalTolerance = 4e-6;

}  // namespace

TEST_CASE("TorchRng draws what torch.manual_seed(1337) draws, in the same order", "[torch_rng]") {
    const nlohmann::json& draws = torch_draws();
    TorchRng rng(1337);

    // normal_ of 40 values: Box–Muller on two blocks of 16, then the last 16 drawn again.
    CHECK(largest_difference(drawn_normal(rng, 40, 0.0, 1.0), floats(draws["normal_40"])) < kNormalTolerance);
    // normal_ of fewer than 16 values: double normals in pairs; the 5th leaves its sine for
    // the next call, which uses it first.
    CHECK(largest_difference(drawn_normal(rng, 5, 0.5, 2.0), floats(draws["normal_5"])) == 0);
    CHECK(largest_difference(drawn_normal(rng, 3, 0.0, 1.0), floats(draws["normal_3"])) == 0);

    // kaiming_uniform_(a=√5) of an [8,64] weight: uniform_(-1/8, 1/8), bit for bit.
    const double a = std::sqrt(5.0), bound = std::sqrt(3.0) * (std::sqrt(2.0 / (1.0 + a * a)) / std::sqrt(64.0));
    std::vector<float> weight(8 * 64);
    rng.uniform(weight.data(), 8 * 64, -bound, bound);
    CHECK(largest_difference(weight, floats(draws["kaiming_8x64"])) == 0);

    std::vector<int64_t> starts;
    for (int i = 0; i < 20; ++i) starts.push_back(rng.randint(1003789));
    CHECK(starts == draws["randint_1003789"].get<std::vector<int64_t>>());
}

TEST_CASE("initialise_like_torch gives the PyTorch reference's initial weights and leaves its stream where torch's is",
          "[torch_rng]") {
    for (const char* positions : {"rope", "learned"}) {
        INFO("positions " << positions);
        const nlohmann::json& expected = torch_draws()["model_" + std::string(positions)];
        ModelConfig config{11, 16, 2, 1, 8, positions};
        Transformer model(config, /*seed=*/7);
        TorchRng rng(7);
        initialise_like_torch(model.parameters(), config, rng);

        REQUIRE(model.parameters().named().size() == expected.size());
        for (const auto& [name, param] : model.parameters().named()) {
            INFO(name);
            REQUIRE(expected.contains(name));
            const double tolerance = name.find("emb") != std::string::npos ? kNormalTolerance : 0.0;
            CHECK(largest_difference(param.to_vector(), floats(expected[name])) <= tolerance);
        }
        // The draws that follow (the first batch's window starts) are torch's too.
        std::vector<int64_t> next;
        for (int i = 0; i < 4; ++i) next.push_back(rng.randint(100));
        CHECK(next == torch_draws()["model_" + std::string(positions) + "_next_randint_100"].get<std::vector<int64_t>>());
    }
}

TEST_CASE("initialise_like_torch draws the same float32 numbers into a float64 model", "[torch_rng]") {
    ModelConfig config{11, 16, 2, 1, 8, "learned"};
    Transformer single(config, 7), twice(config, 7, DType::f64);
    TorchRng a(7), b(7);
    initialise_like_torch(single.parameters(), config, a);
    initialise_like_torch(twice.parameters(), config, b);
    for (size_t i = 0; i < single.parameters().named().size(); ++i) {
        INFO(single.parameters().named()[i].first);
        CHECK(single.parameters().named()[i].second.to_vector() == twice.parameters().named()[i].second.to_vector());
    }
}

TEST_CASE("a batch drawn with TorchRng takes torch.randint(len - T - 1) starts", "[torch_rng]") {
    std::vector<int32_t> ids(50);
    for (int32_t i = 0; i < 50; ++i) ids[i] = i;  // id = position, so a window shows its start
    TorchRng rng(1337), same(1337);
    const Batch batch = sample_batch(TokenIds(ids, 1), 6, 8, rng);
    const std::vector<double> inputs = batch.inputs.to_vector(), targets = batch.targets.to_vector();
    for (int64_t b = 0; b < 6; ++b) {
        const int64_t start = same.randint(50 - 8 - 1);
        for (int64_t t = 0; t < 8; ++t) {
            CHECK(inputs[b * 8 + t] == start + t);
            CHECK(targets[b * 8 + t] == start + t + 1);
        }
    }
    // randint's bound must be at least 1: T + 2 ids are needed, one more than our own sampler.
    CHECK_THROWS_WITH(sample_batch(TokenIds(std::vector<int32_t>(9, 0), 1), 1, 8, rng), ContainsSubstring("need at least 10"));
}

TEST_CASE("TorchRng's state round-trips, the kept normal included, and malformed states are refused",
          "[torch_rng]") {
    TorchRng rng(42);
    drawn_normal(rng, 3, 0.0, 1.0);  // an odd count: a sine is kept for the next draw
    const std::string state = rng.state();
    TorchRng restored(0);
    restored.set_state(state);
    CHECK(drawn_normal(restored, 7, 0.0, 1.0) == drawn_normal(rng, 7, 0.0, 1.0));
    CHECK(restored.randint(1000000) == rng.randint(1000000));

    TorchRng fresh(0);  // without the kept sine the next normal differs
    fresh.set_state(state.substr(0, state.rfind("normal")) + "no-normal");
    TorchRng with_sine(0);
    with_sine.set_state(state);
    CHECK(drawn_normal(fresh, 1, 0.0, 1.0) != drawn_normal(with_sine, 1, 0.0, 1.0));

    const std::string twister = state.substr(0, state.rfind("normal"));
    const std::string first_word = state.substr(0, state.find(' '));
    for (const std::string& bad : {std::string(""), std::string("1 2 3"), state + " extra",
                                  "4294967296" + state.substr(first_word.size()),  // a word of 33 bits
                                  "-1" + state.substr(first_word.size()),
                                  state.substr(0, state.rfind("normal")) + "normal nan",
                                  state.substr(0, state.rfind("normal")) + "maybe"}) {
        INFO(bad.substr(0, 40));
        CHECK_THROWS_AS(TorchRng(0).set_state(bad), std::invalid_argument);
    }
}
