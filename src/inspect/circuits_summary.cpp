// The lines inspect prints about the weights: one for the copying scores, one per pair of
// heads for composition, each beside the random baseline.
#include <cstdio>

#include "tinyformer/inspect/circuits_report.hpp"

namespace tinyformer {

std::string circuits_summary(const Circuits& circuits) {
    char buffer[160];
    std::string text = "weights: copying score (1 = the head raises the logit of what it reads):";
    const char* separator = " ";
    for (const HeadCircuits& head : circuits.heads) {
        std::snprintf(buffer, sizeof buffer, "%s%s %.2f", separator, head_label(head.weights.layer, head.weights.head).c_str(),
                      head.copying);
        text += buffer;
        separator = ", ";
    }
    if (circuits.composition.empty()) return text + "; one layer, no composition";
    const CompositionBaseline& b = circuits.baseline;
    std::snprintf(buffer, sizeof buffer, "\ncomposition (random matrices: %.3f ± %.3f):", b.mean, b.std);
    text += buffer;
    for (const Composition& c : circuits.composition) {
        std::snprintf(buffer, sizeof buffer, "\n  %s → %s  Q %.3f  K %.3f  V %.3f",
                      head_label(c.earlier_layer, c.earlier_head).c_str(), head_label(c.later_layer, c.later_head).c_str(),
                      c.q, c.k, c.v);
        text += buffer;
    }
    return text;
}

}  // namespace tinyformer
