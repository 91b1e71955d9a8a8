// The weight-only measurements as pictures: a head's four matrices, and its OV and QK
// circuits over the vocabulary. Every picture of one kind shares one symmetric colour scale.
#include <algorithm>
#include <cstdio>

#include "tinyformer/inspect/circuits_report.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

std::string head_label(int64_t layer, int64_t head) { return "L" + std::to_string(layer) + "H" + std::to_string(head); }

CircuitScales circuit_scales(const Circuits& circuits) {
    CircuitScales s;
    for (const HeadCircuits& head : circuits.heads) {
        const HeadWeights& w = head.weights;
        s.W_Q = std::max(s.W_Q, w.W_Q.cwiseAbs().maxCoeff());
        s.W_K = std::max(s.W_K, w.W_K.cwiseAbs().maxCoeff());
        s.W_V = std::max(s.W_V, w.W_V.cwiseAbs().maxCoeff());
        s.W_O = std::max(s.W_O, w.W_O.cwiseAbs().maxCoeff());
        s.ov = std::max(s.ov, head.ov_largest_abs);
        s.qk = std::max(s.qk, head.qk_largest_abs);
    }
    return s;
}

namespace {


// A matrix's values, row-major, as the heatmap takes them.
std::vector<double> row_major(const Eigen::MatrixXd& m) {
    std::vector<double> values;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) values.push_back(m(i, j));
    return values;
}

SvgPanel weight_panel(const std::string& name, const Eigen::MatrixXd& m, double limit, const std::string& rows_are,
                      const std::string& columns_are) {
    SignedHeatmap map;
    map.title = name + " [" + std::to_string(m.rows()) + "," + std::to_string(m.cols()) + "]";
    map.subtitle = "Frobenius norm " + fixed(m.norm(), 2);
    map.rows = m.rows();
    map.columns = m.cols();
    map.values = row_major(m);
    map.limit = limit;
    map.cell = 4;
    map.rows_are = rows_are;
    map.columns_are = columns_are;
    return signed_heatmap_panel(map);
}

}  // namespace

std::string head_weights_svg(const HeadCircuits& head, const CircuitScales& scales) {
    const HeadWeights& w = head.weights;
    const std::string label = head_label(w.layer, w.head) + " ";
    return svg_document({weight_panel(label + "W_Q", w.W_Q, scales.W_Q, "residual feature", "query feature"),
                         weight_panel(label + "W_K", w.W_K, scales.W_K, "residual feature", "key feature"),
                         weight_panel(label + "W_V", w.W_V, scales.W_V, "residual feature", "value feature"),
                         weight_panel(label + "W_O", w.W_O, scales.W_O, "value feature", "residual feature")});
}

namespace {


// The whole circuit [V,V], rows and columns in the groups' order.
SvgPanel whole_circuit_panel(const HeadCircuits& head, bool qk, const Vocabulary& vocab, const VocabularyGroups& groups,
                             const CircuitScales& scales) {
    const Eigen::MatrixXd& circuit = qk ? head.qk : head.ov;  // [V,V]
    const int64_t V = circuit.rows();
    SignedHeatmap map;
    map.title = head_label(head.weights.layer, head.weights.head) +
                (qk ? " QK circuit E·W_Q·(E·W_K)ᵀ" : " OV circuit E·W_V·W_O·U");
    map.subtitle = qk ? "score before 1/√d and softmax, rotary left out (distance 0)"
                      : "copying score " + fixed(head.copying, 2) + " (1 = raises the logit of what it reads)";
    map.rows = map.columns = V;
    map.limit = qk ? scales.qk : scales.ov;
    map.cell = 9;
    map.rows_are = qk ? "query character" : "character read";
    map.columns_are = qk ? "key character" : "character whose logit it raises";
    // Rows and columns in the groups' order.
    for (int32_t a : groups.order) {
        map.row_labels.push_back(char_label(vocab.at(a)));
        for (int32_t b : groups.order) map.values.push_back(circuit(a, b));
    }
    map.column_labels = map.row_labels;
    if (!groups.names.empty()) {
        for (size_t g = 0; g < groups.names.size(); ++g) {
            const int64_t count = std::count(groups.group_of.begin(), groups.group_of.end(), static_cast<int>(g));
            if (count > 0) map.row_bands.push_back({groups.names[g], count});
        }
        map.column_bands = map.row_bands;
    }
    return signed_heatmap_panel(map);
}

// A vocabulary too large for a grid: the excerpt's entries, on the rows and columns of the
// characters its top pairs involve (on the same colour scale as every OV or QK picture).
SvgPanel excerpt_panel(const HeadCircuits& head, bool qk, const Vocabulary& vocab, const CircuitScales& scales) {
    const CircuitExcerpt& excerpt = qk ? head.qk_excerpt : head.ov_excerpt;
    const int64_t V = vocab.size();
    SignedHeatmap map;
    map.title = head_label(head.weights.layer, head.weights.head) +
                (qk ? " QK circuit E·W_Q·(E·W_K)ᵀ" : " OV circuit E·W_V·W_O·U") + ": its " +
                std::to_string(excerpt.pairs.size()) + " largest entries";
    map.subtitle = "V = " + with_commas(V) + ": " + with_commas(V * V) + " entries, too many to draw; " +
                   (qk ? "scores before 1/√d and softmax, rotary left out"
                       : "copying score " + fixed(head.copying, 2) + " (1 = raises what it reads)");
    map.rows = excerpt.values.rows();
    map.columns = excerpt.values.cols();
    map.limit = qk ? scales.qk : scales.ov;
    map.cell = 16;  // room for a Chinese label per row and column
    map.tooltips = true;
    map.rows_are = qk ? "query character (of a top pair)" : "character read (of a top pair)";
    map.columns_are = qk ? "key character" : "character whose logit it raises";
    for (Eigen::Index i = 0; i < excerpt.values.rows(); ++i)
        for (Eigen::Index j = 0; j < excerpt.values.cols(); ++j) map.values.push_back(excerpt.values(i, j));
    for (int32_t a : excerpt.rows) map.row_labels.push_back(char_label(vocab.at(a)));
    for (int32_t b : excerpt.columns) map.column_labels.push_back(char_label(vocab.at(b)));
    return signed_heatmap_panel(map);
}

// The excerpt's pairs as a ranked list: "3  丁 → 丁  +1.25", each with its colour.
SvgPanel pair_list_panel(const HeadCircuits& head, bool qk, const Vocabulary& vocab, const CircuitScales& scales) {
    const CircuitExcerpt& excerpt = qk ? head.qk_excerpt : head.ov_excerpt;
    const double line = 16, top = 38;
    SvgPanel panel;
    panel.elements = "<g font-family=\"" + std::string(kCjkFontStack) + "\" font-size=\"12\" fill=\"#333\">\n";
    panel.elements += "<text x=\"0\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" +
                      std::string(qk ? "query → key: score" : "read → raised: logit") + "</text>\n";
    for (size_t k = 0; k < excerpt.pairs.size(); ++k) {
        const TokenPair& pair = excerpt.pairs[k];
        const std::string y = fixed(top + line * static_cast<double>(k), 0);
        panel.elements += "<rect x=\"0\" y=\"" + fixed(top + line * static_cast<double>(k) - 10, 0) +
                          "\" width=\"10\" height=\"12\" fill=\"" +
                          signed_colour(pair.value, qk ? scales.qk : scales.ov) + "\"/>";
        panel.elements += "<text x=\"16\" y=\"" + y + "\">" + std::to_string(k + 1) + "</text>";
        panel.elements += "<text x=\"40\" y=\"" + y + "\">" + xml_escape(char_label(vocab.at(pair.from))) + " → " +
                          xml_escape(char_label(vocab.at(pair.to))) + "</text>";
        panel.elements += "<text x=\"150\" y=\"" + y + "\" text-anchor=\"end\">" + fixed(pair.value, qk ? 1 : 2) +
                          "</text>\n";
    }
    panel.elements += "</g>\n";
    panel.width = 160;
    panel.height = top + line * static_cast<double>(excerpt.pairs.size());
    return panel;
}

}  // namespace

std::string circuit_svg(const HeadCircuits& head, bool qk, const Vocabulary& vocab, const VocabularyGroups& groups,
                        const CircuitScales& scales) {
    if (head.drawn_whole()) return svg_document({whole_circuit_panel(head, qk, vocab, groups, scales)});
    return svg_document({excerpt_panel(head, qk, vocab, scales), pair_list_panel(head, qk, vocab, scales)});
}

}  // namespace tinyformer
