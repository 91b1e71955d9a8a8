// A minimal PNG writer, so that a heatmap's cells can travel as one small embedded picture
// (a data: URI inside an SVG) instead of one SVG element per cell. No compression: every byte
// of the picture is written as it is, and a PNG reader needs nothing but the format itself.
//
//   "\x89PNG\r\n\x1a\n"                  the signature
//   chunk IHDR                           width, height (4 bytes each, big-endian), bit depth 8,
//                                        colour type 2 (RGB), compression 0, filter 0, no interlace
//   chunk IDAT                           a zlib stream (RFC 1950) of the rows, each row a filter
//                                        byte 0 (None) and then its pixels, R G B
//   chunk IEND                           empty
//
// A chunk is its data's length (4 bytes, big-endian), a 4-letter type, the data, and the CRC-32
// of the type and data. The zlib stream is a 2-byte header, deflate blocks (RFC 1951) of type
// 00 "stored" — a block is its header byte, LEN and NLEN = ~LEN (2 bytes each, little-endian)
// and LEN bytes as they are, at most 65535 — and the Adler-32 of the uncompressed bytes.
// Specifications: PNG (W3C, 2nd edition, 2003), RFC 1950 (zlib), RFC 1951 (deflate), RFC 4648
// (base64).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinyformer {

// A picture of 8-bit RGB pixels: row-major from the top-left, 3 bytes per pixel.
struct RgbImage {
    int64_t width = 0, height = 0;
    std::vector<uint8_t> pixels;  // width · height · 3
};

// The PNG file's bytes. Throws std::invalid_argument for an empty picture or one whose pixels
// are not width · height · 3 bytes.
std::string png_bytes(const RgbImage& image);

// "data:image/png;base64,…": the PNG as a URI for an <image href> or <img src>.
std::string png_data_uri(const RgbImage& image);

// The checksums, as the formats define them.
uint32_t crc32(std::string_view bytes);    // PNG chunks: ISO 3309 / ITU-T V.42, as in the PNG spec's annex D
uint32_t adler32(std::string_view bytes);  // zlib streams: RFC 1950, section 8

// Base64 with the standard alphabet and "=" padding (RFC 4648, section 4).
std::string base64(std::string_view bytes);

}  // namespace tinyformer
