// What tinyformer inspect writes and prints, made from the measurements in inspect.hpp:
//   attention.json  the characters and every head's [T,T] weights, for a program
//   attention.npy   the same weights, float32 [L,H,T,T] (npy.hpp)
//   L{l}H{h}.svg    one heatmap per head (heatmap.hpp)
//   heads.json      every number the report states
//   report.html     one self-contained page for a person
//   (circuits.json and the weight pictures: circuits_report.hpp)
//   --view terminal where each character reads, and a shaded grid
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// What the report says about where its numbers come from.
struct ReportContext {
    std::string checkpoint;     // the .safetensors file
    int64_t step = 0;
    ModelConfig model;
    std::string maps_source;    // what the attention maps show: "--text", "probe 1 of 320 (...)"
    std::string text_name;      // the validation text the role scores and losses use
    std::string probes_name;    // the probes file
    std::string loss_svg;       // the run's loss curve (its loss.svg), or empty
    std::vector<nlohmann::json> metrics;  // the run's metrics.jsonl rows (roles over training), or none
    std::vector<std::string> notes;  // warnings worth repeating in the report
};

// {"source", "text", "characters": [...], "code_points": [...], "shape": [L,H,T,T],
//  "weights": [layer][head][query][read]}
nlohmann::json attention_json(const AttentionMaps& maps, const std::string& source);

// Every number of `result`, per head and per question kind, with one-sentence definitions.
nlohmann::json heads_json(const InspectResult& result, const ReportContext& context);

// A self-contained HTML page (also well-formed XML: XHTML5), no scripts, no network.
// `weight_sections` (circuits_html in circuits_report.hpp, or empty) goes after the ablations.
std::string report_html(const AttentionMaps& maps, const InspectResult& result, const ReportContext& context,
                        const std::string& weight_sections = "");

// Per head: each query character and the three positions it reads most
// ("果 → 苹(7) 0.81, 的(6) 0.12, 色(5) 0.04"), then a shaded grid two columns per cell,
// so that double-width CJK labels stay aligned.
std::string terminal_view(const AttentionMaps& maps);

// Columns a character takes in a terminal: 2 for East Asian wide and fullwidth characters.
int display_width(char32_t c);

// The one-sentence definitions of every measure (heads.json "definitions", the report).
const std::vector<std::pair<std::string, std::string>>& measure_definitions();

}  // namespace tinyformer
