#include "tinyformer/sweep/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <numeric>
#include <set>

#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/plot.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double student_t_975(int64_t df) {
    static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                   2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                   2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1) return kNaN;
    if (df <= 30) return table[df - 1];
    const double z = 1.959964;
    return z + (z * z * z + z) / (4.0 * static_cast<double>(df));
}

MetricStats metric_stats(const std::vector<double>& values) {
    MetricStats s;
    s.n = static_cast<int64_t>(values.size());
    if (s.n == 0) return {0, kNaN, kNaN, kNaN, kNaN, kNaN};
    s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
    s.min = *std::min_element(values.begin(), values.end());
    s.max = *std::max_element(values.begin(), values.end());
    if (s.n < 2) {
        s.sd = s.ci95 = kNaN;
        return s;
    }
    double squares = 0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(squares / static_cast<double>(s.n - 1));
    s.ci95 = student_t_975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
    return s;
}

double summary_metric(const nlohmann::json& summary, const std::string& metric) {
    const nlohmann::json* value = nullptr;
    if (metric.rfind("probe_", 0) == 0 && metric != "probe_accuracy") {  // probe_<kind>
        const auto kinds = summary.find("probe_accuracy_by_kind");
        if (kinds != summary.end() && kinds->contains(metric.substr(6))) value = &kinds->at(metric.substr(6));
    } else if (summary.contains(metric)) {
        value = &summary.at(metric);
    }
    return value && value->is_number() ? value->get<double>() : kNaN;
}

// A JSON file's contents; InputError naming the file and the byte where it is not JSON.
static nlohmann::json read_json(const std::string& path) {
    try {
        return nlohmann::json::parse(read_file(path));
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(path + ": not valid JSON at byte " + std::to_string(e.byte));
    }
}

// The heads that read each answer kind in an inspect report's heads.json.
static std::map<std::string, std::vector<std::string>> readers_in(const nlohmann::json& heads, const std::string& path) {
    std::map<std::string, std::vector<std::string>> readers;
    try {
        for (const auto& head : heads.at("heads")) {
            std::map<std::string, double> span_shares;
            if (!head.contains("answer_source")) continue;
            for (const auto& [kind, source] : head.at("answer_source").items())
                span_shares[kind] = source.at("span_share").get<double>();
            const std::string kind = answer_kind_read(span_shares);
            if (!kind.empty()) readers[kind].push_back(head.at("name").get<std::string>());
        }
    } catch (const nlohmann::json::exception& e) {
        throw InputError(path + ": not an inspect report's heads.json (" + std::string(e.what()) + ")");
    }
    return readers;
}

SweepReport collect_sweep(const SweepSpec& spec, const std::string& out_dir) {
    SweepReport report;
    report.spec = spec;
    std::set<std::string> kinds, reader_kinds;
    for (const SweepRun& run : sweep_runs(spec, out_dir)) {
        SweepRunResult result{run, false, {}, false, {}};
        const std::string summary_path = (fs::path(run.dir) / "summary.json").string();
        if (fs::exists(summary_path)) {
            result.summary = read_json(summary_path);
            result.finished = true;
            const std::string heads_path = (fs::path(run.dir) / "inspect" / "heads.json").string();
            if (fs::exists(heads_path)) {
                const nlohmann::json heads = read_json(heads_path);
                result.readers = readers_in(heads, heads_path);
                result.inspected = true;
                if (heads.contains("by_kind"))
                    for (const auto& [kind, unused] : heads.at("by_kind").items()) reader_kinds.insert(kind);
            }
            if (result.summary.contains("probe_accuracy_by_kind"))
                for (const auto& [kind, accuracy] : result.summary["probe_accuracy_by_kind"].items()) kinds.insert(kind);
        }
        report.results.push_back(std::move(result));
    }
    report.metrics = {{"val_loss", "val loss"}, {"probe_accuracy", "probes"}};
    for (const std::string& kind : kinds) report.metrics.push_back({"probe_" + kind, kind});
    report.metrics.push_back({"train_seconds", "train s"});
    report.reader_kinds.assign(reader_kinds.begin(), reader_kinds.end());

    for (const SweepRunResult& result : report.results) {
        if (report.groups.empty() || report.groups.back().group != result.run.group)
            report.groups.push_back(SweepGroup{result.run.group, result.run.settings, 0, {}, {}, {}});
        SweepGroup& group = report.groups.back();
        ++group.runs;
        if (!result.finished) continue;
        if (result.inspected)
            for (const std::string& kind : report.reader_kinds) {
                ReaderCount& count = group.readers[kind];
                ++count.inspected;
                const auto heads = result.readers.find(kind);
                if (heads == result.readers.end() || heads->second.empty()) continue;
                ++count.with_reader;
                for (const std::string& head : heads->second) ++count.heads[head];
            }
        for (const SweepMetric& metric : report.metrics) {
            const double value = summary_metric(result.summary, metric.name);
            if (std::isfinite(value)) group.values[metric.name].push_back(value);
        }
    }
    for (SweepGroup& group : report.groups)
        for (const SweepMetric& metric : report.metrics) group.metrics[metric.name] = metric_stats(group.values[metric.name]);
    return report;
}

// A JSON number, or null for NaN (JSON has no NaN).
static nlohmann::json number_or_null(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

nlohmann::json sweep_report_json(const SweepReport& report) {
    nlohmann::json runs = nlohmann::json::array(), groups = nlohmann::json::array();
    for (const SweepRunResult& result : report.results) {
        nlohmann::json row = {{"group", result.run.group}, {"seed", result.run.seed}, {"dir", result.run.dir},
                              {"finished", result.finished}};
        for (const auto& [key, value] : result.run.settings) row["settings"][key] = value;
        if (result.finished) row["summary"] = result.summary;
        if (result.inspected) row["heads_reading"] = result.readers;
        runs.push_back(row);
    }
    for (const SweepGroup& group : report.groups) {
        nlohmann::json row = {{"group", group.group}, {"runs", group.runs}};
        for (const auto& [key, value] : group.settings) row["settings"][key] = value;
        for (const SweepMetric& metric : report.metrics) {
            const MetricStats& s = group.metrics.at(metric.name);
            row["metrics"][metric.name] = {{"n", s.n},
                                           {"mean", number_or_null(s.mean)},
                                           {"sd", number_or_null(s.sd)},
                                           {"min", number_or_null(s.min)},
                                           {"max", number_or_null(s.max)},
                                           {"ci95", number_or_null(s.ci95)},
                                           {"values", group.values.count(metric.name) ? group.values.at(metric.name)
                                                                                      : std::vector<double>{}}};
        }
        for (const auto& [kind, count] : group.readers)
            row["heads_reading"][kind] = {{"inspected", count.inspected}, {"with_a_reader", count.with_reader},
                                          {"heads", count.heads}};
        groups.push_back(row);
    }
    return {{"sweep", sweep_spec_to_json(report.spec)},
            {"definitions",
             {{"sd", "sample standard deviation over the group's seeds (n - 1 in the denominator)"},
              {"ci95", "half-width of the 95 % interval for the mean: t(0.975, n - 1) * sd / sqrt(n)"},
              {"heads_reading", "per answer kind, the heads that read it by the inspect report's rule: at least 0.3 of "
                                "the head's attention at the answer on the answer's place in the story, and at least "
                                "twice as much as for any other kind; per group, in how many inspected runs some head "
                                "does, and how often each head does"}}},
            {"groups", groups},
            {"runs", runs}};
}

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
static std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string out = "\"";
    for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

static std::string format(double value, const char* pattern = "%.6g") {
    if (!std::isfinite(value)) return "";
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, pattern, value);
    return buffer;
}

std::string sweep_report_csv(const SweepReport& report) {
    std::string csv = "group";
    for (const SweepAxis& axis : report.spec.axes) csv += "," + csv_field(axis.key);
    csv += ",seed,dir,finished";
    for (const SweepMetric& metric : report.metrics) csv += "," + metric.name;
    csv += ",tokens_per_second";
    for (const std::string& kind : report.reader_kinds) csv += ",heads_reading_" + kind;
    csv += "\n";
    for (const SweepRunResult& result : report.results) {
        csv += csv_field(result.run.group);
        for (const auto& [key, value] : result.run.settings) csv += "," + csv_field(value);
        csv += "," + std::to_string(result.run.seed) + "," + csv_field(result.run.dir) + "," +
               (result.finished ? "true" : "false");
        for (const SweepMetric& metric : report.metrics)
            csv += "," + (result.finished ? format(summary_metric(result.summary, metric.name), "%.10g") : "");
        csv += "," + (result.finished ? format(summary_metric(result.summary, "tokens_per_second"), "%.10g") : "");
        for (const std::string& kind : report.reader_kinds) {  // "L1H1 L1H0", or "none"; empty if not inspected
            std::string heads;
            const auto found = result.readers.find(kind);
            if (found != result.readers.end())
                for (const std::string& head : found->second) heads += (heads.empty() ? "" : " ") + head;
            csv += "," + (result.inspected ? (heads.empty() ? std::string("none") : heads) : std::string());
        }
        csv += "\n";
    }
    return csv;
}

// "0.4365 ± 0.0021 (0.4341–0.4390)"; accuracies as percentages.
static std::string stats_cell(const SweepMetric& metric, const MetricStats& s) {
    if (s.n == 0) return "-";
    const bool percent = metric.name.rfind("probe_", 0) == 0;
    const double scale = percent ? 100.0 : 1.0;
    const char* pattern = percent ? "%.1f" : metric.name == "train_seconds" ? "%.1f" : "%.4f";
    std::string cell = format(scale * s.mean, pattern);
    if (s.n >= 2) cell += " ± " + format(scale * s.sd, pattern);
    cell += " (" + format(scale * s.min, pattern) + "–" + format(scale * s.max, pattern) + ")";
    return cell + (percent ? " %" : "");
}

// Display width of UTF-8 text, counting each code point as one column (the table's own
// characters, ± and –, are single-width).
static size_t columns(const std::string& text) {
    size_t n = 0;
    for (unsigned char c : text) n += (c & 0xC0) != 0x80;
    return n;
}

// "reads the name" for who, "reads the colour" for colour, "reads <kind>" otherwise.
static std::string reads_heading(const std::string& kind) {
    if (kind == "who") return "reads the name";
    if (kind == "colour") return "reads the colour";
    return "reads " + kind;
}

// "5/5: L1H1 ×3, L1H0 ×2" — the heads most often reading first.
static std::string readers_cell(const ReaderCount& count) {
    std::string cell = std::to_string(count.with_reader) + "/" + std::to_string(count.inspected);
    std::vector<std::pair<std::string, int64_t>> heads(count.heads.begin(), count.heads.end());
    std::stable_sort(heads.begin(), heads.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (size_t i = 0; i < heads.size(); ++i)
        cell += (i == 0 ? ": " : ", ") + heads[i].first + " ×" + std::to_string(heads[i].second);
    return cell;
}

std::string sweep_report_table(const SweepReport& report) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> heading = {"group", "n"};
    for (const SweepMetric& metric : report.metrics) heading.push_back(metric.heading);
    for (const std::string& kind : report.reader_kinds) heading.push_back(reads_heading(kind));
    rows.push_back(heading);
    for (const SweepGroup& group : report.groups) {
        const int64_t finished = group.metrics.at("val_loss").n;
        std::vector<std::string> row = {group.group, std::to_string(finished) +
                                                         (finished < group.runs ? "/" + std::to_string(group.runs) : "")};
        for (const SweepMetric& metric : report.metrics) row.push_back(stats_cell(metric, group.metrics.at(metric.name)));
        for (const std::string& kind : report.reader_kinds) {
            const auto count = group.readers.find(kind);
            row.push_back(count == group.readers.end() ? "-" : readers_cell(count->second));
        }
        rows.push_back(row);
    }
    std::vector<size_t> width(heading.size(), 0);
    for (const auto& row : rows)
        for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], columns(row[i]));
    std::string table;
    for (const auto& row : rows) {
        for (size_t i = 0; i < row.size(); ++i) {
            table += row[i];
            if (i + 1 < row.size()) table += std::string(width[i] - columns(row[i]) + 2, ' ');
        }
        table += '\n';
    }
    table += "mean ± sample sd (min–max) over each group's seeds; n: finished runs of the group\n";
    if (!report.reader_kinds.empty())
        table += "reads: in how many inspected seeds some head reads the answer by inspect's rule, and which heads (× seeds)\n";
    return table;
}

std::string sweep_report_svg(const SweepReport& report) {
    // One panel per metric (train time left out): each group's runs as dots, its mean as a
    // bar and the 95 % interval for the mean as a line.
    std::vector<SweepMetric> shown;
    for (const SweepMetric& metric : report.metrics)
        if (metric.name != "train_seconds") shown.push_back(metric);
    const double panel_width = 640, panel_height = 220, left = 72, right = 16, top = 28, bottom = 56;
    const double height = panel_height * static_cast<double>(shown.size());
    const size_t groups = report.groups.size();
    std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + format(panel_width, "%.0f") +
                      "\" height=\"" + format(height, "%.0f") + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    for (size_t p = 0; p < shown.size(); ++p) {
        const SweepMetric& metric = shown[p];
        const double y0 = panel_height * static_cast<double>(p);
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (const SweepGroup& group : report.groups) {
            const auto values = group.values.find(metric.name);
            if (values != group.values.end())
                for (double v : values->second) lo = std::min(lo, v), hi = std::max(hi, v);
            const MetricStats& s = group.metrics.at(metric.name);
            if (std::isfinite(s.ci95)) lo = std::min(lo, s.mean - s.ci95), hi = std::max(hi, s.mean + s.ci95);
        }
        if (!std::isfinite(lo)) lo = 0, hi = 1;
        if (hi - lo < 1e-12) lo -= 0.5 * std::max(1e-6, std::abs(lo) * 0.01), hi += 0.5 * std::max(1e-6, std::abs(hi) * 0.01);
        const double pad = 0.08 * (hi - lo);
        lo -= pad, hi += pad;
        const double plot_top = y0 + top, plot_bottom = y0 + panel_height - bottom;
        auto y_of = [&](double v) { return plot_bottom - (v - lo) / (hi - lo) * (plot_bottom - plot_top); };
        auto x_of = [&](size_t g) {
            return left + (static_cast<double>(g) + 0.5) / static_cast<double>(std::max<size_t>(groups, 1)) *
                              (panel_width - left - right);
        };
        svg += "<text x=\"" + format(left, "%.0f") + "\" y=\"" + format(y0 + 18, "%.0f") + "\" font-weight=\"bold\">" +
               xml_escape(metric.heading) + ": each seed (dot), mean (bar), 95 % interval for the mean (line)</text>\n";
        svg += "<line x1=\"" + format(left, "%.1f") + "\" y1=\"" + format(plot_top, "%.1f") + "\" x2=\"" +
               format(left, "%.1f") + "\" y2=\"" + format(plot_bottom, "%.1f") + "\" stroke=\"#888\"/>\n";
        for (int tick = 0; tick <= 4; ++tick) {
            const double v = lo + (hi - lo) * tick / 4.0;
            svg += "<text x=\"" + format(left - 6, "%.1f") + "\" y=\"" + format(y_of(v) + 4, "%.1f") +
                   "\" text-anchor=\"end\" fill=\"#555\">" + format(v, "%.4g") + "</text>\n";
        }
        for (size_t g = 0; g < groups; ++g) {
            const SweepGroup& group = report.groups[g];
            const double x = x_of(g);
            svg += "<text x=\"" + format(x, "%.1f") + "\" y=\"" + format(plot_bottom + 18, "%.1f") +
                   "\" text-anchor=\"middle\">" + xml_escape(group.group) + "</text>\n";
            const auto values = group.values.find(metric.name);
            if (values != group.values.end())
                for (size_t i = 0; i < values->second.size(); ++i) {
                    const double dx = (static_cast<double>(i) - 0.5 * static_cast<double>(values->second.size() - 1)) * 5;
                    svg += "<circle cx=\"" + format(x - 24 + dx, "%.1f") + "\" cy=\"" + format(y_of(values->second[i]), "%.1f") +
                           "\" r=\"3\" fill=\"#4477aa\" fill-opacity=\"0.7\"/>\n";
                }
            const MetricStats& s = group.metrics.at(metric.name);
            if (s.n == 0) continue;
            svg += "<line x1=\"" + format(x - 4, "%.1f") + "\" y1=\"" + format(y_of(s.mean), "%.1f") + "\" x2=\"" +
                   format(x + 20, "%.1f") + "\" y2=\"" + format(y_of(s.mean), "%.1f") + "\" stroke=\"#cc3311\" stroke-width=\"2\"/>\n";
            if (std::isfinite(s.ci95))
                svg += "<line x1=\"" + format(x + 8, "%.1f") + "\" y1=\"" + format(y_of(s.mean - s.ci95), "%.1f") +
                       "\" x2=\"" + format(x + 8, "%.1f") + "\" y2=\"" + format(y_of(s.mean + s.ci95), "%.1f") +
                       "\" stroke=\"#cc3311\"/>\n";
        }
    }
    return svg + "</svg>\n";
}

std::string write_sweep_report(const SweepReport& report, const std::string& out_dir) {
    write_file_atomic((fs::path(out_dir) / "sweep.json").string(), sweep_report_json(report).dump(2) + "\n");
    write_file_atomic((fs::path(out_dir) / "sweep.csv").string(), sweep_report_csv(report));
    write_file_atomic((fs::path(out_dir) / "sweep.svg").string(), sweep_report_svg(report));
    return sweep_report_table(report);
}

}  // namespace tinyformer
