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

}  // namespace tinyformer
