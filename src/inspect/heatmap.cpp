#include "tinyformer/inspect/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tinyformer/data/text.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

std::string attention_colour(double weight) {
    // ColorBrewer "Blues" (9 classes), interpolated: equal steps of weight, equal steps of colour.
    static const int stops[9][3] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                                    {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
    const double x = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, 1.0) * 8;
    const int i = std::min(static_cast<int>(x), 7);
    const double f = x - i;
    char hex[8];
    int rgb[3];
    for (int c = 0; c < 3; ++c) rgb[c] = static_cast<int>(std::lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c])));
    std::snprintf(hex, sizeof hex, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    return hex;
}

std::string char_label(char32_t c) {
    if (c == U' ') return "␣";
    if (c == U'\n') return "↵";
    if (c == U'\t') return "⇥";
    if (c < 0x20 || c == 0x7F) return "�";
    return encode_utf8(c);
}

std::string attention_heatmap_svg(const std::u32string& text, const float* weights, const std::string& title) {
    const int64_t T = static_cast<int64_t>(text.size());
    const double cell = T <= 24 ? 20 : T <= 40 ? 15 : 11;  // px
    const double label = cell + 6, top = 28 + label, left = label + 4;
    const double grid = cell * static_cast<double>(T), scale_height = 34;
    const double width = std::max(left + grid + 8, 230.0), height = top + grid + 8 + scale_height;
    const double font = std::max(9.0, cell - 5);

    std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) + "\" height=\"" +
                      svg_number(height) + "\" viewBox=\"0 0 " + svg_number(width) + " " + svg_number(height) + "\" font-family=\"" +
                      std::string(kCjkFontStack) + "\" font-size=\"" + svg_number(font) + "\">\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += "<text x=\"" + svg_number(left) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" + xml_escape(title) +
           "</text>\n";
    // labels: columns (positions read) along the top, rows (queries) down the left
    svg += "<g text-anchor=\"middle\" fill=\"#333\">\n";
    for (int64_t t = 0; t < T; ++t) {
        const std::string c = xml_escape(char_label(text[t]));
        svg += "<text x=\"" + svg_number(left + (t + 0.5) * cell) + "\" y=\"" + svg_number(top - 6) + "\">" + c + "</text>";
        svg += "<text x=\"" + svg_number(left - label / 2 - 2) + "\" y=\"" + svg_number(top + (t + 0.5) * cell + font * 0.36) +
               "\">" + c + "</text>\n";
    }
    svg += "</g>\n";
    // cells: the readable past and present coloured by weight, the future grey
    svg += "<g stroke=\"white\" stroke-width=\"0.5\">\n";
    for (int64_t i = 0; i < T; ++i) {
        for (int64_t j = 0; j <= i; ++j) {
            const double w = weights[i * T + j];
            svg += "<rect x=\"" + svg_number(left + j * cell) + "\" y=\"" + svg_number(top + i * cell) + "\" width=\"" + svg_number(cell) +
                   "\" height=\"" + svg_number(cell) + "\" fill=\"" + attention_colour(w) + "\"><title>" +
                   std::to_string(i) + " " + xml_escape(char_label(text[i])) + " reads " + std::to_string(j) + " " +
                   xml_escape(char_label(text[j])) + ": " + svg_number(w) + "</title></rect>";
        }
        if (i + 1 < T)
            svg += "<rect x=\"" + svg_number(left + (i + 1) * cell) + "\" y=\"" + svg_number(top + i * cell) + "\" width=\"" +
                   svg_number(cell * static_cast<double>(T - i - 1)) + "\" height=\"" + svg_number(cell) +
                   "\" fill=\"#d4d4d4\"><title>the future: a causal head cannot read it</title></rect>";
        svg += "\n";
    }
    svg += "</g>\n";
    // the shared colour scale
    const double scale_y = top + grid + 14;
    svg += "<g font-size=\"10\" fill=\"#333\">\n";
    for (int k = 0; k < 20; ++k)
        svg += "<rect x=\"" + svg_number(left + 20 + k * 8) + "\" y=\"" + svg_number(scale_y) + "\" width=\"8\" height=\"10\" fill=\"" +
               attention_colour((k + 0.5) / 20) + "\"/>";
    svg += "\n<text x=\"" + svg_number(left + 16) + "\" y=\"" + svg_number(scale_y + 9) + "\" text-anchor=\"end\">0</text>";
    svg += "<text x=\"" + svg_number(left + 184) + "\" y=\"" + svg_number(scale_y + 9) + "\">1</text>";
    svg += "<text x=\"" + svg_number(left + 20) + "\" y=\"" + svg_number(scale_y + 22) + "\">weight (rows: query, columns: read)</text>\n";
    svg += "</g>\n</svg>\n";
    return svg;
}

}  // namespace tinyformer
