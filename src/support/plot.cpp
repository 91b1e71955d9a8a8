#include "tinyformer/support/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tinyformer {

std::string xml_escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += c;
        }
    }
    return out;
}

static std::string number(double value, const char* format = "%.4g") {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, format, value);
    return buffer;
}

std::string svg_number(double value) { return number(value); }

std::string line_chart_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series, std::optional<std::pair<double, double>> y_range) {
    const double width = 640, height = 400, left = 64, right = 16, top = 36, bottom = 48;
    double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_min = x_min, y_max = -x_min;
    for (const Series& s : series)
        for (auto [x, y] : s.points) {
            if (!std::isfinite(y)) continue;
            x_min = std::min(x_min, x), x_max = std::max(x_max, x);
            y_min = std::min(y_min, y), y_max = std::max(y_max, y);
        }
    if (!std::isfinite(x_min)) x_min = 0, x_max = 1, y_min = 0, y_max = 1;
    if (x_max == x_min) x_max = x_min + 1;
    if (y_max == y_min) y_max = y_min + 1;
    if (y_range && y_range->second > y_range->first) {
        y_min = y_range->first, y_max = y_range->second;
    } else {
        const double pad = 0.05 * (y_max - y_min);
        y_min -= pad, y_max += pad;
    }
    auto px = [&](double x) { return left + (x - x_min) / (x_max - x_min) * (width - left - right); };
    auto py = [&](double y) { return top + (y_max - y) / (y_max - y_min) * (height - top - bottom); };

    std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) + "\" height=\"" +
                      number(height) + "\" viewBox=\"0 0 " + number(width) + " " + number(height) +
                      "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += "<text x=\"" + number(width / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" +
           xml_escape(title) + "</text>\n";
    // axes with five ticks each
    svg += "<g stroke=\"#888\" fill=\"none\"><rect x=\"" + number(left) + "\" y=\"" + number(top) + "\" width=\"" +
           number(width - left - right) + "\" height=\"" + number(height - top - bottom) + "\"/></g>\n";
    for (int i = 0; i <= 4; ++i) {
        double x = x_min + i * (x_max - x_min) / 4, y = y_min + i * (y_max - y_min) / 4;
        svg += "<text x=\"" + number(px(x)) + "\" y=\"" + number(height - bottom + 16) +
               "\" text-anchor=\"middle\">" + number(x, "%.0f") + "</text>\n";
        svg += "<text x=\"" + number(left - 6) + "\" y=\"" + number(py(y) + 4) + "\" text-anchor=\"end\">" +
               number(y, "%.3g") + "</text>\n";
        svg += "<line x1=\"" + number(left) + "\" x2=\"" + number(width - right) + "\" y1=\"" + number(py(y)) +
               "\" y2=\"" + number(py(y)) + "\" stroke=\"#eee\"/>\n";
    }
    svg += "<text x=\"" + number(width / 2) + "\" y=\"" + number(height - 12) + "\" text-anchor=\"middle\">" +
           xml_escape(x_label) + "</text>\n";
    svg += "<text transform=\"translate(16 " + number(height / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
           xml_escape(y_label) + "</text>\n";
    double legend_y = top + 16;
    for (const Series& s : series) {
        std::string path;
        for (auto [x, y] : s.points)
            if (std::isfinite(y)) path += (path.empty() ? "" : " ") + number(px(x), "%.1f") + "," + number(py(y), "%.1f");
        const std::string dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
        svg += "<polyline fill=\"none\" stroke=\"" + xml_escape(s.colour) + "\" stroke-width=\"1.5\"" + dash +
               " points=\"" + path + "\"/>\n";
        if (s.points.size() < 40)
            for (auto [x, y] : s.points)
                if (std::isfinite(y))
                    svg += "<circle cx=\"" + number(px(x), "%.1f") + "\" cy=\"" + number(py(y), "%.1f") +
                           "\" r=\"2.5\" fill=\"" + xml_escape(s.colour) + "\"><title>" + xml_escape(s.label) +
                           " at " + number(x, "%.0f") + ": " + number(y) + "</title></circle>\n";
        svg += "<line x1=\"" + number(width - right - 120) + "\" x2=\"" + number(width - right - 100) + "\" y1=\"" +
               number(legend_y - 4) + "\" y2=\"" + number(legend_y - 4) + "\" stroke=\"" + xml_escape(s.colour) +
               "\" stroke-width=\"2\"" + (s.dashed ? " stroke-dasharray=\"4 2\"" : "") + "/>\n";
        svg += "<text x=\"" + number(width - right - 94) + "\" y=\"" + number(legend_y) + "\">" + xml_escape(s.label) +
               "</text>\n";
        legend_y += 16;
    }
    svg += "</svg>\n";
    return svg;
}

std::string fixed(double value, int digits) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    return buffer;
}

std::string percent(double share, int digits) { return fixed(100 * share, digits) + " %"; }

std::string with_commas(int64_t n) {
    const std::string digits = std::to_string(n);
    const size_t sign = n < 0 ? 1 : 0;  // "-1234" → "-1,234"
    std::string text = digits.substr(0, sign);
    for (size_t i = sign; i < digits.size(); ++i) {
        if (i > sign && (digits.size() - i) % 3 == 0) text += ',';
        text += digits[i];
    }
    return text;
}

}  // namespace tinyformer
