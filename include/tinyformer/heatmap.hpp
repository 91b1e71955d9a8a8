// One head's attention as an SVG heatmap: rows are query positions, columns the positions
// they read, both labelled with the characters; the causal future greyed out; one 0–1
// colour scale for every head, so that two pictures can be compared by eye; each cell's
// weight in a <title> tooltip.
#pragma once

#include <string>

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

}  // namespace tinyformer
