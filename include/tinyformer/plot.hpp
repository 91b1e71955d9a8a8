// A minimal SVG line chart (the run's loss curves): no dependencies, a self-contained file.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tinyformer {

struct Series {
    std::string label;
    std::string colour;                          // CSS colour
    std::vector<std::pair<double, double>> points;  // (x, y)
};

std::string line_chart_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<Series>& series);

std::string xml_escape(const std::string& text);

// value with `digits` decimals (printf's %.*f), for figures in reports and charts.
std::string fixed(double value, int digits = 2);

}  // namespace tinyformer
