// Signed matrices as heatmaps: a head's weights, a circuit over the vocabulary. Zero is white,
// positive red, negative blue, on a scale symmetric about zero, so that the sign and the size
// of every cell can be read by eye and two pictures on the same scale can be compared.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/inspect/png.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

namespace {

// A number for a scale's end: 3 significant digits, with a real minus sign.
std::string scale_label(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3g", std::abs(value));
    return (value < 0 ? "−" : value > 0 ? "+" : "") + std::string(buffer);
}

// About how wide a line of text is drawn, in px: 0.6 em for a Latin letter, 1 em for a CJK one.
double text_width(const std::string& content, double font) {
    double em = 0;
    for (size_t i = 0; i < content.size(); ++i) {
        const unsigned char byte = static_cast<unsigned char>(content[i]);
        if ((byte & 0xC0) == 0x80) continue;  // a continuation byte of the same character
        em += byte >= 0xE3 ? 1.0 : 0.6;       // 3-byte sequences from U+3000 on: CJK
    }
    return em * font;
}

std::string text(double x, double y, const std::string& content, const std::string& attributes = "") {
    return "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" + (attributes.empty() ? "" : " " + attributes) + ">" +
           xml_escape(content) + "</text>";
}

// The colour of a value as its three 8-bit channels.
std::array<uint8_t, 3> signed_rgb(double value, double limit) {
    // ColorBrewer "RdBu" (11 classes), from the negative end (blue) to the positive (red).
    static const int stops[11][3] = {{5, 48, 97},    {33, 102, 172},  {67, 147, 195}, {146, 197, 222},
                                     {209, 229, 240}, {247, 247, 247}, {253, 219, 199}, {244, 165, 130},
                                     {214, 96, 77},   {178, 24, 43},   {103, 0, 31}};
    const double share = limit > 0 && std::isfinite(value) ? std::clamp(value / limit, -1.0, 1.0) : 0.0;
    const double x = (share + 1) * 5;  // 0 … 10
    const int i = std::min(static_cast<int>(x), 9);
    const double f = x - i;
    std::array<uint8_t, 3> rgb;
    for (int c = 0; c < 3; ++c)
        rgb[c] = static_cast<uint8_t>(std::lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c])));
    return rgb;
}

}  // namespace

std::string signed_colour(double value, double limit) {
    const std::array<uint8_t, 3> rgb = signed_rgb(value, limit);
    char hex[8];
    std::snprintf(hex, sizeof hex, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    return hex;
}

SvgPanel signed_heatmap_panel(const SignedHeatmap& map) {
    const double cell = map.cell, label_font = std::min(14.0, std::max(7.0, cell - 1));
    const bool row_labels = !map.row_labels.empty(), column_labels = !map.column_labels.empty();
    // Margins: the title, then the column groups' names (written upwards) and the column labels
    // above the grid; the row groups' names and the row labels left of it, as wide as the
    // longest row label (a character is about 0.62 of the font size wide, a CJK one 1).
    const double band_room = 78, label_room = cell + 6;
    double row_label_room = label_room;
    for (const std::string& label : map.row_labels) {
        double width = 0;
        for (const char32_t c : decode_utf8(label, "row label")) width += c < 0x2E80 ? 0.62 : 1.0;
        row_label_room = std::max(row_label_room, width * label_font + 2);
    }
    const double title_room = map.subtitle.empty() ? 24 : 38;
    const double top = title_room + (map.column_bands.empty() ? 0 : band_room) + (column_labels ? label_room : 4);
    const double left = (map.row_bands.empty() ? 0 : band_room) + (row_labels ? row_label_room : 0) + 4;
    const double grid_width = cell * static_cast<double>(map.columns), grid_height = cell * static_cast<double>(map.rows);

    std::string svg = "<g font-family=\"" + std::string(kCjkFontStack) + "\" fill=\"#333\">\n";
    svg += text(left, 16, map.title, "font-size=\"13\" font-weight=\"bold\"") + "\n";
    if (!map.subtitle.empty()) svg += text(left, 31, map.subtitle, "font-size=\"11\"") + "\n";

    // Labels: one character (or name) per row and per column.
    svg += "<g font-size=\"" + svg_number(label_font) + "\" text-anchor=\"middle\">\n";
    if (column_labels)
        for (int64_t j = 0; j < map.columns; ++j)
            svg += text(left + (j + 0.5) * cell, top - 4, map.column_labels[j]);
    if (row_labels)
        for (int64_t i = 0; i < map.rows; ++i)
            svg += text(left - row_label_room / 2 - 2, top + (i + 0.5) * cell + label_font * 0.36, map.row_labels[i]);
    svg += "\n</g>\n";

    // The cells: one pixel each in a PNG embedded in the SVG, stretched to `cell` px a pixel
    // without smoothing (image-rendering: pixelated), so that every cell is a sharp square of its
    // colour. One element, a few bytes a cell, where a <rect> per cell took some sixty.
    if (map.rows > 0 && map.columns > 0) {
        RgbImage cells{map.columns, map.rows, {}};
        cells.pixels.reserve(map.values.size() * 3);
        for (const double value : map.values) {
            const std::array<uint8_t, 3> rgb = signed_rgb(value, map.limit);
            cells.pixels.insert(cells.pixels.end(), rgb.begin(), rgb.end());
        }
        svg += "<image x=\"" + svg_number(left) + "\" y=\"" + svg_number(top) + "\" width=\"" + svg_number(grid_width) + "\" height=\"" +
               svg_number(grid_height) + "\" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" href=\"" +
               png_data_uri(cells) + "\"/>\n";
    }
    if (map.tooltips) {
        svg += "<g fill-opacity=\"0\">\n";
        for (int64_t i = 0; i < map.rows; ++i)
            for (int64_t j = 0; j < map.columns; ++j) {
                const std::string row = row_labels ? map.row_labels[i] : std::to_string(i);
                const std::string column = column_labels ? map.column_labels[j] : std::to_string(j);
                svg += "<rect x=\"" + svg_number(left + j * cell) + "\" y=\"" + svg_number(top + i * cell) + "\" width=\"" + svg_number(cell) +
                       "\" height=\"" + svg_number(cell) + "\"><title>" + xml_escape(row + ", " + column + ": " +
                       fixed(map.values[i * map.columns + j], 3)) + "</title></rect>\n";
            }
        svg += "</g>\n";
    }

    // Groups: a line between neighbouring groups across the grid, each group's name beside it.
    svg += "<g font-size=\"10\" stroke-width=\"0.8\">\n";
    int64_t start = 0;
    for (const auto& [name, count] : map.row_bands) {
        if (start > 0)
            svg += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + grid_width) + "\" y1=\"" + svg_number(top + start * cell) +
                   "\" y2=\"" + svg_number(top + start * cell) + "\" stroke=\"#222\"/>";
        if (count > 0)
            svg += text(left - (row_labels ? row_label_room : 0) - 4, top + (start + count / 2.0) * cell + 3.5, name,
                        "text-anchor=\"end\"");
        start += count;
    }
    start = 0;
    for (const auto& [name, count] : map.column_bands) {
        if (start > 0)
            svg += "<line y1=\"" + svg_number(top) + "\" y2=\"" + svg_number(top + grid_height) + "\" x1=\"" + svg_number(left + start * cell) +
                   "\" x2=\"" + svg_number(left + start * cell) + "\" stroke=\"#222\"/>";
        if (count > 0) {  // written upwards, ending just above the column labels
            const double x = left + (start + count / 2.0) * cell + 3.5, y = top - (column_labels ? label_room : 4) - 4;
            svg += text(x, y, name, "transform=\"rotate(-90 " + svg_number(x) + " " + svg_number(y) + ")\"");
        }
        start += count;
    }
    svg += "\n</g>\n";

    // Under the grid: what the axes are, and the colour scale.
    double y = top + grid_height + 14;
    svg += "<g font-size=\"10\">\n";
    double text_right = left + text_width(map.title, 13);
    text_right = std::max(text_right, left + text_width(map.subtitle, 11));
    for (const auto& [axis, what] : {std::pair{"rows: ", map.rows_are}, std::pair{"columns: ", map.columns_are}}) {
        if (what.empty()) continue;
        svg += text(left, y, axis + what) + "\n";
        text_right = std::max(text_right, left + text_width(axis + what, 10));
        y += 13;
    }
    const int swatches = 21;
    const double swatch = 5;
    for (int k = 0; k < swatches; ++k) {
        const double value = map.limit * (2.0 * k / (swatches - 1) - 1);
        svg += "<rect x=\"" + svg_number(left + 34 + k * swatch) + "\" y=\"" + svg_number(y) + "\" width=\"" + svg_number(swatch) +
               "\" height=\"10\" fill=\"" + signed_colour(value, map.limit) + "\"/>";
    }
    svg += text(left + 30, y + 9, scale_label(-map.limit), "text-anchor=\"end\"");
    svg += text(left + 38 + swatches * swatch, y + 9, scale_label(map.limit));
    svg += "\n</g>\n</g>\n";

    SvgPanel panel;
    panel.elements = svg;
    panel.width = std::max({left + grid_width, left + 40 + swatches * swatch + 40, text_right}) + 8;
    panel.height = y + 18;
    return panel;
}

std::string svg_document(const std::vector<SvgPanel>& panels, double gap) {
    double width = 0, height = 0;
    for (const SvgPanel& panel : panels) {
        width += (width > 0 ? gap : 0) + panel.width;
        height = std::max(height, panel.height);
    }
    std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) + "\" height=\"" + svg_number(height) +
                      "\" viewBox=\"0 0 " + svg_number(width) + " " + svg_number(height) + "\">\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    double x = 0;
    for (const SvgPanel& panel : panels) {
        svg += "<g transform=\"translate(" + svg_number(x) + ",0)\">\n" + panel.elements + "</g>\n";
        x += panel.width + gap;
    }
    return svg + "</svg>\n";
}

}  // namespace tinyformer
