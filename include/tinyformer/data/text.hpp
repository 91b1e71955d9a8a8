// Text to ids and back: UTF-8 decoding (strict, with the offset of the first bad byte),
// and the vocabulary — the sorted distinct code points of a corpus.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

class Vocabulary {
public:
    Vocabulary() = default;
    explicit Vocabulary(std::vector<char32_t> chars);  // id order; must be distinct
    static Vocabulary from_text(std::u32string_view text);  // sorted distinct code points

    int64_t size() const { return static_cast<int64_t>(chars_.size()); }
    const std::vector<char32_t>& chars() const { return chars_; }
    bool contains(char32_t c) const { return ids_.count(c) != 0; }
    int32_t id(char32_t c) const;  // throws InputError naming the character
    int32_t find(char32_t c) const;  // the id, or -1 if `c` is not in the vocabulary
    char32_t at(int32_t id) const { return chars_.at(id); }

    // `source` names the text in errors ("prompt", "corpus/val.txt").
    std::vector<int32_t> encode(std::u32string_view text, const std::string& source) const;
    // What encode says of character `c` at index `position` of `source` when it is not in
    // the vocabulary (the explorer underlines every such character with it).
    std::string unknown_char_message(const std::string& source, char32_t c, size_t position) const;
    std::u32string decode(const std::vector<int32_t>& ids) const;

private:
    std::vector<char32_t> chars_;
    std::unordered_map<char32_t, int32_t> ids_;
};

}  // namespace tinyformer
