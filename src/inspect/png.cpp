// The PNG writer: see include/tinyformer/inspect/png.hpp for the layout. Every number below is from the
// PNG specification (W3C, 2nd edition), RFC 1950 (zlib), RFC 1951 (deflate) or RFC 4648 (base64).
#include "tinyformer/inspect/png.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace tinyformer {

namespace {

void append_big_endian(std::string& out, uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xFF);
}

void append_little_endian_16(std::string& out, uint32_t value) {
    out += static_cast<char>(value & 0xFF);
    out += static_cast<char>((value >> 8) & 0xFF);
}

// A chunk: length, type, data, CRC-32 of type and data (PNG spec, section 5.3).
void append_chunk(std::string& png, std::string_view type, std::string_view data) {
    append_big_endian(png, static_cast<uint32_t>(data.size()));
    const std::string type_and_data = std::string(type) + std::string(data);
    png += type_and_data;
    append_big_endian(png, crc32(type_and_data));
}

// The zlib stream of `raw`, in stored deflate blocks (RFC 1950 section 2.2, RFC 1951 section 3.2.4).
std::string zlib_stored(std::string_view raw) {
    // CMF 0x78: method 8 (deflate), window 2^(7+8) = 32 KiB. FLG 0x01: no dictionary, level 0
    // ("fastest"), and 0x7801 is a multiple of 31, as the check bits require.
    std::string stream = "\x78\x01";
    constexpr size_t kMaxStored = 65535;  // LEN is 16 bits
    size_t at = 0;
    do {
        const size_t length = std::min(kMaxStored, raw.size() - at);
        const bool final_block = at + length == raw.size();
        // The block header's 3 bits, BFINAL then BTYPE = 00, and the rest of the byte unused:
        // a stored block's LEN starts on the next byte boundary.
        stream += static_cast<char>(final_block ? 1 : 0);
        append_little_endian_16(stream, static_cast<uint32_t>(length));
        append_little_endian_16(stream, static_cast<uint32_t>(~length & 0xFFFF));  // NLEN
        stream += raw.substr(at, length);
        at += length;
    } while (at < raw.size());
    append_big_endian(stream, adler32(raw));
    return stream;
}

}  // namespace

uint32_t crc32(std::string_view bytes) {
    // The reflected polynomial 0xEDB88320, a register started at all ones and inverted at the
    // end: the PNG spec's sample code (annex D), one table entry per byte value.
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t n = 0; n < 256; ++n) {
            uint32_t c = n;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[n] = c;
        }
        return t;
    }();
    uint32_t c = 0xFFFFFFFFu;
    for (const char byte : bytes) c = table[(c ^ static_cast<uint8_t>(byte)) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t adler32(std::string_view bytes) {
    // s1 = 1 + the sum of the bytes, s2 = the sum of the s1's, both modulo 65521 (the largest
    // prime below 2^16); the checksum is s2·65536 + s1 (RFC 1950, section 8).
    constexpr uint32_t kBase = 65521;
    uint32_t s1 = 1, s2 = 0;
    for (const char byte : bytes) {
        s1 = (s1 + static_cast<uint8_t>(byte)) % kBase;
        s2 = (s2 + s1) % kBase;
    }
    return (s2 << 16) | s1;
}

std::string base64(std::string_view bytes) {
    // Three bytes become four characters of 6 bits each; a last group of one or two bytes is
    // padded with zero bits and written with "==" or "=" (RFC 4648, section 4).
    static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t group = 0;
        for (size_t k = 0; k < 3; ++k) group = (group << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0);
        for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 0x3F] : '=';
    }
    return out;
}

std::string png_bytes(const RgbImage& image) {
    if (image.width <= 0 || image.height <= 0)
        throw std::invalid_argument("png: a picture of " + std::to_string(image.width) + "×" +
                                    std::to_string(image.height) + " pixels");
    const size_t row_bytes = static_cast<size_t>(image.width) * 3;
    if (image.pixels.size() != row_bytes * static_cast<size_t>(image.height))
        throw std::invalid_argument("png: " + std::to_string(image.pixels.size()) + " bytes of pixels for " +
                                    std::to_string(image.width) + "×" + std::to_string(image.height) + " RGB");

    std::string header;  // IHDR (PNG spec, section 11.2.2)
    append_big_endian(header, static_cast<uint32_t>(image.width));
    append_big_endian(header, static_cast<uint32_t>(image.height));
    header += '\x08';  // bit depth: 8 bits per channel
    header += '\x02';  // colour type 2: RGB
    header += '\x00';  // compression method 0: zlib
    header += '\x00';  // filter method 0 (adaptive; each row names its filter)
    header += '\x00';  // no interlace

    std::string rows;  // each row: filter type 0 (None), then its pixels as they are
    rows.reserve((row_bytes + 1) * static_cast<size_t>(image.height));
    for (int64_t y = 0; y < image.height; ++y) {
        rows += '\x00';
        rows.append(reinterpret_cast<const char*>(image.pixels.data()) + y * row_bytes, row_bytes);
    }

    std::string png = "\x89PNG\r\n\x1a\n";
    append_chunk(png, "IHDR", header);
    append_chunk(png, "IDAT", zlib_stored(rows));
    append_chunk(png, "IEND", "");
    return png;
}

std::string png_data_uri(const RgbImage& image) { return "data:image/png;base64," + base64(png_bytes(image)); }

}  // namespace tinyformer
