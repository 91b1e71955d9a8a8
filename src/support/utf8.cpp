#include "tinyformer/support/utf8.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tinyformer/support/errors.hpp"

namespace tinyformer {

char32_t next_utf8_char(std::string_view bytes, size_t& i, const std::string& source, int64_t block_offset) {
    auto fail = [&](const char* what) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(bytes[i]));
        throw InputError(source + ": invalid UTF-8 at byte " + std::to_string(block_offset + static_cast<int64_t>(i)) + " (" + byte + "): " + what +
                         "; expected UTF-8 text");
    };
    const unsigned char lead = static_cast<unsigned char>(bytes[i]);
    int length = 0;
    char32_t c = 0;
    if (lead < 0x80) { ++i; return lead; }
    else if ((lead & 0xE0) == 0xC0) { length = 2; c = lead & 0x1F; }
    else if ((lead & 0xF0) == 0xE0) { length = 3; c = lead & 0x0F; }
    else if ((lead & 0xF8) == 0xF0) { length = 4; c = lead & 0x07; }
    else fail("not a valid leading byte");
    if (i + length > bytes.size()) fail("sequence cut off by the end of the text");
    for (int k = 1; k < length; ++k) {
        const unsigned char next = static_cast<unsigned char>(bytes[i + k]);
        if ((next & 0xC0) != 0x80) fail("continuation byte missing");
        c = (c << 6) | (next & 0x3F);
    }
    static const char32_t smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < smallest[length]) fail("overlong encoding");
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) fail("not a Unicode scalar value");
    i += length;
    return c;
}

std::u32string decode_utf8(std::string_view bytes, const std::string& source) {
    std::u32string text;
    text.reserve(bytes.size());
    for (size_t i = 0; i < bytes.size();) text.push_back(next_utf8_char(bytes, i, source));
    return text;
}

void check_utf8(std::string_view bytes, const std::string& source) {
    for (size_t i = 0; i < bytes.size();) next_utf8_char(bytes, i, source);
}

std::string encode_utf8(char32_t c) {
    std::string out;
    if (c < 0x80) out += static_cast<char>(c);
    else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
    return out;
}

std::string encode_utf8(std::u32string_view text) {
    std::string out;
    out.reserve(text.size() * 3);
    for (char32_t c : text) out += encode_utf8(c);
    return out;
}

std::string describe_char(char32_t c) {
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
    std::string shown;
    if (c == '\n') shown = "\\n";
    else if (c == '\t') shown = "\\t";
    else if (c == '\r') shown = "\\r";
    else if (c < 0x20 || c == 0x7F) shown = "?";
    else shown = encode_utf8(c);
    return "'" + shown + "' (" + code + ")";
}

std::string read_file(const std::string& path) {
    // One allocation of the file's size: a stringstream would hold a second copy.
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (std::filesystem::is_directory(status)) throw InputError(path + ": is a directory, expected a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open for reading");
    std::string bytes;
    if (std::filesystem::is_regular_file(status)) {
        bytes.resize(std::filesystem::file_size(path, error));
        if (error) throw InputError(path + ": cannot read its size (" + error.message() + ")");
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        bytes.resize(static_cast<size_t>(in.gcount()));  // it may have shrunk meanwhile
        if (in.bad()) throw InputError(path + ": read failed");
        return bytes;
    }
    std::ostringstream stream;  // a pipe or a device: its size is not known in advance
    stream << in.rdbuf();
    if (in.bad()) throw InputError(path + ": read failed");
    return stream.str();
}

}  // namespace tinyformer
