// --view terminal: where each character reads, in text a terminal shows.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/inspect/inspect_report.hpp"

namespace tinyformer {

int display_width(char32_t c) {
    // East Asian Wide (W) and Fullwidth (F) blocks of Unicode's EastAsianWidth.txt that text
    // here can hold: Hangul Jamo, CJK radicals to Yi (punctuation 。？ included), Hangul
    // syllables, CJK compatibility ideographs, vertical and small forms, fullwidth forms
    // (！？，：), CJK extension planes.
    const bool wide = (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF && c != 0x303F) ||
                      (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
                      (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x20000 && c <= 0x3FFFD);
    return wide ? 2 : 1;
}

// A character padded to exactly two terminal columns.
static std::string two_columns(char32_t c) {
    const std::string label = c == U'\n' ? "\\n" : c == U'\t' ? "\\t" : c < 0x20 ? "?" : encode_utf8(c);
    return (c == U'\n' || c == U'\t' || display_width(c) == 2) ? label : label + " ";
}

// A weight as a two-column shade.
static const char* shade(double w) {
    if (w < 0.1) return " .";
    if (w < 0.3) return "░░";
    if (w < 0.5) return "▒▒";
    if (w < 0.75) return "▓▓";
    return "██";
}

std::string terminal_view(const AttentionMaps& maps) {
    const int64_t T = maps.length();
    std::string out;
    char number[48];
    for (int64_t l = 0; l < maps.layers; ++l)
        for (int64_t h = 0; h < maps.heads; ++h) {
            const float* a = maps.map(l, h);
            out += "== L" + std::to_string(l) + "H" + std::to_string(h) + ": layer " + std::to_string(l) + ", head " +
                   std::to_string(h) + " — where each character reads ==\n";
            for (int64_t i = 0; i < T; ++i) {
                std::vector<int64_t> order(i + 1);
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return a[i * T + x] > a[i * T + y]; });
                std::snprintf(number, sizeof number, "%3lld ", static_cast<long long>(i));
                out += number + two_columns(maps.text[i]) + " →";
                for (size_t k = 0; k < std::min<size_t>(3, order.size()); ++k) {
                    const int64_t j = order[k];
                    std::snprintf(number, sizeof number, "(%lld) %.2f", static_cast<long long>(j), a[i * T + j]);
                    out += (k ? ", " : " ") + char_label(maps.text[j]) + number;
                }
                out += "\n";
            }
            // the grid: rows query, columns read; blank = the future
            out += "\n     ";
            for (int64_t j = 0; j < T; ++j) out += two_columns(maps.text[j]);
            out += "\n";
            for (int64_t i = 0; i < T; ++i) {
                out += "   " + two_columns(maps.text[i]);
                for (int64_t j = 0; j < T; ++j) out += j > i ? "  " : shade(a[i * T + j]);
                out += "\n";
            }
            out += "     shades: . < 0.1 ≤ ░ < 0.3 ≤ ▒ < 0.5 ≤ ▓ < 0.75 ≤ █\n\n";
        }
    return out;
}

}  // namespace tinyformer
