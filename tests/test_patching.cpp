// Activation and path patching (patching.hpp): the float64 forward that patching runs is the
// model's forward; twins swap the answer everywhere the prompt holds it; patching a run into
// itself recovers exactly 1 and patching nothing exactly 0; a head planted to carry the answer
// is the one patching finds; and path patching's input patches recompute the receiver's ln1.
#include "catch.hpp"
#include "test_helpers.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tinyformer/engine/rng.hpp"
#include "tinyformer/inspect/patching.hpp"
#include "tinyformer/inspect/patching_report.hpp"

using namespace tinyformer;
using tinyformer::testing::set_parameter;

namespace {

const std::u32string kVocabText = U"小丁拿着红色的苹果。谁拿？阿芳蓝美";


// A small random model with layer norms away from (1, 0), so that every term of the formula counts.
Transformer random_model(int64_t n_layers, const std::string& positions = "rope") {
    ModelConfig config;
    config.vocab_size = Vocabulary::from_text(kVocabText).size();
    config.d_model = 16;
    config.n_heads = 2;
    config.n_layers = n_layers;
    config.context = 16;
    config.positions = positions;
    Transformer model(config, 11);
    Rng rng(3);
    auto away = [&](int64_t, int64_t) { return 0.3 + 1.4 * rng.uniform(); };
    auto shift = [&](int64_t, int64_t) { return 0.4 * (rng.uniform() - 0.5); };
    for (int64_t l = 0; l < n_layers; ++l) {
        const std::string block = "blocks." + std::to_string(l) + ".";
        set_parameter(model, block + "ln1.weight", away);
        set_parameter(model, block + "ln1.bias", shift);
        set_parameter(model, block + "ln2.weight", away);
        set_parameter(model, block + "ln2.bias", shift);
    }
    set_parameter(model, "ln_f.weight", away);
    return model;
}

std::vector<Probe> who_probes() {
    return {{U"小丁拿着红色的苹果。谁拿？", U"小丁", "who"},
            {U"阿芳拿着蓝色的苹果。谁拿？", U"阿芳", "who"},
            {U"小美拿着红色的苹果。谁拿？", U"小美", "who"}};
}

}  // namespace

TEST_CASE("patching: the float64 traced forward gives the model's logits", "[patching]") {
    for (const std::string positions : {"rope", "learned"}) {
        const Transformer model = random_model(2, positions);
        const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
        const Tensor logits = model.forward(Tensor::ids(ids, {1, static_cast<int64_t>(ids.size())}));  // [1,T,V]
        const std::vector<double> expected = logits.to_vector();
        const Trace run = traced_forward(dense_model(model), ids);
        const int64_t V = model.config().vocab_size;
        double worst = 0;
        for (int64_t t = 0; t < static_cast<int64_t>(ids.size()); ++t)
            for (int64_t v = 0; v < V; ++v) worst = std::max(worst, std::abs(run.logits(t, v) - expected[t * V + v]));
        INFO(positions << ": largest |traced − model.forward| = " << worst);
        CHECK(worst < 1e-4);
    }
}

TEST_CASE("patching: a twin swaps the answer everywhere the prompt holds it, for one with another first character",
          "[patching]") {
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    std::vector<Probe> probes = who_probes();
    probes.push_back({U"小丁拿着红色的苹果。谁拿？小丁。苹果？", U"红色", "colour"});
    probes.push_back({U"阿芳拿着蓝色的苹果。谁拿？阿芳。苹果？", U"蓝色", "colour"});
    const std::vector<ProbeTwin> twins = corrupted_twins(vocab, probes, 64);
    REQUIRE(twins.size() == 5);
    // 小丁's next answer is 阿芳 (小美 would share the first character 小).
    CHECK(vocab.decode(twins[0].corrupted) == U"阿芳拿着红色的苹果。谁拿？");
    CHECK(twins[0].clean_answer == vocab.id(U'小'));
    CHECK(twins[0].corrupted_answer_id == vocab.id(U'阿'));
    // 阿芳's next is 小美; 小美's next, going round, is 小丁 (same first character), then 阿芳.
    CHECK(vocab.decode(twins[1].corrupted) == U"小美拿着蓝色的苹果。谁拿？");
    CHECK(vocab.decode(twins[2].corrupted) == U"阿芳拿着红色的苹果。谁拿？");
    // A colour probe: the colour changes where the story tells it, the name stays.
    CHECK(vocab.decode(twins[3].corrupted) == U"小丁拿着蓝色的苹果。谁拿？小丁。苹果？");
    CHECK(twins[3].kind == "colour");
    // Too long for the context: no twin.
    CHECK(corrupted_twins(vocab, probes, 12).empty());
}

TEST_CASE("patching: a run patched into itself recovers exactly 1, patching nothing exactly 0", "[patching]") {
    const Transformer transformer = random_model(2);
    const DenseModel model = dense_model(transformer);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const ProbeTwin twin = corrupted_twins(vocab, who_probes(), 16).front();
    const Trace clean = traced_forward(model, twin.clean), corrupted = traced_forward(model, twin.corrupted);
    const double clean_difference = logit_difference(clean, twin), corrupted_difference = logit_difference(corrupted, twin);
    REQUIRE(clean_difference != corrupted_difference);
    for (int64_t l = 0; l < 2; ++l)
        for (int64_t h = 0; h < 2; ++h) {
            // The clean run's own output into the clean run: the clean difference, so 1.
            const Trace into_itself = traced_forward(model, twin.clean, patch_output(l, h, -1, clean.z[l][h]));
            CHECK(recovered_fraction(logit_difference(into_itself, twin), clean_difference, corrupted_difference) == 1.0);
            // The corrupted run's own output into the corrupted run: nothing changes, so 0.
            const Trace nothing = traced_forward(model, twin.corrupted, patch_output(l, h, -1, corrupted.z[l][h]));
            CHECK(recovered_fraction(logit_difference(nothing, twin), clean_difference, corrupted_difference) == 0.0);
            // Starting from the unpatched run's earlier layers changes nothing.
            const Trace patched = traced_forward(model, twin.corrupted, patch_output(l, h, 2, clean.z[l][h]));
            const Trace resumed = traced_forward(model, twin.corrupted, patch_output(l, h, 2, clean.z[l][h]), &corrupted);
            CHECK((patched.logits - resumed.logits).cwiseAbs().maxCoeff() == 0.0);
        }
}

TEST_CASE("patching: a model whose answer is carried by one planted head is found by patching", "[patching]") {
    // One layer; head 1 writes nothing and the MLP adds nothing, so the only way the name can
    // reach the last position is through head 0's output there.
    Transformer transformer = random_model(1);
    const int64_t d = transformer.config().head_width();
    Tensor out_proj = transformer.parameters().get("blocks.0.attn.out_proj.weight");  // [D,D]
    for (int64_t row = 0; row < out_proj.dim(0); ++row)
        for (int64_t column = d; column < 2 * d; ++column) out_proj.data<float>()[row * out_proj.dim(1) + column] = 0;
    set_parameter(transformer, "blocks.0.mlp.fc2.weight", [](int64_t, int64_t) { return 0.0; });
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const Patching patching = activation_patching(transformer, vocab, who_probes());
    const KindPatching& who = patching.kinds.at("who");
    CHECK(who.twins == 3);
    REQUIRE(std::abs(who.clean - who.corrupted) > 1e-3);
    CHECK(who.every_position[0] == Approx(1.0).margin(1e-9));
    CHECK(who.answer_position[0] == Approx(1.0).margin(1e-9));  // only the last position's output matters
    CHECK(who.every_position[1] == 0.0);
    CHECK(who.answer_position[1] == 0.0);
    // The report's map of that twin: a hover value on every (head, position) cell.
    const std::string html = patching_html(patching, InspectResult{}, vocab, {}, 1, 2);
    CHECK_THAT(html, ContainsSubstring("<title>L0H0, ？: 1.000</title>"));
    CHECK_THAT(html, ContainsSubstring("<title>L0H1, 小: 0.000</title>"));
    // Position by position: the last position recovers everything, the others nothing.
    const std::vector<double>& by_position = who.example_by_position[0];
    CHECK(by_position.back() == Approx(1.0).margin(1e-9));
    for (size_t t = 0; t + 1 < by_position.size(); ++t) CHECK(by_position[t] == 0.0);
}

TEST_CASE("patching: path patching's input patches recompute the receiver's layer norm, and a silent sender has no edges",
          "[patching]") {
    Transformer transformer = random_model(2);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const ProbeTwin twin = corrupted_twins(vocab, who_probes(), 16).front();
    {
        // The whole residual difference into the receiver's queries, keys and values gives it
        // exactly the clean run's output: the same as patching that output in.
        const DenseModel model = dense_model(transformer);
        const Trace clean = traced_forward(model, twin.clean), corrupted = traced_forward(model, twin.corrupted);
        const Eigen::MatrixXd difference = clean.residual[1] - corrupted.residual[1];  // [T,D]
        Interventions all_inputs;
        for (char input : {'q', 'k', 'v'}) all_inputs.inputs.push_back({1, 0, input, difference});
        const Trace through_inputs = traced_forward(model, twin.corrupted, all_inputs);
        CHECK((through_inputs.z[1][0] - clean.z[1][0]).cwiseAbs().maxCoeff() < 1e-12);
        CHECK((through_inputs.z[1][1] - corrupted.z[1][1]).cwiseAbs().maxCoeff() == 0.0);  // the other head: as it was
    }
    {
        // With layer 0's MLP silent, the stream layer 1 reads changes by the embeddings' change
        // plus every layer-0 head's path delta, and by nothing else.
        Transformer no_mlp = random_model(2);
        set_parameter(no_mlp, "blocks.0.mlp.fc2.weight", [](int64_t, int64_t) { return 0.0; });
        set_parameter(no_mlp, "blocks.0.mlp.fc2.bias", [](int64_t, int64_t) { return 0.0; });
        const DenseModel model = dense_model(no_mlp);
        const Trace clean = traced_forward(model, twin.clean), corrupted = traced_forward(model, twin.corrupted);
        Eigen::MatrixXd sum = clean.residual[0] - corrupted.residual[0];
        for (int64_t h = 0; h < 2; ++h) sum += path_delta(model, 0, h, clean, corrupted);
        CHECK((sum - (clean.residual[1] - corrupted.residual[1])).cwiseAbs().maxCoeff() < 1e-12);
    }
    // Layer 0's head 1 writes nothing: none of its paths carries anything.
    const int64_t d = transformer.config().head_width();
    Tensor out_proj = transformer.parameters().get("blocks.0.attn.out_proj.weight");
    for (int64_t row = 0; row < out_proj.dim(0); ++row)
        for (int64_t column = d; column < 2 * d; ++column) out_proj.data<float>()[row * out_proj.dim(1) + column] = 0;
    const Patching patching = activation_patching(transformer, vocab, who_probes());
    const KindPatching& who = patching.kinds.at("who");
    REQUIRE(who.paths.size() == 4);  // senders L0H0, L0H1 × receivers L1H0, L1H1
    bool some_edge_carries = false;
    for (const PathEdge& edge : who.paths) {
        if (edge.sender_head == 1) {
            CHECK(edge.q == 0.0);
            CHECK(edge.k == 0.0);
            CHECK(edge.v == 0.0);
        } else {
            some_edge_carries = some_edge_carries || std::abs(edge.q) + std::abs(edge.k) + std::abs(edge.v) > 1e-6;
        }
    }
    CHECK(some_edge_carries);
}
