// Weight-only circuits (circuits.hpp): composition scores are TransformerLens's formula on the
// issue's matrices, with the layer norms' weights folded in; a head built to copy has copying
// score 1 and the identity pairs on top; the vocabulary groups follow the probes; and
// circuits.json defines every number it holds.
#include "catch.hpp"
#include "test_helpers.hpp"
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tinyformer/engine/rng.hpp"
#include "tinyformer/inspect/circuits.hpp"
#include "tinyformer/inspect/circuits_report.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/inspect/inspect_report.hpp"
#include "tinyformer/inspect/patching_report.hpp"

using namespace tinyformer;
using tinyformer::testing::set_parameter;
namespace fs = std::filesystem;

namespace {

const std::u32string kVocabText = U"小丁拿着红色的苹果。谁拿？阿芳蓝";


// A small random model whose layer-norm weights are far from 1, so that folding them matters.
Transformer random_model(int64_t n_layers) {
    ModelConfig config;
    config.vocab_size = Vocabulary::from_text(kVocabText).size();
    config.d_model = 16;
    config.n_heads = 2;
    config.n_layers = n_layers;
    config.context = 8;
    Transformer model(config, 5);
    Rng rng(9);
    for (int64_t l = 0; l < n_layers; ++l)
        set_parameter(model, "blocks." + std::to_string(l) + ".ln1.weight", [&](int64_t, int64_t) { return 0.2 + 1.8 * rng.uniform(); });
    set_parameter(model, "ln_f.weight", [&](int64_t, int64_t) { return 0.2 + 1.8 * rng.uniform(); });
    return model;
}

// The parameter [rows, columns] as float64, row-major.
std::vector<double> values(const Transformer& model, const std::string& name) {
    return model.parameters().get(name).to_vector();
}

// The matrices by plain loops, independently of circuits.cpp: row-major [rows][cols].
using Matrix = std::vector<std::vector<double>>;
Matrix multiply(const Matrix& a, const Matrix& b) {
    Matrix c(a.size(), std::vector<double>(b[0].size(), 0.0));
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t k = 0; k < b.size(); ++k)
            for (size_t j = 0; j < b[0].size(); ++j) c[i][j] += a[i][k] * b[k][j];
    return c;
}
Matrix transpose(const Matrix& a) {
    Matrix t(a[0].size(), std::vector<double>(a.size()));
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; j < a[0].size(); ++j) t[j][i] = a[i][j];
    return t;
}
double frobenius(const Matrix& a) {
    double sum = 0;
    for (const auto& row : a)
        for (double x : row) sum += x * x;
    return std::sqrt(sum);
}
// W_Q^h (kind "q"), W_K^h, W_V^h = diag(ln1.weight)·proj.weight[h·d:(h+1)·d, :]ᵀ  [D,d]
Matrix reading_matrix(const Transformer& model, int64_t layer, int64_t head, const std::string& kind) {
    const int64_t D = model.config().d_model, d = model.config().head_width();
    const std::string block = "blocks." + std::to_string(layer) + ".";
    const std::vector<double> ln1 = values(model, block + "ln1.weight"), proj = values(model, block + "attn." + kind + "_proj.weight");
    Matrix w(D, std::vector<double>(d));
    for (int64_t i = 0; i < D; ++i)
        for (int64_t j = 0; j < d; ++j) w[i][j] = ln1[i] * proj[(head * d + j) * D + i];
    return w;
}
// W_O^h = out_proj.weight[:, h·d:(h+1)·d]ᵀ  [d,D]
Matrix writing_matrix(const Transformer& model, int64_t layer, int64_t head) {
    const int64_t D = model.config().d_model, d = model.config().head_width();
    const std::vector<double> out = values(model, "blocks." + std::to_string(layer) + ".attn.out_proj.weight");
    Matrix w(d, std::vector<double>(D));
    for (int64_t j = 0; j < d; ++j)
        for (int64_t i = 0; i < D; ++i) w[j][i] = out[i * D + head * d + j];
    return w;
}
double direct_score(const Matrix& A, const Matrix& B) { return frobenius(multiply(A, B)) / (frobenius(A) * frobenius(B)); }

int xmllint(const std::string& document) {
    const fs::path path = fs::temp_directory_path() / ("tinyformer_test_circuits_" + std::to_string(::getpid()) + ".xml");
    std::ofstream(path, std::ios::binary) << document;
    const int status = std::system(("xmllint --noout --nonet '" + path.string() + "' 2>/dev/null").c_str());
    fs::remove(path);
    return status;
}

// Every number in `json` sits under a key path ("heads.ov_circuit.copying_score"; array
// positions left out) that `definitions` holds. Returns the first path that it does not.
std::string undefined_number(const nlohmann::json& json, const nlohmann::json& definitions, const std::string& path) {
    if (json.is_number()) return definitions.contains(path) ? "" : path;
    if (json.is_array())
        for (const auto& item : json)
            if (std::string missing = undefined_number(item, definitions, path); !missing.empty()) return missing;
    if (json.is_object())
        for (const auto& [key, item] : json.items()) {
            if (key == "definitions") continue;
            const std::string child = path.empty() ? key : path + "." + key;
            if (std::string missing = undefined_number(item, definitions, child); !missing.empty()) return missing;
        }
    return "";
}

ReportContext context_of(const Transformer& model) {
    ReportContext context;
    context.checkpoint = "runs/x/model.safetensors";
    context.step = 3;
    context.model = model.config();
    return context;
}

}  // namespace

// ---- composition ----

TEST_CASE("circuits: composition scores equal a direct float64 computation with the layer-norm weights folded in",
          "[circuits][composition]") {
    const Transformer model = random_model(3);  // three layers: pairs 0→1, 0→2 and 1→2
    const Circuits circuits = compute_circuits(model);
    const int64_t H = 2;
    REQUIRE(circuits.composition.size() == 3 * H * H);
    for (const Composition& c : circuits.composition) {
        REQUIRE(c.earlier_layer < c.later_layer);
        const Matrix A = multiply(reading_matrix(model, c.earlier_layer, c.earlier_head, "v"),
                                  writing_matrix(model, c.earlier_layer, c.earlier_head));  // W_OV^{h1} [D,D]
        const Matrix W_QK = multiply(reading_matrix(model, c.later_layer, c.later_head, "q"),
                                     transpose(reading_matrix(model, c.later_layer, c.later_head, "k")));
        const Matrix W_OV = multiply(reading_matrix(model, c.later_layer, c.later_head, "v"),
                                     writing_matrix(model, c.later_layer, c.later_head));
        CHECK(c.q == Approx(direct_score(A, W_QK)).epsilon(1e-12));
        CHECK(c.k == Approx(direct_score(A, transpose(W_QK))).epsilon(1e-12));
        CHECK(c.v == Approx(direct_score(A, W_OV)).epsilon(1e-12));
    }
    // The same numbers in circuits.json, at [earlier head][later head]: rows L0H0 L0H1 L1H0
    // L1H1, columns L1H0 L1H1 L2H0 L2H1, null where the row's layer is not earlier.
    const nlohmann::json json = circuits_json(circuits, Vocabulary::from_text(kVocabText),
                                              group_vocabulary(Vocabulary::from_text(kVocabText), {}), context_of(model));
    REQUIRE(json["composition"]["rows"] == nlohmann::json({"L0H0", "L0H1", "L1H0", "L1H1"}));
    REQUIRE(json["composition"]["columns"] == nlohmann::json({"L1H0", "L1H1", "L2H0", "L2H1"}));
    for (const Composition& c : circuits.composition) {
        const int64_t i = c.earlier_layer * H + c.earlier_head, j = (c.later_layer - 1) * H + c.later_head;
        REQUIRE(json["composition"]["q"][i][j].get<double>() == c.q);
        REQUIRE(json["composition"]["k"][i][j].get<double>() == c.k);
        REQUIRE(json["composition"]["v"][i][j].get<double>() == c.v);
    }
    REQUIRE(json["composition"]["q"][2][0].is_null());  // L1H0 → L1H0: the same layer
    REQUIRE(json["composition"]["v"][3][1].is_null());
}

TEST_CASE("circuits: composition scores do not change when an earlier head's W_O is scaled", "[circuits][composition]") {
    Transformer model = random_model(2);
    const Circuits before = compute_circuits(model);
    // Layer 0's head 0 writes 3.7 times as much, head 1 a quarter: W_O^{h1} columns of out_proj.
    const int64_t d = model.config().head_width();
    const std::vector<double> out_proj = values(model, "blocks.0.attn.out_proj.weight");
    set_parameter(model, "blocks.0.attn.out_proj.weight", [&](int64_t i, int64_t j) {
        return out_proj[i * model.config().d_model + j] * (j < d ? 3.7 : 0.25);
    });
    const Circuits after = compute_circuits(model);
    REQUIRE(after.heads[0].weights.W_OV().norm() == Approx(3.7 * before.heads[0].weights.W_OV().norm()).epsilon(1e-6));
    REQUIRE(after.composition.size() == before.composition.size());
    for (size_t i = 0; i < after.composition.size(); ++i) {
        CHECK(after.composition[i].q == Approx(before.composition[i].q).epsilon(1e-6));
        CHECK(after.composition[i].k == Approx(before.composition[i].k).epsilon(1e-6));
        CHECK(after.composition[i].v == Approx(before.composition[i].v).epsilon(1e-6));
    }
    // Changing what a head writes, not only how much, does change them.
    set_parameter(model, "blocks.0.attn.out_proj.weight", [&](int64_t i, int64_t j) {
        return out_proj[i * model.config().d_model + j] * (i % 2 ? 3.0 : 1.0);
    });
    REQUIRE(compute_circuits(model).composition[0].q != Approx(before.composition[0].q).epsilon(1e-3));
}

TEST_CASE("circuits: the random baseline is fixed by its seed and lies where random matrices put it", "[circuits][composition]") {
    const CompositionBaseline a = composition_baseline(16, 8, 100, 1), b = composition_baseline(16, 8, 100, 1);
    REQUIRE(a.mean == b.mean);
    REQUIRE(a.std == b.std);
    REQUIRE(a.draws == 100);
    REQUIRE(composition_baseline(16, 8, 100, 2).mean != a.mean);
    REQUIRE(a.mean > 0.0);
    REQUIRE(a.mean < 1.0);
    REQUIRE(a.std > 0.0);
    // One draw by hand with the same generator: A = G1·G2, B = G3·G4, drawn in that order, row by row.
    Rng rng(1);
    auto gaussian = [&rng](int64_t rows, int64_t columns) {
        Matrix g(rows, std::vector<double>(columns));
        for (auto& row : g)
            for (double& x : row) x = rng.normal();
        return g;
    };
    const Matrix G1 = gaussian(16, 8), G2 = gaussian(8, 16), G3 = gaussian(16, 8), G4 = gaussian(8, 16);
    REQUIRE(composition_baseline(16, 8, 1, 1).mean == Approx(direct_score(multiply(G1, G2), multiply(G3, G4))).epsilon(1e-12));
    // The identity: ‖I·I‖_F / (‖I‖_F·‖I‖_F) = 1/√4; a zero matrix scores 0, not NaN.
    const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(4, 4);
    REQUIRE(composition_score(I, I) == Approx(0.5));  // ‖I‖/(‖I‖‖I‖) = 1/√4
    REQUIRE(composition_score(Eigen::MatrixXd::Zero(4, 4), I) == 0.0);
}

// ---- circuits through the vocabulary ----

namespace {

// V = 5 characters, D = 12, two heads of width 6, one layer. E and lm_head put character a on
// feature a. Head 0 copies: W_V·W_O maps feature a to feature a with gain s_a = a + 1; its
// queries and keys read the same features. Head 1 (features 6..11) shifts: it writes feature
// a + 1 (mod 5) for feature a.
Transformer copying_model() {
    ModelConfig config;
    config.vocab_size = 5;
    config.d_model = 12;
    config.n_heads = 2;
    config.n_layers = 1;
    config.context = 4;
    Transformer model(config, 1);
    const auto one_hot = [](int64_t i, int64_t j) { return i == j && i < 5 ? 1.0 : 0.0; };
    set_parameter(model, "tok_emb.weight", one_hot);  // [V,D]
    set_parameter(model, "lm_head.weight", one_hot);  // [V,D]
    set_parameter(model, "blocks.0.ln1.weight", [](int64_t, int64_t) { return 0.5; });
    set_parameter(model, "ln_f.weight", [](int64_t, int64_t) { return 2.5; });
    // [out,in]: head 0's outputs are rows 0..5, head 1's rows 6..11.
    set_parameter(model, "blocks.0.attn.q_proj.weight", [](int64_t i, int64_t j) { return i < 5 && i == j ? 1.0 : 0.0; });
    set_parameter(model, "blocks.0.attn.k_proj.weight", [](int64_t i, int64_t j) { return i < 5 && i == j ? 2.0 : 0.0; });
    set_parameter(model, "blocks.0.attn.v_proj.weight", [](int64_t i, int64_t j) {
        if (i < 5 && i == j) return static_cast<double>(i + 1);  // head 0: gain a + 1
        if (i >= 6 && i < 11 && i - 6 == j) return 1.0;         // head 1: feature a → its value feature a
        return 0.0;
    });
    // [out,in]: column j reads value feature j (head 0: 0..5, head 1: 6..11).
    set_parameter(model, "blocks.0.attn.out_proj.weight", [](int64_t i, int64_t j) {
        if (j < 5 && i == j) return 1.0;                          // head 0: back to feature a
        if (j >= 6 && j < 11 && i == (j - 6 + 1) % 5) return 1.0;  // head 1: to feature a + 1
        return 0.0;
    });
    return model;
}

}  // namespace

TEST_CASE("circuits: a head built to copy has copying score 1 and the identity pairs on top", "[circuits][copying]") {
    Transformer model = copying_model();
    const Circuits circuits = compute_circuits(model);
    REQUIRE(circuits.heads.size() == 2);
    const HeadCircuits& copy = circuits.heads[0];
    // OV = E·diag(0.5)·W_V·W_O·diag(2.5)·lm_headᵀ = diag(0.5 · (a+1) · 2.5).
    for (int a = 0; a < 5; ++a)
        for (int b = 0; b < 5; ++b) REQUIRE(copy.ov(a, b) == Approx(a == b ? 1.25 * (a + 1) : 0.0).margin(1e-12));
    REQUIRE(copy.copying == Approx(1.0).margin(1e-12));
    REQUIRE(copy.ov_top.size() == 10);
    for (int i = 0; i < 5; ++i) {  // 4 → 4, 3 → 3, ... 0 → 0, then the zeros
        REQUIRE(copy.ov_top[i].from == 4 - i);
        REQUIRE(copy.ov_top[i].to == 4 - i);
        REQUIRE(copy.ov_top[i].value == Approx(1.25 * (5 - i)));
    }
    REQUIRE(copy.ov_top[5].value == Approx(0.0).margin(1e-12));
    // QK = (E·diag(0.5)·W_Q)·(E·diag(0.5)·W_K)ᵀ = 0.5 · 0.5 · 2 · I: each query prefers its own character.
    for (int a = 0; a < 5; ++a)
        for (int b = 0; b < 5; ++b) REQUIRE(copy.qk(a, b) == Approx(a == b ? 0.5 : 0.0).margin(1e-12));
    for (int i = 0; i < 5; ++i) REQUIRE(copy.qk_top[i].from == copy.qk_top[i].to);

    // The shifting head: a permutation (a 5-cycle), whose eigenvalues are the fifth roots of
    // unity, summing to 0; its top pairs are a → a + 1, the row read before the column raised.
    const HeadCircuits& shift = circuits.heads[1];
    REQUIRE(shift.copying == Approx(0.0).margin(1e-9));
    for (int i = 0; i < 5; ++i) {
        REQUIRE(shift.ov_top[i].from == i);
        REQUIRE(shift.ov_top[i].to == (i + 1) % 5);
        REQUIRE(shift.ov_top[i].value == Approx(1.25));
    }

    // The same head writing the opposite sign suppresses what it reads: −1.
    const std::vector<double> out_proj = values(model, "blocks.0.attn.out_proj.weight");
    set_parameter(model, "blocks.0.attn.out_proj.weight", [&](int64_t i, int64_t j) { return (j < 6 ? -1 : 1) * out_proj[i * 12 + j]; });
    REQUIRE(compute_circuits(model).heads[0].copying == Approx(-1.0).margin(1e-12));
    // And in circuits.json, with the characters: 丁 → 丁 first for a vocabulary 小丁拿着红.
    const Vocabulary vocab(std::vector<char32_t>{U'小', U'丁', U'拿', U'着', U'红'});
    const nlohmann::json json = circuits_json(circuits, vocab, group_vocabulary(vocab, {}), context_of(model));
    REQUIRE(json["heads"][0]["ov_circuit"]["copying_score"].get<double>() == Approx(1.0));
    REQUIRE(json["heads"][0]["ov_circuit"]["top_pairs"][0]["from"] == "红");
    REQUIRE(json["heads"][0]["ov_circuit"]["top_pairs"][0]["to"] == "红");
    REQUIRE(json["heads"][1]["ov_circuit"]["top_pairs"][0]["from"] == "小");
    REQUIRE(json["heads"][1]["ov_circuit"]["top_pairs"][0]["to"] == "丁");
}

// ---- the copying score from [d,d] ----

// The eigenvalues of a product do not depend on where the cycle starts: E·W_V·W_O·U [V,V] and
// (W_O·U)·(E·W_V) [d,d] share every nonzero one (Elhage et al. 2021; TransformerLens's
// FactoredMatrix.eigenvalues), and the zero ones add nothing to Σλ or Σ|λ|.
TEST_CASE("circuits: the copying score from the [d,d] product equals the [V,V] eigenvalues, a wrong product's does not",
          "[circuits][copying]") {
    const Transformer model = random_model(2);  // V = 16 > d = 8: the [V,V] circuit has 8 zero eigenvalues
    const Eigen::MatrixXd E = embedding_matrix(model), U = unembedding_matrix(model);
    const Circuits circuits = compute_circuits(model);
    REQUIRE(circuits.heads.size() == 4);
    for (const HeadCircuits& head : circuits.heads) {
        const HeadWeights& w = head.weights;
        const double full = copying_score(ov_circuit(E, w, U));  // eigenvalues of [V,V]
        const Eigen::MatrixXd turned = ov_factors(E, w, U).turned();
        REQUIRE(turned.rows() == model.config().head_width());
        REQUIRE(turned.cols() == model.config().head_width());
        CHECK(copying_score(turned) == Approx(full).margin(1e-9));
        CHECK(head.copying == Approx(full).margin(1e-9));
        // Products that are not a rotation of the cycle: W_OV alone (E and U forgotten) and
        // W_OV·Eᵀ·Uᵀ (the embeddings in the wrong order). Their scores are other numbers.
        const Eigen::MatrixXd forgotten = w.W_O * w.W_V;                                  // [d,d]
        const Eigen::MatrixXd misordered = w.W_OV() * E.transpose() * U.transpose();      // [D,D]
        CHECK(std::abs(copying_score(forgotten) - full) > 1e-3);
        CHECK(std::abs(copying_score(misordered) - full) > 1e-3);
    }
    // Every rotation of the cycle gives the same score: U·E·W_V·W_O [D,D] too.
    const HeadWeights& w = circuits.heads[3].weights;
    CHECK(copying_score(U * E * w.W_OV()) == Approx(circuits.heads[3].copying).margin(1e-9));
}

// ---- large vocabularies: top pairs a block of rows at a time ----

namespace {

// V characters: CJK ideographs from U+4E00, the last 50 from CJK extension B (U+20000 on,
// four bytes in UTF-8), so that labels of every length are drawn.
Vocabulary large_vocabulary(int64_t V) {
    std::vector<char32_t> chars;
    for (int64_t i = 0; i < V - 50; ++i) chars.push_back(static_cast<char32_t>(0x4E00 + i));
    for (int64_t i = 0; i < 50; ++i) chars.push_back(static_cast<char32_t>(0x20000 + i));
    return Vocabulary(chars);
}

// One layer, two heads of width 8, a vocabulary of V; its weights as initialised.
Transformer large_model(int64_t V) {
    ModelConfig config;
    config.vocab_size = V;
    config.d_model = 16;
    config.n_heads = 2;
    config.n_layers = 1;
    config.context = 8;
    return Transformer(config, 3);
}

}  // namespace

TEST_CASE("circuits: top pairs found block by block equal the whole circuit's, whatever the block", "[circuits][large]") {
    const Transformer model = random_model(1);
    const Eigen::MatrixXd E = embedding_matrix(model), U = unembedding_matrix(model);
    const HeadWeights w = head_weights(model, 0, 1);
    for (const bool qk : {false, true}) {
        const FactoredCircuit factors = qk ? qk_factors(E, w) : ov_factors(E, w, U);
        const Eigen::MatrixXd whole = qk ? qk_circuit(E, w) : ov_circuit(E, w, U);  // [V,V]
        REQUIRE(factors.product().isApprox(whole, 1e-12));
        const std::vector<TokenPair> expected = top_pairs(whole, 30);
        for (const int64_t block_rows : {1, 5, 7, 16, 100}) {  // 16 = V; 7 leaves a last block of 2
            INFO("qk " << qk << ", blocks of " << block_rows << " rows");
            const CircuitExtremes found = top_pairs_by_blocks(factors, 30, block_rows);
            REQUIRE(found.top.size() == 30);
            for (size_t k = 0; k < 30; ++k) {
                REQUIRE(found.top[k].from == expected[k].from);
                REQUIRE(found.top[k].to == expected[k].to);
                REQUIRE(found.top[k].value == Approx(expected[k].value).epsilon(1e-12));
            }
            REQUIRE(found.largest_abs == Approx(whole.cwiseAbs().maxCoeff()).epsilon(1e-12));
        }
    }
    // Ties go to the lower row, then the lower column, as top_pairs orders them.
    FactoredCircuit ties{Eigen::MatrixXd::Ones(4, 1), Eigen::MatrixXd::Ones(1, 4)};  // every entry 1
    const std::vector<TokenPair> tied = top_pairs_by_blocks(ties, 3, 3).top;
    REQUIRE(tied.size() == 3);
    REQUIRE((tied[0].from == 0 && tied[0].to == 0 && tied[1].from == 0 && tied[1].to == 1 && tied[2].to == 2));
    // Asking for more pairs than there are cells gives them all; for none, none.
    REQUIRE(top_pairs_by_blocks(ties, 100, 3).top.size() == 16);
    REQUIRE(top_pairs_by_blocks(ties, 0, 3).top.empty());
}

TEST_CASE("circuits: a 3,000-character vocabulary keeps no [V,V] matrix, and its top pairs and excerpt are the whole "
          "circuit's",
          "[circuits][large]") {
    const int64_t V = 3000;
    const Transformer model = large_model(V);
    const Circuits circuits = compute_circuits(model);
    const Eigen::MatrixXd E = embedding_matrix(model), U = unembedding_matrix(model);
    REQUIRE(circuits.heads.size() == 2);
    for (const HeadCircuits& head : circuits.heads) {
        REQUIRE(!head.drawn_whole());
        REQUIRE(head.ov.size() == 0);
        REQUIRE(head.qk.size() == 0);
        for (const bool qk : {false, true}) {
            INFO("head " << head.weights.head << ", qk " << qk);
            const Eigen::MatrixXd whole = qk ? qk_circuit(E, head.weights) : ov_circuit(E, head.weights, U);  // [V,V], here only
            const std::vector<TokenPair> expected = top_pairs(whole, kPairsDrawn);
            const std::vector<TokenPair>& top = qk ? head.qk_top : head.ov_top;
            const CircuitExcerpt& excerpt = qk ? head.qk_excerpt : head.ov_excerpt;
            REQUIRE(static_cast<int64_t>(top.size()) == kTopPairs);
            REQUIRE(static_cast<int64_t>(excerpt.pairs.size()) == kPairsDrawn);
            for (int64_t k = 0; k < kPairsDrawn; ++k) {
                REQUIRE(excerpt.pairs[k].from == expected[k].from);
                REQUIRE(excerpt.pairs[k].to == expected[k].to);
                REQUIRE(excerpt.pairs[k].value == Approx(expected[k].value).epsilon(1e-12));
                if (k < kTopPairs) REQUIRE((top[k].from == expected[k].from && top[k].to == expected[k].to));
            }
            REQUIRE((qk ? head.qk_largest_abs : head.ov_largest_abs) == Approx(whole.cwiseAbs().maxCoeff()).epsilon(1e-12));
            // The excerpt's grid: the circuit's own entries on its rows and columns, every
            // pair's row and column among them.
            REQUIRE(excerpt.values.rows() == static_cast<Eigen::Index>(excerpt.rows.size()));
            REQUIRE(excerpt.values.cols() == static_cast<Eigen::Index>(excerpt.columns.size()));
            for (size_t i = 0; i < excerpt.rows.size(); ++i)
                for (size_t j = 0; j < excerpt.columns.size(); ++j)
                    REQUIRE(excerpt.values(i, j) == Approx(whole(excerpt.rows[i], excerpt.columns[j])).epsilon(1e-12));
            REQUIRE(excerpt.rows.front() == expected[0].from);
            REQUIRE(excerpt.columns.front() == expected[0].to);
        }
    }
}

TEST_CASE("circuits: the copying score of a vocabulary above the grid limit equals its [V,V] eigenvalues'",
          "[circuits][large][copying]") {
    const Transformer model = large_model(kGridLimit + 100);  // [356,356]: an eigenproblem still quick here
    const Eigen::MatrixXd E = embedding_matrix(model), U = unembedding_matrix(model);
    for (const HeadCircuits& head : compute_circuits(model).heads) {
        REQUIRE(!head.drawn_whole());
        REQUIRE(head.copying == Approx(copying_score(ov_circuit(E, head.weights, U))).margin(1e-9));
    }
}

TEST_CASE("circuits: a large vocabulary's pictures, report and circuits.json show top pairs, its characters whole",
          "[circuits][large][svg][html][json]") {
    const int64_t V = 3000;
    Transformer model = large_model(V);
    // The last character (U+20031, four bytes of UTF-8) embedded ten times as large: its row
    // leads both circuits, so that the pictures must draw it.
    const std::vector<double> embedding = values(model, "tok_emb.weight");
    set_parameter(model, "tok_emb.weight", [&](int64_t i, int64_t j) { return embedding[i * 16 + j] * (i == V - 1 ? 10 : 1); });
    const Vocabulary vocab = large_vocabulary(V);
    REQUIRE(encode_utf8(vocab.at(V - 1)) == "\xF0\xA0\x80\xB1");  // U+20031
    const Circuits circuits = compute_circuits(model);
    const VocabularyGroups groups = group_vocabulary(vocab, {});
    const CircuitScales scales = circuit_scales(circuits);
    REQUIRE(scales.ov == std::max(circuits.heads[0].ov_largest_abs, circuits.heads[1].ov_largest_abs));
    for (const bool qk : {false, true}) {
        const HeadCircuits& head = circuits.heads[1];
        const std::string svg = circuit_svg(head, qk, vocab, groups, scales);
        REQUIRE(xmllint(svg) == 0);
        REQUIRE(svg.size() < 200'000);  // a grid of 9,000,000 cells would be megabytes
        REQUIRE_THAT(svg, ContainsSubstring("its 24 largest entries") && ContainsSubstring("V = 3,000: 9,000,000 entries"));
        // Every pair in the list, its characters whole (three or four bytes of UTF-8 each).
        const CircuitExcerpt& excerpt = qk ? head.qk_excerpt : head.ov_excerpt;
        for (const TokenPair& pair : excerpt.pairs)
            REQUIRE_THAT(svg, ContainsSubstring(">" + encode_utf8(vocab.at(pair.from)) + " → " + encode_utf8(vocab.at(pair.to)) + "<"));
        // Each row and column of the excerpt labelled with its character, a tooltip per cell.
        for (int32_t id : excerpt.rows) REQUIRE_THAT(svg, ContainsSubstring(">" + encode_utf8(vocab.at(id)) + "</text>"));
        size_t tooltips = 0;
        for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) ++tooltips;
        REQUIRE(tooltips == excerpt.rows.size() * excerpt.columns.size());
    }
    REQUIRE(circuits.heads[1].ov_excerpt.rows.front() == V - 1);
    REQUIRE(circuits.heads[1].qk_excerpt.rows.front() == V - 1);

    const std::string html = circuits_html(circuits, vocab, groups);
    REQUIRE(xmllint("<div>" + html + "</div>") == 0);
    REQUIRE_THAT(html, ContainsSubstring("The vocabulary has 3000 characters") && ContainsSubstring("24 largest entries"));
    REQUIRE(html.size() < 1'000'000);

    const nlohmann::json json = circuits_json(circuits, vocab, groups, context_of(model));
    REQUIRE(json["circuit_view"]["drawn"] == "top_pairs");
    REQUIRE(json["circuit_view"]["pairs_drawn"] == kPairsDrawn);
    REQUIRE(json["heads"][1]["ov_circuit"]["top_pairs"].size() == 10);
    REQUIRE(json["heads"][1]["ov_circuit"]["largest_abs_value"].get<double>() == circuits.heads[1].ov_largest_abs);
    REQUIRE(undefined_number(json, json["definitions"], "").empty());
    // A small vocabulary: the grids, said so.
    const Transformer small = random_model(1);
    const Vocabulary small_vocab = Vocabulary::from_text(kVocabText);
    const nlohmann::json small_json =
        circuits_json(compute_circuits(small), small_vocab, group_vocabulary(small_vocab, {}), context_of(small));
    REQUIRE(small_json["circuit_view"]["drawn"] == "grid");
    REQUIRE(small_json["circuit_view"]["pairs_drawn"] == 0);
}

// ---- the vocabulary by role ----

TEST_CASE("circuits: the probes group the vocabulary into names, colours, verbs, objects and punctuation", "[circuits][groups]") {
    const Vocabulary vocab = Vocabulary::from_text(U"小丁拿着红色的苹果。谁？阿芳画了蓝是什么颜\n");
    const std::vector<Probe> probes = {
        {U"小丁拿着红色的苹果。谁拿着苹果？", U"小丁", "who"},
        {U"小丁拿着红色的苹果。谁拿着苹果？小丁。苹果是什么颜色？", U"红色", "colour"},
        {U"阿芳画了蓝色的苹果。谁画了苹果？", U"阿芳", "who"},
    };
    const VocabularyGroups groups = group_vocabulary(vocab, probes);
    REQUIRE(groups.names == std::vector<std::string>{"names", "colours", "verbs", "objects", "punctuation", "other"});
    const auto group = [&](char32_t c) { return groups.names[groups.group_of[vocab.id(c)]]; };
    for (char32_t c : std::u32string(U"小丁阿芳")) REQUIRE(group(c) == "names");
    for (char32_t c : std::u32string(U"红色")) REQUIRE(group(c) == "colours");
    for (char32_t c : std::u32string(U"拿着")) REQUIRE(group(c) == "verbs");
    for (char32_t c : std::u32string(U"苹果")) REQUIRE(group(c) == "objects");
    for (char32_t c : std::u32string(U"。？\n")) REQUIRE(group(c) == "punctuation");
    // 蓝 answers no probe; 画了 stand in a story with no colour probe; 的 is not repeated by a question.
    for (char32_t c : std::u32string(U"蓝画了的谁是什么颜")) REQUIRE(group(c) == "other");
    // The order: every id once, group by group.
    REQUIRE(static_cast<int64_t>(groups.order.size()) == vocab.size());
    for (size_t i = 1; i < groups.order.size(); ++i)
        REQUIRE(groups.group_of[groups.order[i - 1]] <= groups.group_of[groups.order[i]]);

    const VocabularyGroups none = group_vocabulary(vocab, {});
    REQUIRE(none.names.empty());
    for (int32_t id = 0; id < vocab.size(); ++id) REQUIRE(none.order[id] == id);
}

// ---- files ----

TEST_CASE("circuits.json defines every number it holds and works without probes", "[circuits][json]") {
    const Transformer model = random_model(2);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const Circuits circuits = compute_circuits(model);
    const nlohmann::json json = circuits_json(circuits, vocab, group_vocabulary(vocab, {}), context_of(model));
    REQUIRE(undefined_number(json, json["definitions"], "").empty());
    REQUIRE(json["definitions"].size() == circuit_definitions().size());
    REQUIRE(json["vocabulary"]["groups"].is_null());
    REQUIRE(json["heads"].size() == 4);
    REQUIRE(json["heads"][3]["name"] == "L1H1");
    REQUIRE(json["heads"][3]["ov_circuit"]["top_pairs"].size() == 10);
    REQUIRE(json["heads"][2]["frobenius_norm"]["W_OV"].get<double>() ==
            Approx(circuits.heads[2].weights.W_OV().norm()));
    REQUIRE(json["composition"]["q"].size() == 2);
    REQUIRE(json["baseline"]["q"].get<double>() == circuits.baseline.mean);
    REQUIRE(json["baseline"]["draws"] == 100);
    REQUIRE_THAT(json["notes"].dump(), ContainsSubstring("rotary"));
    // The checker itself finds a number nobody defined.
    nlohmann::json extra = json;
    extra["heads"][0]["ov_circuit"]["mystery"] = 1.5;
    REQUIRE(undefined_number(extra, extra["definitions"], "") == "heads.ov_circuit.mystery");
}

TEST_CASE("the weight and circuit pictures and the report's sections are well-formed", "[circuits][svg][html]") {
    const Transformer model = random_model(2);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const std::vector<Probe> probes = {{U"小丁拿着红色的苹果。谁拿着苹果？", U"小丁", "who"},
                                       {U"小丁拿着红色的苹果。谁拿着苹果？小丁。苹果？", U"红色", "colour"}};
    const Circuits circuits = compute_circuits(model);
    const VocabularyGroups groups = group_vocabulary(vocab, probes);
    const CircuitScales scales = circuit_scales(circuits);
    const std::string weights = head_weights_svg(circuits.heads[1], scales);
    REQUIRE(xmllint(weights) == 0);
    REQUIRE_THAT(weights, ContainsSubstring("L0H1 W_Q [16,8]") && ContainsSubstring("L0H1 W_O [8,16]"));
    const std::string ov = circuit_svg(circuits.heads[2], false, vocab, groups, scales);
    REQUIRE(xmllint(ov) == 0);
    REQUIRE_THAT(ov, ContainsSubstring(">names<") && ContainsSubstring(">colours<") &&
                         ContainsSubstring("href=\"data:image/png;base64,"));  // the cells: one PNG (test_png.cpp)
    REQUIRE(xmllint(circuit_svg(circuits.heads[3], true, vocab, group_vocabulary(vocab, {}), scales)) == 0);
    // One scale per kind: the largest |W_Q| of any head is the scale's end.
    REQUIRE(signed_colour(scales.W_Q, scales.W_Q) == "#67001f");
    REQUIRE(signed_colour(-scales.W_Q, scales.W_Q) == "#053061");
    REQUIRE(signed_colour(0.0, scales.W_Q) == "#f7f7f7");

    const std::string sections = circuits_html(circuits, vocab, groups);
    AttentionMaps maps;
    maps.text = U"小丁";
    maps.layers = 2;
    maps.heads = 2;
    maps.weights.clear();
    for (int64_t m = 0; m < 4; ++m) maps.weights.insert(maps.weights.end(), {1.0f, 0.0f, 0.5f, 0.5f});  // [2,2] per head
    ReportContext context = context_of(model);
    context.maps_source = "--text";
    const std::string html = report_html(maps, InspectResult{}, context, sections);
    REQUIRE(xmllint(html) == 0);
    REQUIRE_THAT(html, ContainsSubstring("<h2>Head weights</h2>") && ContainsSubstring("<h2>Circuits through the vocabulary</h2>") &&
                           ContainsSubstring("<h2>Composition between layers</h2>"));
    REQUIRE_THAT(html, ContainsSubstring("rotary positions") && ContainsSubstring("copying score"));
    // Nothing fetched: no script, and every href is a picture embedded as a data: URI (the cells).
    REQUIRE_THAT(html, !ContainsSubstring("<script") && !ContainsSubstring("src="));
    for (size_t at = html.find("href="); at != std::string::npos; at = html.find("href=", at + 1))
        REQUIRE(html.compare(at, 11, "href=\"data:") == 0);
}

TEST_CASE("circuits.json defines every patching number, and without probes its patching is null and says --probes",
          "[circuits][json][patching]") {
    const Transformer model = random_model(2);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const std::vector<Probe> probes = {{U"小丁拿。谁拿？", U"小丁", "who"}, {U"阿芳拿。谁拿？", U"阿芳", "who"}};  // ≤ context 8
    const Circuits circuits = compute_circuits(model);
    const Patching patching = activation_patching(model, vocab, probes);
    nlohmann::json json = circuits_json(circuits, vocab, group_vocabulary(vocab, probes), context_of(model));
    add_patching_json(json, &patching, vocab, probes, {"a finding"}, 2, 2);
    REQUIRE(undefined_number(json, json["definitions"], "").empty());
    REQUIRE(json["patching"]["kinds"].size() == 1);
    REQUIRE(json["patching"]["kinds"][0]["kind"] == "who");
    REQUIRE(json["patching"]["kinds"][0]["recovered_every_position"].size() == 4);
    REQUIRE(json["patching"]["kinds"][0]["paths"].size() == 4);
    REQUIRE(json["patching"]["kinds"][0]["example"]["corrupted_prompt"] == "阿芳拿。谁拿？");
    // Every patching definition names a key that is there.
    for (const auto& [path, sentence] : patching_definitions()) {
        nlohmann::json at = json;
        for (size_t start = 0; start <= path.size();) {
            const size_t dot = std::min(path.find('.', start), path.size());
            if (at.is_array()) at = at.at(0);
            INFO(path);
            REQUIRE(at.contains(path.substr(start, dot - start)));
            at = at[path.substr(start, dot - start)];
            start = dot + 1;
        }
    }
    nlohmann::json without = circuits_json(circuits, vocab, group_vocabulary(vocab, {}), context_of(model));
    add_patching_json(without, nullptr, vocab, {}, {}, 2, 2);
    REQUIRE(without["patching"].is_null());
    REQUIRE_THAT(without["notes"].dump(), ContainsSubstring("--probes"));
    REQUIRE(undefined_number(without, without["definitions"], "").empty());
}
