// report.html's "How the roles formed": the "roles" of the run's metrics rows (recorded by
// train at every evaluation, src/inspect/training_roles.cpp) drawn against the step, one chart per
// question kind: a line per head for its span share, a dashed black line for the accuracy.
// Under each chart, one sentence read off the same numbers: which head reads this kind's
// answer at the end, when its share rose most, and when the accuracy jumped.
#include <cmath>
#include <set>

#include "tinyformer/inspect/training_roles.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

namespace {

// One colour per head (matplotlib's "tab10"), in heads.json's order L0H0, L0H1, L1H0, ...
const char* kHeadColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                              "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// The same bar findings.cpp uses for "reads the name / the colour": 0.30 of the attention.
constexpr double kReadsBar = 0.30;

// The number at `path` in `roles` ("/span_share/L1H1/who"), NaN when absent or null.
double number_at(const nlohmann::json& roles, const std::string& path) {
    const nlohmann::json::json_pointer pointer(path);
    return roles.contains(pointer) && roles[pointer].is_number() ? roles[pointer].get<double>() : NAN;
}

// The consecutive pair of points with the largest rise: (index of the later point), or 0
// when nothing rose.
size_t largest_rise(const std::vector<std::pair<double, double>>& points) {
    size_t best = 0;
    double rise = 0;
    for (size_t i = 1; i < points.size(); ++i)
        if (points[i].second - points[i - 1].second > rise) rise = points[i].second - points[i - 1].second, best = i;
    return best;
}

std::string step_text(double step) { return std::to_string(static_cast<long long>(step)); }

// "L1H1 reads this answer's place most at the last evaluation (step 500: 0.72); its share rose
// most from step 100 to 200 (0.10 → 0.55) and first reached 0.30 at step 200. The who accuracy
// rose most from step 200 to 300 (12 % → 88 %)."
std::string kind_finding(const std::string& kind, const std::vector<Series>& heads, const Series& accuracy) {
    const Series* reader = nullptr;
    for (const Series& head : heads)
        if (!head.points.empty() && std::isfinite(head.points.back().second) &&
            (!reader || head.points.back().second > reader->points.back().second))
            reader = &head;
    std::string text;
    if (reader) {
        const auto& p = reader->points;
        text = reader->label + " reads the answer's place most at the last evaluation (step " +
               step_text(p.back().first) + ": " + fixed(p.back().second) + ")";
        if (const size_t i = largest_rise(p); i > 0)
            text += "; its share rose most from step " + step_text(p[i - 1].first) + " to " + step_text(p[i].first) +
                    " (" + fixed(p[i - 1].second) + " → " + fixed(p[i].second) + ")";
        std::string reached = " and never reached " + fixed(kReadsBar);
        for (const auto& [step, share] : p)
            if (share >= kReadsBar) {
                reached = " and first reached " + fixed(kReadsBar) + " at step " + step_text(step);
                break;
            }
        text += reached + ". ";
    }
    const auto& a = accuracy.points;
    if (const size_t i = largest_rise(a); i > 0)
        text += "The " + kind + " accuracy rose most from step " + step_text(a[i - 1].first) + " to " +
                step_text(a[i].first) + " (" + percent(a[i - 1].second) + " → " + percent(a[i].second) + ").";
    else if (!a.empty())
        text += "The " + kind + " accuracy did not rise between evaluations (" + percent(a.front().second) + " → " +
                percent(a.back().second) + ").";
    return text;
}

}  // namespace

std::string roles_over_training_html(const std::vector<nlohmann::json>& metrics_rows) {
    std::vector<const nlohmann::json*> rows;  // the rows with "roles", in step order as written
    std::set<std::string> kinds;
    std::vector<std::string> head_names;      // from the first such row: L0H0, L0H1, ...
    for (const nlohmann::json& row : metrics_rows) {
        if (!row.contains("roles") || !row.contains("step") || !row["roles"].is_object()) continue;
        const nlohmann::json& roles = row["roles"];
        rows.push_back(&row);
        if (roles.contains("accuracy"))
            for (const auto& [kind, value] : roles["accuracy"].items()) kinds.insert(kind);
        if (head_names.empty() && roles.contains("span_share"))
            for (const auto& [name, value] : roles["span_share"].items()) head_names.push_back(name);
    }
    if (rows.empty()) return "";

    const nlohmann::json& last = (*rows.back())["roles"];
    std::string html = "<h2>How the roles formed</h2>\n<p class=\"meta\">At every evaluation, train measured each "
                       "head on the same " +
                       std::to_string(last.value("probes", 0)) + " probes (" +
                       xml_escape(last.value("rule", std::string("a fixed subset"))) +
                       "). Each coloured line is one head's span share: at the position that predicts an answer "
                       "character, the share of its attention on the answer's place in the story. The dashed black "
                       "line is the share of those probes the model answered correctly (greedy decoding). Look for "
                       "the head whose line rises and stays high, and whether it rises with the jump of the dashed "
                       "line, before it, or after it.</p>\n<div class=\"layer\">\n";
    for (const std::string& kind : kinds) {
        std::vector<Series> heads;
        for (size_t i = 0; i < head_names.size(); ++i)
            heads.push_back({head_names[i], kHeadColours[i % std::size(kHeadColours)], {}});
        Series accuracy{kind + " accuracy", "#000000", {}, true};
        for (const nlohmann::json* row : rows) {
            const double step = (*row)["step"].get<double>();
            const nlohmann::json& roles = (*row)["roles"];
            for (size_t i = 0; i < head_names.size(); ++i)
                heads[i].points.emplace_back(step, number_at(roles, "/span_share/" + head_names[i] + "/" + kind));
            accuracy.points.emplace_back(step, number_at(roles, "/accuracy/" + kind));
        }
        std::vector<Series> lines = heads;
        lines.push_back(accuracy);
        html += "<figure>" +
                line_chart_svg(kind + ": span share per head, and accuracy", "step", "share (0 to 1)", lines,
                               std::pair{0.0, 1.0}) +
                "<figcaption>" + xml_escape(kind_finding(kind, heads, accuracy)) + "</figcaption></figure>\n";
    }
    html += "</div>\n";
    return html;
}

}  // namespace tinyformer
