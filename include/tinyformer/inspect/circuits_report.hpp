// What tinyformer inspect writes about the weights (the measurements are in circuits.hpp):
//   circuits.json                     every number, each with a one-line definition
//   L{l}H{h}_weights.svg              the head's W_Q, W_K, W_V [D,d] and W_O [d,D]
//   L{l}H{h}_ov.svg, L{l}H{h}_qk.svg  its OV and QK circuits over the vocabulary: the whole
//                                     [V,V] grid, rows and columns grouped by role (V ≤
//                                     kGridLimit), or the kPairsDrawn largest entries on
//                                     the rows and columns of their characters, beside a
//                                     ranked list (larger V; circuits.hpp)
//   circuits_html                     the report's sections on them
//   circuits_summary                  the lines inspect prints
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/inspect/circuits.hpp"
#include "tinyformer/inspect/inspect_report.hpp"

namespace tinyformer {

// One symmetric colour scale per kind of picture, shared by every head: the largest |value|
// of that kind over all heads, so that a paler head has smaller numbers.
struct CircuitScales {
    double W_Q = 0, W_K = 0, W_V = 0, W_O = 0;  // largest |entry| of that matrix over every head
    double ov = 0, qk = 0;                      // largest |entry| of the [V,V] circuits over every head
                                                // (HeadCircuits::ov_largest_abs, qk_largest_abs)
};
CircuitScales circuit_scales(const Circuits& circuits);

// "L1H0"
std::string head_label(int64_t layer, int64_t head);

// Four panels side by side: W_Q, W_K, W_V ([D,d], rows = residual features) and W_O ([d,D]).
std::string head_weights_svg(const HeadCircuits& head, const CircuitScales& scales);
// The head's OV (`qk` false) or QK (`qk` true) circuit. V ≤ kGridLimit: the whole [V,V] grid,
// rows and columns in the groups' order, the cells one embedded PNG without per-cell tooltips
// (signed_heatmap_panel). Larger V: its excerpt (the kPairsDrawn largest entries on their
// characters' rows and columns, a tooltip per cell) and the ranked list of those pairs.
std::string circuit_svg(const HeadCircuits& head, bool qk, const Vocabulary& vocab, const VocabularyGroups& groups,
                        const CircuitScales& scales);

// Every number of `circuits`, with a definition of each (key "definitions", by the number's
// path: "heads.ov_circuit.copying_score", "composition.q", ...).
nlohmann::json circuits_json(const Circuits& circuits, const Vocabulary& vocab, const VocabularyGroups& groups,
                             const ReportContext& context);
// Those definitions, as path → sentence.
const std::vector<std::pair<std::string, std::string>>& circuit_definitions();

// What inspect prints: each head's copying score, then each composition score beside the baseline.
std::string circuits_summary(const Circuits& circuits);

// The report's sections: head weights, circuits through the vocabulary, composition (XHTML,
// pictures inlined); report_html puts them after the ablations.
std::string circuits_html(const Circuits& circuits, const Vocabulary& vocab, const VocabularyGroups& groups);

}  // namespace tinyformer
