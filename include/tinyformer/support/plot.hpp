// A minimal SVG line chart (the run's loss curves): no dependencies, a self-contained file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer {

struct Series {
    std::string label;
    std::string colour;                          // CSS colour
    std::vector<std::pair<double, double>> points;  // (x, y)
    bool dashed = false;                         // a dashed line (a reference among solid ones)
};

// The y axis spans the data, padded by 5 %, or exactly `y_range` (low, high) when given.
std::string line_chart_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series,
                           std::optional<std::pair<double, double>> y_range = std::nullopt);

std::string xml_escape(const std::string& text);
// value with 4 significant digits (printf's %.4g): coordinates and values in an SVG.
std::string svg_number(double value);

// value with `digits` decimals (printf's %.*f), for figures in reports and charts.
std::string fixed(double value, int digits = 2);
// share (0.25) as a percentage with `digits` decimals: "25 %".
std::string percent(double share, int digits = 0);
// A whole number with a comma between thousands: 26245129 → "26,245,129".
std::string with_commas(int64_t n);

}  // namespace tinyformer
