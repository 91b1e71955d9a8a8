// circuits.json: the weight-only measurements, for a program. Every number's key has a
// one-line definition under "definitions", by its path (array positions left out), as
// heads.json defines its measures. Later measurements (activation patching, the roles during
// training) get keys of their own beside "heads" and "composition", and definitions with them.
#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/circuits_report.hpp"

namespace tinyformer {

const std::vector<std::pair<std::string, std::string>>& circuit_definitions() {
    static const std::vector<std::pair<std::string, std::string>> definitions = {
        {"step", "The optimizer step the checkpoint's weights belong to."},
        {"model.d_model", "D: the width of the residual stream."},
        {"model.n_heads", "H: attention heads per layer."},
        {"model.head_width", "d = D/H: the width of one head."},
        {"model.n_layers", "L: transformer blocks."},
        {"model.vocab_size", "V: characters in the vocabulary."},
        {"circuit_view.grid_limit", "The largest vocabulary whose OV and QK circuits are drawn as whole [V,V] grids."},
        {"circuit_view.pairs_drawn", "How many of each circuit's largest entries a picture shows when the vocabulary is larger than grid_limit; 0 when the grids are drawn."},
        {"heads.layer", "The head's layer, from 0."},
        {"heads.head", "The head's index within its layer, from 0."},
        {"heads.frobenius_norm.W_Q", "Frobenius norm (root of the sum of squares) of W_Q^h = diag(ln1.weight)·q_proj.weight[h·d:(h+1)·d, :]ᵀ, [D,d]."},
        {"heads.frobenius_norm.W_K", "Frobenius norm of W_K^h = diag(ln1.weight)·k_proj.weight[h·d:(h+1)·d, :]ᵀ, [D,d]."},
        {"heads.frobenius_norm.W_V", "Frobenius norm of W_V^h = diag(ln1.weight)·v_proj.weight[h·d:(h+1)·d, :]ᵀ, [D,d]."},
        {"heads.frobenius_norm.W_O", "Frobenius norm of W_O^h = out_proj.weight[:, h·d:(h+1)·d]ᵀ, [d,D]."},
        {"heads.frobenius_norm.W_OV", "Frobenius norm of W_OV^h = W_V^h·W_O^h, [D,D]: what the head writes for what it reads."},
        {"heads.frobenius_norm.W_QK", "Frobenius norm of W_QK^h = W_Q^h·W_K^hᵀ, [D,D]: how a query vector scores a key vector."},
        {"heads.ov_circuit.copying_score", "Σλ/Σ|λ| over the eigenvalues λ of the OV circuit E·W_V^h·W_O^h·U [V,V] (float64, Eigen's EigenSolver): 1 = every eigenvalue positive, the head raises the logit of the character it reads (copying); −1 = it lowers it; near 0 = neither."},
        {"heads.ov_circuit.largest_abs_value", "The largest |entry| of the OV circuit [V,V], in logits per unit of attention."},
        {"heads.ov_circuit.top_pairs.value", "OV circuit entry [a,b] = E_a·W_V^h·W_O^h·U_b: how much attending fully to character a (from) raises the logit of character b (to) through this head alone (ln_f's weight folded in, its centring and 1/σ left out); the 10 largest."},
        {"heads.ov_circuit.top_pairs.from_id", "The id of character a (the one read), its row in the circuit."},
        {"heads.ov_circuit.top_pairs.to_id", "The id of character b (the logit raised), its column."},
        {"heads.qk_circuit.largest_abs_value", "The largest |entry| of the QK circuit [V,V]."},
        {"heads.qk_circuit.top_pairs.value", "QK circuit entry [a,b] = (E_a·W_Q^h)·(E_b·W_K^h)ᵀ: the attention score (before the 1/√d scaling and the softmax) that query character a gives key character b, with both at the same position (rotary left out) and the layer norms' centring and 1/σ left out; the 10 largest."},
        {"heads.qk_circuit.top_pairs.from_id", "The id of the query character a, its row in the circuit."},
        {"heads.qk_circuit.top_pairs.to_id", "The id of the key character b, its column."},
        {"composition.q", "Q-composition of earlier head h1 (row) into later head h2 (column): ‖W_OV^{h1}·W_QK^{h2}‖_F / (‖W_OV^{h1}‖_F·‖W_QK^{h2}‖_F), as TransformerLens's composition_scores: how much of what h1 writes h2's queries read. null where the row's layer is not before the column's."},
        {"composition.k", "K-composition: the same with (W_QK^{h2})ᵀ, how much of what h1 writes h2's keys read."},
        {"composition.v", "V-composition: the same with W_OV^{h2}, how much of what h1 writes h2's values read."},
        {"baseline.q", "The composition score of random matrices of the heads' shapes and ranks (A = G1·G2, B = G3·G4, G1, G3 [D,d] and G2, G4 [d,D] standard Gaussians), mean over the draws: what chance gives. The same draws serve q, k and v, whose matrices have the same shapes."},
        {"baseline.k", "The same random baseline, for K-composition."},
        {"baseline.v", "The same random baseline, for V-composition."},
        {"baseline.std", "The standard deviation of the random score over the draws (n − 1)."},
        {"baseline.draws", "How many random pairs (A, B) the baseline averages."},
        {"baseline.seed", "The seed of tinyformer's random generator (xoshiro256**, Box–Muller normals) for the draws."},
    };
    return definitions;
}

namespace {

nlohmann::json pairs_json(const std::vector<TokenPair>& pairs, const Vocabulary& vocab) {
    nlohmann::json out = nlohmann::json::array();
    for (const TokenPair& pair : pairs)
        out.push_back({{"from", encode_utf8(vocab.at(pair.from))},
                       {"to", encode_utf8(vocab.at(pair.to))},
                       {"from_id", pair.from},
                       {"to_id", pair.to},
                       {"value", pair.value}});
    return out;
}

}  // namespace

nlohmann::json circuits_json(const Circuits& circuits, const Vocabulary& vocab, const VocabularyGroups& groups,
                             const ReportContext& context) {
    const ModelConfig& model = context.model;
    nlohmann::json out;
    out["format"] = "tinyformer circuits/1";
    out["checkpoint"] = context.checkpoint;
    out["step"] = context.step;
    out["model"] = {{"d_model", model.d_model},     {"n_heads", model.n_heads},
                    {"head_width", model.head_width()}, {"n_layers", model.n_layers},
                    {"vocab_size", model.vocab_size}, {"positions", model.positions}};
    out["conventions"] = {
        {"form", "row vectors: a residual vector x [D] is read as x·W"},
        {"W_Q", "W_Q^h = diag(blocks.<l>.ln1.weight)·q_proj.weight[h·d:(h+1)·d, :]ᵀ [D,d] (likewise W_K, W_V)"},
        {"W_O", "W_O^h = out_proj.weight[:, h·d:(h+1)·d]ᵀ [d,D]"},
        {"E", "E = tok_emb.weight [V,D]"},
        {"U", "U = diag(ln_f.weight)·lm_head.weightᵀ [D,V]"},
        {"left_out", "each layer norm's weight is folded into the matrices that read its output (TransformerLens fold_ln); "
                     "its bias, centring and 1/σ, the MLPs and rotary positions are left out: a weight-only circuit is a "
                     "query and a key at distance 0"},
        {"precision", "float64 from the checkpoint's float32 weights"},
        {"copying_score", "the eigenvalues of the OV circuit E·W_V·W_O·U [V,V] that are not 0 are those of "
                          "(W_O·U)·(E·W_V) [d,d] (AB and BA share them, as TransformerLens's FactoredMatrix uses): "
                          "the score is computed from that [d,d] matrix"}};
    // Which pictures of the circuits were drawn: whole grids, or the largest entries (circuits.hpp).
    const bool whole = circuits.heads.empty() || circuits.heads.front().drawn_whole();
    out["circuit_view"] = {
        {"drawn", whole ? "grid" : "top_pairs"},
        {"grid_limit", kGridLimit},
        {"pairs_drawn", whole ? 0 : kPairsDrawn},
        {"rule", "a vocabulary of at most grid_limit characters: L<l>H<h>_ov.svg and _qk.svg draw the whole [V,V] "
                 "circuits (\"grid\"); a larger one: its pairs_drawn largest entries on the rows and columns of "
                 "the characters they involve, beside a ranked list (\"top_pairs\"), found a block of rows at a "
                 "time without the [V,V] matrix"}};
    out["notes"] = nlohmann::json::array();
    if (model.positions == "rope")
        out["notes"].push_back("rotary positions are left out of the QK circuits and composition scores (distance 0)");
    if (model.positions == "learned")
        out["notes"].push_back("the learned position embedding is left out: E is the token embedding alone");
    if (model.n_layers < 2) out["notes"].push_back("one layer: no pair of layers, so no composition scores");
    for (const auto& [path, sentence] : circuit_definitions()) out["definitions"][path] = sentence;

    // The vocabulary and its groups (the heatmaps' order).
    nlohmann::json characters = nlohmann::json::array(), order = nlohmann::json::array();
    for (char32_t c : vocab.chars()) characters.push_back(encode_utf8(c));
    for (int32_t id : groups.order) order.push_back(encode_utf8(vocab.at(id)));
    out["vocabulary"] = {{"characters", characters}, {"heatmap_order", order},
                         {"grouping_rule", vocabulary_grouping_rule()}};
    if (groups.names.empty()) {
        out["vocabulary"]["groups"] = nullptr;
    } else {
        for (const std::string& name : groups.names) out["vocabulary"]["groups"][name] = nlohmann::json::array();
        for (int32_t id : groups.order)
            out["vocabulary"]["groups"][groups.names[static_cast<size_t>(groups.group_of[static_cast<size_t>(id)])]]
                .push_back(encode_utf8(vocab.at(id)));
    }

    out["heads"] = nlohmann::json::array();
    for (const HeadCircuits& head : circuits.heads) {
        const HeadWeights& w = head.weights;
        out["heads"].push_back(
            {{"name", head_label(w.layer, w.head)},
             {"layer", w.layer},
             {"head", w.head},
             {"frobenius_norm",
              {{"W_Q", w.W_Q.norm()}, {"W_K", w.W_K.norm()}, {"W_V", w.W_V.norm()}, {"W_O", w.W_O.norm()},
               {"W_OV", w.W_OV().norm()}, {"W_QK", w.W_QK().norm()}}},
             {"ov_circuit",
              {{"copying_score", head.copying},
               {"largest_abs_value", head.ov_largest_abs},
               {"top_pairs", pairs_json(head.ov_top, vocab)}}},
             {"qk_circuit",
              {{"largest_abs_value", head.qk_largest_abs}, {"top_pairs", pairs_json(head.qk_top, vocab)}}}});
    }

    // Composition: one matrix per kind, rows = every head that has a later layer, columns =
    // every head that has an earlier one; null where the row's layer is not before the column's.
    const int64_t L = model.n_layers, H = model.n_heads;
    nlohmann::json rows = nlohmann::json::array(), columns = nlohmann::json::array();
    for (int64_t l = 0; l + 1 < L; ++l)
        for (int64_t h = 0; h < H; ++h) rows.push_back(head_label(l, h));
    for (int64_t l = 1; l < L; ++l)
        for (int64_t h = 0; h < H; ++h) columns.push_back(head_label(l, h));
    nlohmann::json composition = {{"index_order", "q[i][j] (likewise k, v): i = the earlier-layer head rows[i], j = "
                                                  "the later-layer head columns[j]; null where rows[i]'s layer is not "
                                                  "before columns[j]'s"},
                                  {"rows", rows},
                                  {"columns", columns}};
    for (const char* kind : {"q", "k", "v"}) {
        nlohmann::json grid = nlohmann::json::array();
        for (int64_t i = 0; i < (L - 1) * H; ++i) grid.push_back(nlohmann::json::array());
        for (int64_t i = 0; i < (L - 1) * H; ++i)
            for (int64_t j = 0; j < (L - 1) * H; ++j) grid[i].push_back(nullptr);
        composition[kind] = grid;
    }
    for (const Composition& c : circuits.composition) {
        const int64_t i = c.earlier_layer * H + c.earlier_head, j = (c.later_layer - 1) * H + c.later_head;
        composition["q"][i][j] = c.q;
        composition["k"][i][j] = c.k;
        composition["v"][i][j] = c.v;
    }
    out["composition"] = composition;
    const CompositionBaseline& b = circuits.baseline;
    out["baseline"] = {{"q", b.mean}, {"k", b.mean}, {"v", b.mean}, {"std", b.std}, {"draws", b.draws}, {"seed", b.seed}};
    return out;
}

}  // namespace tinyformer
