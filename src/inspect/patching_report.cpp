// Activation patching in circuits.json, in the report and on the terminal (patching_report.hpp).
#include "tinyformer/inspect/patching_report.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/circuits_report.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

const std::vector<std::pair<std::string, std::string>>& patching_definitions() {
    static const std::vector<std::pair<std::string, std::string>> definitions = {
        {"patching.metric", "At the position that predicts the answer's first character: logit(clean answer's first character) − logit(corrupted answer's first character)."},
        {"patching.corruption_rule", "How each probe's corrupted twin is made."},
        {"patching.probes", "Probes given."},
        {"patching.skipped", "Probes with no twin (the answer not in the prompt, no other answer of the kind with another first character, or longer than the context)."},
        {"patching.kinds.twins", "The question kind's twins, over which its numbers are averaged."},
        {"patching.kinds.clean_logit_difference", "The metric on the clean stories, mean over the kind's twins."},
        {"patching.kinds.corrupted_logit_difference", "The metric on the corrupted stories, mean over the kind's twins."},
        {"patching.kinds.recovered_every_position", "Per head (order: patching.heads): the corrupted story run with that head's output z = weights·v [T,d] (before out_proj) taken from the clean run at every position; (mean patched − mean corrupted) / (mean clean − mean corrupted), the means over the kind's twins (the ARENA IOI exercises' normalisation). 1 = the head alone carries the answer's difference, 0 = none of it."},
        {"patching.kinds.recovered_answer_position", "The same with the head's output patched at the answer position only (the last prompt position)."},
        {"patching.kinds.paths.q", "Path patching (Wang et al. 2022): the sender head's direct contribution z·W_O^h to the residual stream from the clean run, instead of the corrupted run's, added only to what the receiver head's queries read (its ln1 recomputed); every other path stays corrupted. Recovered fraction as above."},
        {"patching.kinds.paths.k", "The same, into the receiver's keys."},
        {"patching.kinds.paths.v", "The same, into the receiver's values."},
        {"patching.kinds.example.probe", "The twin's probe: its place among the probes, from 1 (blank lines of the file not counted)."},
        {"patching.kinds.example.recovered_by_position", "For the kind's first twin: per head, the recovered fraction (that twin's own clean and corrupted metric) when the head's clean output is patched at that one position only."},
        {"patching.kinds.example.clean_logit_difference", "The metric on that twin's clean story."},
        {"patching.kinds.example.corrupted_logit_difference", "The metric on that twin's corrupted story."},
        {"patching.findings", "Sentences built only from these numbers, the zero ablations (heads.json) and the composition scores: which heads and edges carry each kind's answer, and whether the other measures agree."},
    };
    return definitions;
}

namespace {

std::string label(int64_t index, int64_t n_heads) { return head_label(index / n_heads, index % n_heads); }

// A recovered fraction for a sentence: two decimals.
std::string fraction(double value) { return fixed(value, 2); }

struct Edge {
    const PathEdge* edge;
    char input;
    double value;
};

// Every (edge, input) that recovers at least kEdge, largest first.
std::vector<Edge> strong_edges(const KindPatching& kind) {
    std::vector<Edge> edges;
    for (const PathEdge& edge : kind.paths)
        for (auto [input, value] : {std::pair{'q', edge.q}, std::pair{'k', edge.k}, std::pair{'v', edge.v}})
            if (value >= kEdge) edges.push_back({&edge, input, value});
    std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.value > b.value; });
    return edges;
}

const char* input_name(char input) { return input == 'q' ? "queries" : input == 'k' ? "keys" : "values"; }

std::string edge_name(const Edge& e) {
    return head_label(e.edge->sender_layer, e.edge->sender_head) + " → " +
           head_label(e.edge->receiver_layer, e.edge->receiver_head) + "'s " + input_name(e.input);
}

}  // namespace

std::vector<std::string> patching_findings(const Patching& patching, const InspectResult& inspected,
                                           const Circuits& circuits, int64_t n_heads) {
    std::vector<std::string> findings;
    for (const auto& entry : patching.kinds) {  // (not a structured binding: clang 14 cannot capture one)
        const std::string& name = entry.first;
        const KindPatching& kind = entry.second;
        if (kind.twins == 0) continue;
        std::string text = name + " (" + std::to_string(kind.twins) + " twins; logit difference " +
                           fixed(kind.clean) + " clean, " + fixed(kind.corrupted) + " corrupted): ";
        if (std::abs(kind.clean - kind.corrupted) < 1e-6) {
            findings.push_back(text + "the clean and corrupted stories score the same, so patching cannot say which "
                                      "head carries the answer.");
            continue;
        }
        // The heads, by what patching each recovers.
        std::vector<int64_t> order(kind.every_position.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return kind.every_position[a] > kind.every_position[b]; });
        const int64_t top = order.front();
        std::vector<std::string> carriers;
        for (int64_t i : order)
            if (kind.every_position[i] >= kCarries)
                carriers.push_back(label(i, n_heads) + " " + fraction(kind.every_position[i]) + " (" +
                                   fraction(kind.answer_position[i]) +
                                   (carriers.empty() ? " at the answer position alone)" : ")"));
        if (carriers.empty()) {
            text += "no single head's clean output recovers " + fraction(kCarries) + " of it (the most: " +
                    label(top, n_heads) + ", " + fraction(kind.every_position[top]) +
                    "); the answer is spread over several heads or goes through the MLPs.";
        } else {
            text += "patching one head's clean output into the corrupted story recovers ";
            for (size_t i = 0; i < carriers.size(); ++i) text += (i == 0 ? "" : ", ") + carriers[i];
            text += ".";
        }
        // The edges.
        const std::vector<Edge> edges = strong_edges(kind);
        if (!kind.paths.empty()) {
            if (edges.empty()) {
                text += " No path from an earlier head into a later head's queries, keys or values recovers " +
                        fraction(kEdge) + " on its own.";
            } else {
                text += " Its edges: ";
                for (size_t i = 0; i < edges.size() && i < 3; ++i)
                    text += (i == 0 ? "" : ", ") + edge_name(edges[i]) + " (" + fraction(edges[i].value) + ")";
                text += ".";
            }
        }
        // Do the zero ablations rank the same head first?
        if (inspected.has_probes && !inspected.heads.empty()) {
            const double base = inspected.probes.accuracy(name);
            int64_t worst = 0;
            double largest_drop = -1;
            for (size_t i = 0; i < inspected.heads.size(); ++i) {
                const double drop = base - inspected.heads[i].zeroed.probes.accuracy(name);
                if (drop > largest_drop) largest_drop = drop, worst = static_cast<int64_t>(i);
            }
            const std::string drop_text = " (" + fixed(100 * base, 0) + " % → " +
                                          fixed(100 * inspected.heads[worst].zeroed.probes.accuracy(name), 0) + " %)";
            if (largest_drop <= 0)
                text += " Zero ablation removes no " + name + " answer, whichever head it removes.";
            else if (worst == top)
                text += " Zero ablation agrees: removing " + label(worst, n_heads) + " costs the most " + name +
                        " accuracy" + drop_text + ".";
            else
                text += " Zero ablation ranks another head first: removing " + label(worst, n_heads) + " costs the most " +
                        name + " accuracy" + drop_text + ", where patching ranks " + label(top, n_heads) + " first.";
        }
        // Do the weights single the strongest edge out?
        if (!edges.empty()) {
            const Edge& e = edges.front();
            const CompositionBaseline& b = circuits.baseline;
            for (const Composition& c : circuits.composition) {
                if (c.earlier_layer != e.edge->sender_layer || c.earlier_head != e.edge->sender_head ||
                    c.later_layer != e.edge->receiver_layer || c.later_head != e.edge->receiver_head)
                    continue;
                const double score = e.input == 'q' ? c.q : e.input == 'k' ? c.k : c.v;
                const double sigmas = b.std > 0 ? (score - b.mean) / b.std : 0;
                const std::string kind_letter(1, static_cast<char>(std::toupper(e.input)));
                text += " The weights " + std::string(sigmas >= 3 ? "agree" : "do not single it out") + ": " +
                        kind_letter + "-composition of " + head_label(c.earlier_layer, c.earlier_head) + " into " +
                        head_label(c.later_layer, c.later_head) + " is " + fixed(score, 3) + ", " + fixed(sigmas, 1) +
                        " standard deviations from random matrices (" + fixed(b.mean, 3) + " ± " + fixed(b.std, 3) + ").";
            }
        }
        findings.push_back(text);
    }
    return findings;
}

void add_patching_json(nlohmann::json& circuits, const Patching* patching, const Vocabulary& vocab,
                       const std::vector<Probe>& probes, const std::vector<std::string>& findings, int64_t n_layers,
                       int64_t n_heads) {
    for (const auto& [path, sentence] : patching_definitions()) circuits["definitions"][path] = sentence;
    if (!patching) {
        circuits["patching"] = nullptr;
        circuits["notes"].push_back("no probes: no activation patching (give --probes FILE)");
        return;
    }
    nlohmann::json out;
    out["metric"] = "logit(clean answer's first character) − logit(corrupted answer's first character), at the "
                    "position that predicts it";
    out["corruption_rule"] = corruption_rule();
    out["probes"] = patching->probes;
    out["skipped"] = patching->skipped;
    out["heads"] = nlohmann::json::array();
    for (int64_t i = 0; i < n_layers * n_heads; ++i) out["heads"].push_back(label(i, n_heads));
    out["index_order"] = "recovered_every_position[i], recovered_answer_position[i] and "
                         "example.recovered_by_position[i][t]: i = the head heads[i], t = the position";
    out["kinds"] = nlohmann::json::array();
    for (const auto& [name, kind] : patching->kinds) {
        nlohmann::json k = {{"kind", name},
                            {"twins", kind.twins},
                            {"clean_logit_difference", kind.clean},
                            {"corrupted_logit_difference", kind.corrupted},
                            {"recovered_every_position", kind.every_position},
                            {"recovered_answer_position", kind.answer_position}};
        k["paths"] = nlohmann::json::array();
        for (const PathEdge& edge : kind.paths)
            k["paths"].push_back({{"sender", head_label(edge.sender_layer, edge.sender_head)},
                                  {"receiver", head_label(edge.receiver_layer, edge.receiver_head)},
                                  {"q", edge.q},
                                  {"k", edge.k},
                                  {"v", edge.v}});
        const ProbeTwin& twin = kind.example;
        k["example"] = {{"probe", twin.probe + 1},
                        {"clean_prompt", encode_utf8(probes[twin.probe].prompt)},
                        {"corrupted_prompt", encode_utf8(vocab.decode(twin.corrupted))},
                        {"clean_answer", encode_utf8(probes[twin.probe].answer)},
                        {"corrupted_answer", encode_utf8(twin.corrupted_answer)},
                        {"clean_logit_difference", kind.example_clean},
                        {"corrupted_logit_difference", kind.example_corrupted},
                        {"recovered_by_position", kind.example_by_position}};
        out["kinds"].push_back(k);
    }
    out["findings"] = findings;
    circuits["patching"] = out;
}

std::string patching_html(const Patching& patching, const InspectResult& inspected, const Vocabulary& vocab,
                          const std::vector<std::string>& findings, int64_t n_layers, int64_t n_heads) {
    const int64_t heads = n_layers * n_heads;
    std::string html = "<h2>Activation patching: which heads carry the answer</h2>\n<p class=\"meta\">Each probe gets a "
                       "corrupted twin: " +
                       xml_escape(corruption_rule()) +
                       ". Metric: at the position that predicts the answer's first character, logit(clean answer) − "
                       "logit(corrupted answer). The corrupted story is run again with one head's output z = weights·v "
                       "(before out_proj) copied from the clean run; the recovered fraction is (patched − corrupted) / "
                       "(clean − corrupted), logit differences averaged over the kind's twins first (as the ARENA IOI "
                       "exercises normalise). 1: the head alone carries what distinguishes the answers; 0: none of it. " +
                       std::to_string(patching.probes - patching.skipped) + " of " + std::to_string(patching.probes) +
                       " probes have a twin.</p>\n";
    if (!findings.empty()) {
        html += "<ul class=\"findings\">\n";
        for (const std::string& finding : findings) html += "<li>" + xml_escape(finding) + "</li>\n";
        html += "</ul>\n";
    }
    for (const auto& [name, kind] : patching.kinds) {
        html += "<h3>" + xml_escape(name) + ": " + std::to_string(kind.twins) + " twins, logit difference " +
                fixed(kind.clean) + " clean, " + fixed(kind.corrupted) + " corrupted</h3>\n<table>\n<tr><th>head</th>"
                "<th>patched at every position</th><th>at the answer position</th><th>" +
                xml_escape(name) + " accuracy, head zeroed</th></tr>\n";
        for (int64_t i = 0; i < heads; ++i) {
            const bool strong = kind.every_position[i] >= kCarries;
            html += "<tr><td>" + label(i, n_heads) + "</td><td" + (strong ? " class=\"strong\"" : "") + ">" +
                    fixed(kind.every_position[i], 3) + "</td><td>" + fixed(kind.answer_position[i], 3) + "</td><td>" +
                    (inspected.has_probes && static_cast<size_t>(i) < inspected.heads.size()
                         ? fixed(100 * inspected.heads[i].zeroed.probes.accuracy(name), 0) + " % (of " +
                               fixed(100 * inspected.probes.accuracy(name), 0) + " %)"
                         : std::string("")) +
                    "</td></tr>\n";
        }
        html += "</table>\n";
        if (!kind.paths.empty()) {
            html += "<table>\n<tr><th>path: earlier head → later head</th><th>into its queries</th><th>keys</th>"
                    "<th>values</th></tr>\n";
            for (const PathEdge& edge : kind.paths) {
                auto cell = [](double value) {
                    return std::string(value >= kEdge ? "<td class=\"strong\">" : "<td>") + fixed(value, 3) + "</td>";
                };
                html += "<tr><td>" + head_label(edge.sender_layer, edge.sender_head) + " → " +
                        head_label(edge.receiver_layer, edge.receiver_head) + "</td>" + cell(edge.q) + cell(edge.k) +
                        cell(edge.v) + "</tr>\n";
            }
            html += "</table>\n";
        }
        // One twin, position by position.
        const ProbeTwin& twin = kind.example;
        const int64_t T = static_cast<int64_t>(twin.clean.size());
        SignedHeatmap map;
        map.title = name + ", one twin: each head patched at one position";
        map.subtitle = "clean " + encode_utf8(vocab.decode(twin.clean)) + "  corrupted " +
                       encode_utf8(vocab.decode(twin.corrupted));
        map.rows = heads;
        map.columns = T;
        double largest = 1;
        for (const auto& row : kind.example_by_position)
            for (double value : row) {
                map.values.push_back(value);
                largest = std::max(largest, std::abs(value));
            }
        map.limit = largest;
        map.cell = 16;
        for (int64_t i = 0; i < heads; ++i) map.row_labels.push_back(label(i, n_heads));
        for (int64_t t = 0; t < T; ++t) map.column_labels.push_back(char_label(vocab.at(twin.clean[t])));
        map.rows_are = "head";
        map.columns_are = "position patched (the clean story's characters)";
        map.tooltips = true;  // heads × positions: a few hundred cells
        html += "<figure>" + svg_document({signed_heatmap_panel(map)}) + "<figcaption>Recovered fraction for this twin (" +
                fixed(kind.example_clean) + " clean, " + fixed(kind.example_corrupted) +
                " corrupted), red = towards the clean answer; hover a cell for its value.</figcaption></figure>\n";
    }
    html += "<h3>What the patching numbers mean</h3>\n<dl>\n";
    for (const auto& [path, sentence] : patching_definitions())
        html += "<dt>" + xml_escape(path) + "</dt><dd>" + xml_escape(sentence) + "</dd>\n";
    html += "</dl>\n";
    return html;
}

std::string patching_summary(const Patching& patching, const std::vector<std::string>& findings, int64_t n_heads) {
    std::string text = "activation patching (recovered fraction, every position / answer position):";
    for (const auto& [name, kind] : patching.kinds) {
        text += "\n  " + name + ":";
        for (size_t i = 0; i < kind.every_position.size(); ++i)
            text += " " + label(static_cast<int64_t>(i), n_heads) + " " + fixed(kind.every_position[i]) + "/" +
                    fixed(kind.answer_position[i]);
    }
    for (const std::string& finding : findings) text += "\n  " + finding;
    return text;
}

}  // namespace tinyformer
