// Heatmaps as SVG.
//   attention_heatmap_svg  one head's attention: rows are query positions, columns the
//                          positions they read, both labelled with the characters; the causal
//                          future greyed out; one 0–1 colour scale for every head, so that two
//                          pictures can be compared by eye; each cell's weight in a <title> tooltip.
//   signed_heatmap_panel   a signed matrix (a head's weights, a circuit over the vocabulary) on
//                          a symmetric blue–white–red scale, with optional labels and groups;
//                          its cells are one embedded PNG, a pixel a cell (png.hpp): a 79×79
//                          circuit's SVG is 34 kB, not 630 as with a <rect> and a <title> per
//                          cell, and has no per-cell tooltips.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer {

// A font stack that renders Chinese on Linux, macOS and Windows.
inline constexpr const char* kCjkFontStack =
    "'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei', sans-serif";

// The shared scale: a weight in [0, 1] → a CSS colour, white through blue to near-black.
std::string attention_colour(double weight);

// A character as a label: itself, or a visible stand-in for space (␣), newline (↵), tab (⇥)
// and other control characters (�).
std::string char_label(char32_t c);

// `weights` is [T,T], T = text.size(). A standalone SVG document (it can also be inlined in
// HTML); `title` is drawn above the grid.
std::string attention_heatmap_svg(const std::u32string& text, const float* weights, const std::string& title);

// ---- signed matrices ----

// A signed value → a CSS colour on a symmetric scale: −limit dark blue, 0 white, +limit dark
// red (ColorBrewer "RdBu", 11 classes, interpolated); values beyond ±limit take the end colours.
std::string signed_colour(double value, double limit);

// Consecutive rows (or columns) that belong together: a name and how many.
using Bands = std::vector<std::pair<std::string, int64_t>>;

struct SignedHeatmap {
    std::string title;                                   // drawn above the grid
    std::string subtitle;                                // a smaller line under it, or none
    int64_t rows = 0, columns = 0;
    std::vector<double> values;                          // [rows, columns], row-major
    double limit = 1;                                    // the colour scale runs over −limit … +limit
    double cell = 4;                                     // px per cell
    std::vector<std::string> row_labels, column_labels;  // one per row / column, or none
    Bands row_bands, column_bands;                       // groups of rows / columns, or none
    std::string rows_are, columns_are;                   // the axes in words, under the grid
    // Small maps only (a few hundred cells): each cell also an invisible <rect> whose <title>
    // is "row label, column label: value", shown on hover (some 60 bytes a cell).
    bool tooltips = false;
};

// SVG elements drawn from (0, 0), and the room they take.
struct SvgPanel {
    std::string elements;
    double width = 0, height = 0;
};
SvgPanel signed_heatmap_panel(const SignedHeatmap& map);

// A standalone SVG document: the panels left to right, `gap` px apart, on white.
std::string svg_document(const std::vector<SvgPanel>& panels, double gap = 24);

}  // namespace tinyformer
