// report.html: one self-contained page — every head's map side by side, then the numbers
// (reading patterns, answer sources, ablations), a sentence per head, the weight-only
// sections (circuits_html.cpp), the loss curve.
// Written as XHTML5 (well-formed XML that browsers read as HTML), with no scripts and no
// links out, so that the file alone is the report.
#include <cstdio>

#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/inspect/inspect_report.hpp"
#include "tinyformer/inspect/training_roles.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

namespace {

std::string signed_fixed(double value, int digits = 3) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%+.*f", digits, value);
    return buffer;
}
std::string head_name(int64_t l, int64_t h) { return "L" + std::to_string(l) + "H" + std::to_string(h); }
// A table cell; `strong` marks a number that clears the bar the findings use.
std::string td(const std::string& text, bool strong = false) {
    return strong ? "<td class=\"strong\">" + text + "</td>" : "<td>" + text + "</td>";
}

const char* kStyle = R"(
body { font-family: 'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei', sans-serif;
       margin: 24px; color: #222; max-width: 1400px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }
.meta { color: #555; font-size: 13px; }
.layer { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 0; } figcaption { font-size: 12px; color: #555; max-width: 420px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
td.strong { font-weight: bold; background: #e8f0fb; }
li { margin-bottom: 6px; } dt { font-weight: bold; } dd { margin: 0 0 6px 16px; }
h3 { font-size: 15px; margin-top: 20px; }
)";

// The page's head and what the numbers come from: the checkpoint, the model, the shown
// text, the validation text, the probes, then the notes.
std::string page_header(const AttentionMaps& maps, const InspectResult& result, const ReportContext& context) {
    std::string html = "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"zh-Hans\">\n<head>\n"
                       "<meta charset=\"utf-8\"/>\n<title>tinyformer inspect: where does each head read?</title>\n"
                       "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
    html += "<h1>Where does each head read?</h1>\n";
    const ModelConfig& model = context.model;
    html += "<p class=\"meta\">checkpoint " + xml_escape(context.checkpoint) + " (step " +
            std::to_string(context.step) + "): D=" + std::to_string(model.d_model) + ", H=" +
            std::to_string(model.n_heads) + " heads of width " + std::to_string(model.head_width()) + ", L=" +
            std::to_string(model.n_layers) + " layers, context " + std::to_string(model.context) + ", " +
            xml_escape(model.positions) + " positions.<br/>The maps show " +
            xml_escape(context.maps_source) + ": “" + xml_escape(encode_utf8(maps.text)) + "”.";
    if (result.has_text)
        html += "<br/>Reading patterns and losses: " + xml_escape(context.text_name) + " (" +
                std::to_string(result.text_characters) + " characters, validation loss " + fixed(result.val_loss, 4) +
                ").";
    if (result.has_probes)
        html += "<br/>Probes: " + xml_escape(context.probes_name) + " (" + std::to_string(result.probes.correct) + "/" +
                std::to_string(result.probes.total) + " correct, " + percent(result.probes.accuracy(), 1) + ").";
    html += "</p>\n";
    for (const std::string& note : context.notes) html += "<p class=\"meta\">Note: " + xml_escape(note) + "</p>\n";
    return html;
}

// 1. The maps, one row per layer.
std::string attention_maps_section(const AttentionMaps& maps, const InspectResult& result) {
    std::string html = "<h2>Attention maps</h2>\n<p class=\"meta\">Rows: the character that reads (query); columns: "
                       "the character read. One colour scale for all heads; grey cells are the future, which a causal "
                       "head cannot read. Hover a cell for its weight.</p>\n";
    for (int64_t l = 0; l < maps.layers; ++l) {
        html += "<div class=\"layer\">\n";
        for (int64_t h = 0; h < maps.heads; ++h) {
            html += "<figure>" +
                    attention_heatmap_svg(maps.text, maps.map(l, h), head_name(l, h) + ": layer " + std::to_string(l) +
                                                                         ", head " + std::to_string(h));
            for (const HeadReport& head : result.heads)
                if (head.layer == l && head.head == h && (result.has_text || result.has_probes))
                    html += "<figcaption>" + xml_escape(head.finding) + "</figcaption>";
            html += "</figure>\n";
        }
        html += "</div>\n";
    }
    return html;
}

// 2. One sentence per head.
std::string findings_section(const InspectResult& result) {
    std::string html = "<h2>What each head does, measured</h2>\n<ul>\n";
    for (const HeadReport& head : result.heads) html += "<li>" + xml_escape(head.finding) + "</li>\n";
    html += "</ul>\n";
    return html;
}

// 3. Reading patterns over the validation text.
std::string reading_patterns_section(const InspectResult& result) {
    std::string html = "<h2>Reading patterns over the validation text</h2>\n<table>\n<tr><th>head</th><th>previous</th>"
                       "<th>self</th><th>first</th><th>duplicate</th><th>induction</th><th>mean distance</th>"
                       "<th>mean entropy (nats)</th></tr>\n";
    for (const HeadReport& head : result.heads) {
        const HeadRoles& r = head.roles;
        html += "<tr>" + td(head_name(head.layer, head.head));
        for (double score : {r.previous, r.self, r.first, r.duplicate, r.induction})
            html += td(fixed(score), score >= 0.4);
        html += td(fixed(r.distance, 1)) + td(fixed(r.entropy)) + "</tr>\n";
    }
    html += "</table>\n";
    return html;
}

// 4. Probe readout: where each head reads when the answer is due.
std::string probe_readout_section(const InspectResult& result) {
    std::string html = "<h2>Probe readout: where each head reads when the answer is due</h2>\n<p class=\"meta\">At "
                       "the position that predicts each answer character, the share of the head's attention on the "
                       "answer's place in the story (span), and on the earlier positions holding that very character "
                       "(characters); per answer character in brackets (1st / 2nd).</p>\n<table>\n<tr><th>head</th>";
    for (const auto& [kind, counts] : result.probes.by_kind)
        html += "<th>" + xml_escape(kind) + ": span</th><th>" + xml_escape(kind) + ": characters (" +
                std::to_string(counts.second) + " probes)</th>";
    html += "</tr>\n";
    for (const HeadReport& head : result.heads) {
        html += "<tr>" + td(head_name(head.layer, head.head));
        for (const auto& [kind, counts] : result.probes.by_kind) {
            auto it = head.answer_source.find(kind);
            if (it == head.answer_source.end()) {
                html += td("–") + td("–");
                continue;
            }
            auto with_parts = [](double mean, const std::vector<double>& parts) {
                std::string text;
                for (double share : parts) text += (text.empty() ? "" : " / ") + fixed(share);
                return fixed(mean) + " (" + text + ")";
            };
            html += td(with_parts(it->second.span_share, it->second.span_by_answer_char), it->second.span_share >= 0.3);
            html += td(with_parts(it->second.share, it->second.by_answer_char), it->second.share >= 0.3);
        }
        html += "</tr>\n";
    }
    html += "</table>\n";
    return html;
}

// 5. Ablations.
std::string ablation_section(const InspectResult& result) {
    std::string html = "<h2>Ablation: the model without one head</h2>\n<table>\n<tr><th>head</th>";
    const char* modes[] = {"zeroed", "mean output"};
    for (const char* mode : modes) {
        if (!result.has_text && std::string(mode) != "zeroed") continue;
        if (result.has_text) html += std::string("<th>") + mode + ": val loss</th>";
        for (const auto& [kind, counts] : result.probes.by_kind)
            html += std::string("<th>") + mode + ": " + xml_escape(kind) + "</th>";
    }
    html += "</tr>\n<tr>" + td("(none)");
    for (int m = 0; m < (result.has_text ? 2 : 1); ++m) {
        if (result.has_text) html += td(fixed(result.val_loss, 4));
        for (const auto& [kind, counts] : result.probes.by_kind) html += td(percent(result.probes.accuracy(kind), 1));
    }
    html += "</tr>\n";
    for (const HeadReport& head : result.heads) {
        html += "<tr>" + td(head_name(head.layer, head.head));
        for (const AblationResult* effect : {&head.zeroed, &head.mean_replaced}) {
            if (!result.has_text && effect == &head.mean_replaced) continue;
            if (result.has_text)
                html += td(fixed(effect->val_loss, 4) + " (" + signed_fixed(effect->val_loss - result.val_loss) + ")");
            for (const auto& [kind, counts] : result.probes.by_kind) {
                const double drop = result.probes.accuracy(kind) - effect->probes.accuracy(kind);
                html += td(percent(effect->probes.accuracy(kind), 1), 100 * drop >= 10);
            }
        }
        html += "</tr>\n";
    }
    html += "</table>\n";
    return html;
}

// The definitions of every measure, the bars the bold cells clear, and the page's end.
std::string definitions_section() {
    std::string html = "<h2>What the numbers mean</h2>\n<dl>\n";
    for (const auto& [name, sentence] : measure_definitions())
        html += "<dt>" + xml_escape(name) + "</dt><dd>" + xml_escape(sentence) + "</dd>\n";
    html += "</dl>\n<p class=\"meta\">Bold cells clear the bar the sentences use: a pattern holding at least 0.40 of "
            "a head's attention, an answer share of at least 0.30, an accuracy drop of at least 10 points.</p>\n";
    html += "</body>\n</html>\n";
    return html;
}

}  // namespace

std::string report_html(const AttentionMaps& maps, const InspectResult& result, const ReportContext& context,
                        const std::string& weight_sections) {
    std::string html = page_header(maps, result, context);
    html += attention_maps_section(maps, result);
    html += findings_section(result);
    if (result.has_text) html += reading_patterns_section(result);
    if (result.has_probes) html += probe_readout_section(result);
    if (result.has_text || result.has_probes) html += ablation_section(result);

    // 6. The weights: head matrices, circuits through the vocabulary, composition.
    html += weight_sections;

    // 7. Training curve, when the checkpoint sits in a run directory.
    if (!context.loss_svg.empty()) html += "<h2>Training</h2>\n" + context.loss_svg + "\n";
    html += roles_over_training_html(context.metrics);  // 8. How the roles formed, when the run recorded them

    html += definitions_section();
    return html;
}

}  // namespace tinyformer
