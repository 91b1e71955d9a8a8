// The weight-only measurements as pictures: a head's four matrices, and its OV and QK
// circuits over the vocabulary. Every picture of one kind shares one symmetric colour scale.
#include <algorithm>
#include <cstdio>

#include "tinyformer/circuits_report.hpp"
#include "tinyformer/heatmap.hpp"
#include "tinyformer/plot.hpp"

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
        s.ov = std::max(s.ov, head.ov.cwiseAbs().maxCoeff());
        s.qk = std::max(s.qk, head.qk.cwiseAbs().maxCoeff());
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

std::string circuit_svg(const HeadCircuits& head, bool qk, const Vocabulary& vocab, const VocabularyGroups& groups,
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
    return svg_document({signed_heatmap_panel(map)});
}

}  // namespace tinyformer
