// Sampling past the context, held to PyTorch: tests/data/sampling_reference.txt is the
// greedy text of scripts/torch_reference.py sample (its prompt and length in the .json),
// which predicts each new character from the last `context` characters recomputed from
// scratch (nanoGPT's generate). tinyformer's
// default (KvCache::window) must give the same text; the rolling cache reads keys computed
// with a longer history, so it departs from it — which shows the check can fail.
#include "catch.hpp"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tinyformer/model/sampler.hpp"
#include "tinyformer/train/checkpoint.hpp"

using namespace tinyformer;

namespace {

struct Reference {
    std::u32string prompt, text;
    int64_t chars = 0;
};

std::string read_text(const std::string& name) {
    std::ifstream in(std::string(TINYFORMER_SOURCE_DIR) + "/tests/data/" + name);
    REQUIRE(in.good());
    return std::string(std::istreambuf_iterator<char>(in), {});
}

Reference read_reference() {
    const nlohmann::json json = nlohmann::json::parse(read_text("sampling_reference.json"));
    return {decode_utf8(json.at("prompt").get<std::string>(), "prompt"),
            decode_utf8(read_text("sampling_reference.txt"), "text"), json.at("chars").get<int64_t>()};
}

// The index of the first character where the two differ, or -1.
int64_t first_difference(const std::u32string& a, const std::u32string& b) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (a[i] != b[i]) return static_cast<int64_t>(i);
    return a.size() == b.size() ? -1 : static_cast<int64_t>(std::min(a.size(), b.size()));
}

}  // namespace

TEST_CASE("past the context sampling gives the PyTorch crop-and-recompute text and the rolling cache does not",
          "[sampler][reference]") {
    const Reference reference = read_reference();
    const LoadedModel loaded =
        load_model(std::string(TINYFORMER_SOURCE_DIR) + "/tests/data/sampling_reference.safetensors");
    const int64_t context = loaded.config.model.context;
    REQUIRE(static_cast<int64_t>(reference.prompt.size()) + reference.chars > 10 * context);  // far past it

    SampleOptions greedy;
    greedy.temperature = 0;
    greedy.max_new = reference.chars;
    Rng unused(0);
    const std::u32string window = generate(*loaded.model, loaded.vocab, reference.prompt, greedy, unused);
    INFO("first difference at character " << first_difference(window, reference.text));
    CHECK(encode_utf8(window) == encode_utf8(reference.text));

    greedy.cache = KvCache::rolling;
    const std::u32string rolling = generate(*loaded.model, loaded.vocab, reference.prompt, greedy, unused);
    const int64_t departs = first_difference(rolling, reference.text);
    CHECK(departs >= 0);
    // Within the context the two caches are the same computation.
    CHECK(departs >= context - static_cast<int64_t>(reference.prompt.size()));
}
