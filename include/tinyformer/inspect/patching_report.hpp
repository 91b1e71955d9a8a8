// What tinyformer inspect writes about activation patching (the measurements: patching.hpp):
//   patching_json       circuits.json's "patching" key, every number defined in "definitions"
//   patching_findings   per question kind, which heads and which edges carry the answer, and
//                       whether the ablations and the composition scores say the same
//   patching_html       the report's section: tables, one twin position by position, findings
//   patching_summary    the lines inspect prints
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/inspect/circuits.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/inspect/patching.hpp"

namespace tinyformer {

// Path → sentence, the paths under "patching." as circuits.json's "definitions" holds them.
const std::vector<std::pair<std::string, std::string>>& patching_definitions();

// Thresholds of the findings: a head carries an answer when patching it at every position
// recovers at least kCarries of the logit difference; an edge, when it recovers kEdge.
inline constexpr double kCarries = 0.25;
inline constexpr double kEdge = 0.10;

// One or more sentences per question kind, built only from the numbers.
std::vector<std::string> patching_findings(const Patching& patching, const InspectResult& inspected,
                                           const Circuits& circuits, int64_t n_heads);

// circuits.json's "patching" key (null when `patching` is null: no probes) and the definitions
// of its numbers, added to `circuits` (circuits_json's object). Kinds are an array, each naming
// its kind, so that a number's definition path leaves out only array positions.
void add_patching_json(nlohmann::json& circuits, const Patching* patching, const Vocabulary& vocab,
                       const std::vector<Probe>& probes, const std::vector<std::string>& findings, int64_t n_layers,
                       int64_t n_heads);

std::string patching_html(const Patching& patching, const InspectResult& inspected, const Vocabulary& vocab,
                          const std::vector<std::string>& findings, int64_t n_layers, int64_t n_heads);

std::string patching_summary(const Patching& patching, const std::vector<std::string>& findings, int64_t n_heads);

}  // namespace tinyformer
