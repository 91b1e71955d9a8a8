// The report's sections on the weights: each head's matrices, its circuits through the
// vocabulary (top pairs, copying score, heatmaps), and composition between layers beside
// the random baseline. XHTML, pictures inlined, nothing fetched.
#include <cstdio>

#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/circuits_report.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

namespace {

std::string td(const std::string& text, bool strong = false) {
    return strong ? "<td class=\"strong\">" + text + "</td>" : "<td>" + text + "</td>";
}
std::string pair_text(const TokenPair& pair, const Vocabulary& vocab) {
    return xml_escape(char_label(vocab.at(pair.from))) + " → " + xml_escape(char_label(vocab.at(pair.to)));
}

// The largest entry of a circuit: its first top pair.
double largest(const std::vector<TokenPair>& top) { return top.empty() ? 0.0 : top.front().value; }

}  // namespace

std::string circuits_html(const Circuits& circuits, const Vocabulary& vocab, const VocabularyGroups& groups) {
    const CircuitScales scales = circuit_scales(circuits);
    std::string html;

    // 1. The weights themselves.
    html += "<h2>Head weights</h2>\n<p class=\"meta\">Each head's own slices of the attention projections, in the "
            "row-vector form x·W: W_Q^h, W_K^h, W_V^h = diag(ln1.weight)·(rows h·d … (h+1)·d−1 of q_proj, k_proj, "
            "v_proj)ᵀ, [D,d], and W_O^h = (columns h·d … (h+1)·d−1 of out_proj)ᵀ, [d,D]. The heads of a layer "
            "receive different rows of the same matrices. Red is positive, blue negative, white 0, on one scale per "
            "kind of matrix for every head.</p>\n";
    int64_t layer = -1;
    for (const HeadCircuits& head : circuits.heads) {
        if (head.weights.layer != layer) {
            html += layer < 0 ? "<div class=\"layer\">\n" : "</div>\n<div class=\"layer\">\n";
            layer = head.weights.layer;
        }
        html += "<figure>" + head_weights_svg(head, scales) + "</figure>\n";
    }
    if (layer >= 0) html += "</div>\n";

    // 2. Circuits through the vocabulary: the top pairs and the copying score, then the maps.
    html += "<h2>Circuits through the vocabulary</h2>\n<p class=\"meta\">The direct path through one head, "
            "from the weights alone. OV circuit E·W_V^h·W_O^h·U [V,V]: row a, column b = how much attending to "
            "character a raises the logit of character b. QK circuit E·W_Q^h·(E·W_K^h)ᵀ [V,V]: row a, column b = "
            "the score (before 1/√d and the softmax) query character a gives key character b. E = tok_emb.weight, "
            "U = diag(ln_f.weight)·lm_head.weightᵀ, each layer norm's weight folded into the matrices that read it "
            "(as TransformerLens's fold_ln); the layer norms' centring, 1/σ and biases, the MLPs and the other heads "
            "are left out, and so are the rotary positions: these circuits are a query and a key at distance 0. "
            "The copying score is Σλ/Σ|λ| over the OV circuit's eigenvalues: 1 = the head raises what it reads, "
            "−1 = it lowers it.</p>\n<table>\n<tr><th>head</th><th>copying score</th><th>‖W_OV‖_F</th>"
            "<th>‖W_QK‖_F</th><th>largest OV entry</th><th>largest QK entry</th></tr>\n";
    for (const HeadCircuits& head : circuits.heads)
        html += "<tr>" + td(head_label(head.weights.layer, head.weights.head)) + td(fixed(head.copying, 3)) +
                td(fixed(head.weights.W_OV().norm())) + td(fixed(head.weights.W_QK().norm())) +
                td(fixed(largest(head.ov_top))) + td(fixed(largest(head.qk_top))) + "</tr>\n";
    html += "</table>\n<div class=\"layer\">\n";
    for (const HeadCircuits& head : circuits.heads) {
        html += "<table>\n<tr><th colspan=\"4\">" + head_label(head.weights.layer, head.weights.head) +
                ": the ten largest entries</th></tr>\n<tr><th>OV: read → raised</th><th>logit</th>"
                "<th>QK: query → key</th><th>score</th></tr>\n";
        for (size_t i = 0; i < head.ov_top.size() || i < head.qk_top.size(); ++i) {
            html += "<tr>";
            html += i < head.ov_top.size() ? td(pair_text(head.ov_top[i], vocab)) + td(fixed(head.ov_top[i].value))
                                           : td("") + td("");
            html += i < head.qk_top.size() ? td(pair_text(head.qk_top[i], vocab)) + td(fixed(head.qk_top[i].value, 1))
                                           : td("") + td("");
            html += "</tr>\n";
        }
        html += "</table>\n";
    }
    html += "</div>\n";
    const int64_t V = vocab.size();
    if (circuits.heads.empty() || circuits.heads.front().drawn_whole()) {
        html += "<p class=\"meta\">" +
                std::string(groups.names.empty()
                                ? "The maps list the characters in vocabulary order (no probes, so no groups by role)."
                                : "The maps list the characters grouped by role, as the probes tell them. ") +
                (groups.names.empty() ? "" : xml_escape(vocabulary_grouping_rule())) +
                " One colour scale for all OV maps and one for all QK maps; the tables above give each map's ten "
                "largest entries.</p>\n";
    } else {  // V > kGridLimit: excerpts, not grids
        html += "<p class=\"meta\">The vocabulary has " + std::to_string(V) + " characters: a map of all " +
                std::to_string(V) + "×" + std::to_string(V) + " entries would be unreadable (maps are drawn whole up "
                "to " + std::to_string(kGridLimit) + " characters). Each map shows instead the circuit's " +
                std::to_string(kPairsDrawn) + " largest entries, found a block of rows at a time without holding the "
                "[V,V] matrix: its rows are the characters these pairs read (OV) or query (QK), its columns the "
                "characters whose logits they raise (OV) or the keys (QK), each in the order of its first pair, and "
                "every cell is the circuit's entry there (hover for the value); the list beside it ranks the pairs. "
                "One colour scale for all OV maps and one for all QK maps, ending at the largest |entry| of any "
                "head's whole circuit.</p>\n";
    }
    for (const HeadCircuits& head : circuits.heads)
        html += "<div class=\"layer\">\n<figure>" + circuit_svg(head, false, vocab, groups, scales) + "</figure>\n<figure>" +
                circuit_svg(head, true, vocab, groups, scales) + "</figure>\n</div>\n";

    // 3. Composition: how much a later head reads what an earlier one writes.
    html += "<h2>Composition between layers</h2>\n";
    if (circuits.composition.empty()) {
        html += "<p class=\"meta\">One layer: no earlier head for a later one to read.</p>\n";
    } else {
        const CompositionBaseline& b = circuits.baseline;
        html += "<p class=\"meta\">‖A·B‖_F / (‖A‖_F·‖B‖_F) with A = W_OV of the earlier head and B = W_QK (Q: its "
                "output read by the later head's queries), W_QKᵀ (K: by its keys) or W_OV (V: by its values) of the "
                "later head, as TransformerLens's composition_scores, with the layer-norm weights folded in and "
                "rotary positions left out. Beside each, how many times the random baseline it is: the same score for "
                "random Gaussian matrices of the same shapes and ranks, " +
                fixed(b.mean, 3) + " ± " + fixed(b.std, 3) + " (mean ± standard deviation over " +
                std::to_string(b.draws) + " draws, seed " + std::to_string(b.seed) +
                "). Bold: at least 3 standard deviations above it.</p>\n<table>\n<tr><th>earlier head</th><th>later "
                "head</th><th>Q</th><th>K</th><th>V</th></tr>\n";
        const auto cell = [&b](double score) {
            return td(fixed(score, 3) + " (" + fixed(score / b.mean, 2) + "×)", score >= b.mean + 3 * b.std);
        };
        for (const Composition& c : circuits.composition)
            html += "<tr>" + td(head_label(c.earlier_layer, c.earlier_head)) + td(head_label(c.later_layer, c.later_head)) +
                    cell(c.q) + cell(c.k) + cell(c.v) + "</tr>\n";
        html += "<tr>" + td("random") + td("") + td(fixed(b.mean, 3)) + td(fixed(b.mean, 3)) + td(fixed(b.mean, 3)) +
                "</tr>\n</table>\n";
    }

    html += "<h3>What the weight numbers mean</h3>\n<dl>\n";
    for (const auto& [path, sentence] : circuit_definitions())
        if (path.rfind("heads.", 0) == 0 || path.rfind("composition.", 0) == 0 || path.rfind("baseline.", 0) == 0)
            html += "<dt>" + xml_escape(path) + "</dt><dd>" + xml_escape(sentence) + "</dd>\n";
    html += "</dl>\n";
    return html;
}

}  // namespace tinyformer
