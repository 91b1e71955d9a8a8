// UTF-8, strictly: decoding with the offset of the first bad byte, encoding, characters
// named for messages, and a file's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tinyformer {

// Decodes UTF-8; throws InputError "<source>: invalid UTF-8 at byte <offset> ..." at the
// first invalid byte (overlong forms, surrogates and code points past U+10FFFF included).
std::u32string decode_utf8(std::string_view bytes, const std::string& source);
// The same, one character at a time: decodes the character starting at bytes[i] (i <
// bytes.size()) and moves i past it. For walking a large text without a second copy of it;
// `bytes` may be a block of a file that starts at byte `block_offset`, which errors add to i.
char32_t next_utf8_char(std::string_view bytes, size_t& i, const std::string& source, int64_t block_offset = 0);
// Throws as decode_utf8 does if `bytes` is not UTF-8; allocates nothing.
void check_utf8(std::string_view bytes, const std::string& source);
std::string encode_utf8(std::u32string_view text);
std::string encode_utf8(char32_t c);
// A readable name for a character in messages: "'果' (U+679C)", "'\n' (U+000A)".
std::string describe_char(char32_t c);

// The file's bytes, in one buffer of its size. Throws InputError naming the path.
std::string read_file(const std::string& path);

}  // namespace tinyformer
