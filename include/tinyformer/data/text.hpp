// Text to ids and back: the vocabulary, the sorted distinct code points of a corpus
// (UTF-8 itself is support/utf8.hpp's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tinyformer/support/utf8.hpp"

namespace tinyformer {

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
