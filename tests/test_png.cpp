// The PNG writer (png.hpp): its checksums and base64 against the specifications' own test
// values, its bytes against Python's zlib and binascii, and a round trip through a reader
// written here from the specifications (chunks, CRCs, stored deflate blocks, row filters); then
// a signed heatmap's cells, read back from the PNG embedded in its SVG.
#include "catch.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/inspect/png.hpp"

using namespace tinyformer;

namespace {

std::string from_hex(const std::string& hex) {
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    return bytes;
}

uint32_t big_endian(const std::string& bytes, size_t at) {
    uint32_t value = 0;
    for (size_t k = 0; k < 4; ++k) value = (value << 8) | static_cast<uint8_t>(bytes.at(at + k));
    return value;
}

uint32_t little_endian_16(const std::string& bytes, size_t at) {
    return static_cast<uint8_t>(bytes.at(at)) | static_cast<uint32_t>(static_cast<uint8_t>(bytes.at(at + 1))) << 8;
}

// A reader for exactly what png_bytes writes: 8-bit RGB, no interlace, a zlib stream of stored
// deflate blocks, every row filtered with None. Anything else, or a wrong checksum, throws.
struct DecodedPng {
    RgbImage image;
    int stored_blocks = 0;
};

DecodedPng decode_png(const std::string& png) {
    if (png.substr(0, 8) != "\x89PNG\r\n\x1a\n") throw std::runtime_error("no PNG signature");
    DecodedPng decoded;
    std::string zlib;
    bool ended = false;
    for (size_t at = 8; at < png.size();) {  // chunks: length, type, data, CRC of type and data
        const uint32_t length = big_endian(png, at);
        const std::string type = png.substr(at + 4, 4), data = png.substr(at + 8, length);
        if (data.size() != length) throw std::runtime_error(type + " cut off");
        if (big_endian(png, at + 8 + length) != crc32(type + data)) throw std::runtime_error(type + ": wrong CRC");
        if (ended) throw std::runtime_error("a chunk after IEND");
        if (type == "IHDR") {
            decoded.image.width = big_endian(data, 0);
            decoded.image.height = big_endian(data, 4);
            if (data.substr(8) != std::string("\x08\x02\x00\x00\x00", 5)) throw std::runtime_error("not 8-bit RGB");
        } else if (type == "IDAT") {
            zlib += data;
        } else if (type == "IEND") {
            ended = true;
        }
        at += 12 + length;
    }
    if (!ended) throw std::runtime_error("no IEND");

    // zlib: CMF, FLG (a multiple of 31 together), the deflate blocks, the Adler-32.
    if (zlib.size() < 6 || (static_cast<uint8_t>(zlib[0]) & 0x0F) != 8 ||
        (static_cast<uint8_t>(zlib[0]) * 256 + static_cast<uint8_t>(zlib[1])) % 31 != 0)
        throw std::runtime_error("not a zlib header");
    std::string rows;
    size_t at = 2;
    for (bool final_block = false; !final_block;) {
        const uint8_t header = static_cast<uint8_t>(zlib.at(at));
        final_block = header & 1;
        if (((header >> 1) & 3) != 0) throw std::runtime_error("not a stored block");
        const uint32_t length = little_endian_16(zlib, at + 1), complement = little_endian_16(zlib, at + 3);
        if ((length ^ 0xFFFF) != complement) throw std::runtime_error("NLEN is not ~LEN");
        if (at + 5 + length > zlib.size()) throw std::runtime_error("a stored block cut off");
        rows += zlib.substr(at + 5, length);
        at += 5 + length;
        ++decoded.stored_blocks;
    }
    if (at + 4 != zlib.size() || big_endian(zlib, at) != adler32(rows)) throw std::runtime_error("wrong Adler-32");

    // Rows: a filter byte (0, None: the bytes as they are), then width · 3 bytes.
    const size_t row_bytes = static_cast<size_t>(decoded.image.width) * 3;
    if (rows.size() != (row_bytes + 1) * static_cast<size_t>(decoded.image.height))
        throw std::runtime_error("the rows are not width · 3 + 1 bytes each");
    for (size_t start = 0; start < rows.size(); start += row_bytes + 1) {
        if (rows[start] != 0) throw std::runtime_error("a row filter other than None");
        for (size_t k = 1; k <= row_bytes; ++k) decoded.image.pixels.push_back(static_cast<uint8_t>(rows[start + k]));
    }
    return decoded;
}

std::string from_base64(const std::string& text) {
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes;
    uint32_t bits = 0;
    int count = 0;
    for (const char c : text) {
        if (c == '=') break;
        const size_t value = alphabet.find(c);
        if (value == std::string::npos) throw std::runtime_error("not base64");
        bits = (bits << 6) | static_cast<uint32_t>(value);
        count += 6;
        if (count >= 8) {
            count -= 8;
            bytes += static_cast<char>((bits >> count) & 0xFF);
        }
    }
    return bytes;
}

// Every pixel a different colour, so that a swapped channel, row or column shows.
RgbImage pattern(int64_t width, int64_t height) {
    RgbImage image{width, height, {}};
    for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x)
            for (int64_t c = 0; c < 3; ++c) image.pixels.push_back(static_cast<uint8_t>((x * 7 + y * 13 + c * 101) % 256));
    return image;
}

std::vector<uint8_t> rgb(const std::string& hex_colour) {  // "#rrggbb"
    std::vector<uint8_t> out;
    for (size_t i = 1; i < 7; i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex_colour.substr(i, 2), nullptr, 16)));
    return out;
}

}  // namespace

TEST_CASE("png: CRC-32 and Adler-32 give the specifications' values", "[png]") {
    REQUIRE(crc32("IEND") == 0xAE426082u);  // every PNG's last four bytes
    REQUIRE(crc32("123456789") == 0xCBF43926u);  // the CRC catalogue's check value for CRC-32
    REQUIRE(crc32("") == 0u);
    REQUIRE(adler32("Wikipedia") == 0x11E60398u);
    REQUIRE(adler32("") == 1u);
    // Sums past 65521 wrap: 100,000 bytes of 0xFF, as zlib.adler32 gives it.
    REQUIRE(adler32(std::string(100000, '\xff')) == 0x149A302Cu);
}

TEST_CASE("png: base64 gives RFC 4648's test vectors", "[png]") {
    REQUIRE(base64("") == "");
    REQUIRE(base64("f") == "Zg==");
    REQUIRE(base64("fo") == "Zm8=");
    REQUIRE(base64("foo") == "Zm9v");
    REQUIRE(base64("foob") == "Zm9vYg==");
    REQUIRE(base64("fooba") == "Zm9vYmE=");
    REQUIRE(base64("foobar") == "Zm9vYmFy");
    REQUIRE(base64(std::string("\xff\xfe\x00", 3)) == "//4A");  // the alphabet's last two letters
}

TEST_CASE("png: a 2×1 picture is byte for byte what Python's zlib (level 0) and binascii write", "[png]") {
    // A red and a blue pixel. Expected bytes from Python 3: chunks with binascii.crc32, IDAT =
    // zlib.compress(b"\x00" + b"\xff\x00\x00\x00\x00\xff", 0).
    const RgbImage image{2, 1, {255, 0, 0, 0, 0, 255}};
    REQUIRE(png_bytes(image) == from_hex("89504e470d0a1a0a0000000d49484452000000020000000108020000007b40e8dd0000001249444154"
                                         "7801010700f8ff00ff00000000ff070001ff5536bac70000000049454e44ae426082"));
    REQUIRE(png_data_uri(image) == "data:image/png;base64," + base64(png_bytes(image)));
}

TEST_CASE("png: pictures read back pixel for pixel, across several stored blocks", "[png]") {
    for (const auto& [width, height, blocks] : {std::tuple{1, 1, 1}, {3, 2, 1}, {79, 79, 1}, {200, 120, 2}, {300, 300, 5}}) {
        CAPTURE(width, height);
        const RgbImage image = pattern(width, height);
        const DecodedPng decoded = decode_png(png_bytes(image));
        REQUIRE(decoded.image.width == width);
        REQUIRE(decoded.image.height == height);
        REQUIRE(decoded.image.pixels == image.pixels);
        REQUIRE(decoded.stored_blocks == blocks);  // (rows · (3·width + 1)) / 65535, rounded up
    }
    REQUIRE_THROWS_AS(png_bytes(RgbImage{0, 1, {}}), std::invalid_argument);
    REQUIRE_THROWS_AS(png_bytes(RgbImage{2, 1, {1, 2, 3}}), std::invalid_argument);
}

TEST_CASE("png: a signed heatmap's cells are one embedded PNG, one pixel per cell in the cell's colour", "[png][svg]") {
    SignedHeatmap map;
    map.title = "three by two";
    map.rows = 2;
    map.columns = 3;
    map.values = {-2, -1, 0, 0.5, 1, 7};  // 7 is past the scale: the end colour
    map.limit = 2;
    map.cell = 9;
    const std::string svg = signed_heatmap_panel(map).elements;
    const std::string prefix = "href=\"data:image/png;base64,";
    const size_t start = svg.find(prefix);
    REQUIRE(start != std::string::npos);
    REQUIRE(svg.find(prefix, start + 1) == std::string::npos);  // one picture for all cells
    REQUIRE_THAT(svg, ContainsSubstring("width=\"27\" height=\"18\"") && ContainsSubstring("image-rendering:pixelated"));
    const size_t data = start + prefix.size();
    const DecodedPng decoded = decode_png(from_base64(svg.substr(data, svg.find('"', data) - data)));
    REQUIRE(decoded.image.width == 3);
    REQUIRE(decoded.image.height == 2);
    std::vector<uint8_t> expected;
    for (const double value : map.values)
        for (const uint8_t channel : rgb(signed_colour(value, map.limit))) expected.push_back(channel);
    REQUIRE(decoded.image.pixels == expected);
}
