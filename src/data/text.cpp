#include "tinyformer/data/text.hpp"

#include <algorithm>
#include <set>

#include "tinyformer/support/errors.hpp"

namespace tinyformer {

Vocabulary::Vocabulary(std::vector<char32_t> chars) : chars_(std::move(chars)) {
    for (size_t i = 0; i < chars_.size(); ++i)
        if (!ids_.emplace(chars_[i], static_cast<int32_t>(i)).second)
            throw InputError("vocabulary: character " + describe_char(chars_[i]) + " appears twice");
}

Vocabulary Vocabulary::from_text(std::u32string_view text) {
    std::set<char32_t> distinct(text.begin(), text.end());
    return Vocabulary(std::vector<char32_t>(distinct.begin(), distinct.end()));
}

int32_t Vocabulary::find(char32_t c) const {
    auto it = ids_.find(c);
    return it == ids_.end() ? -1 : it->second;
}

int32_t Vocabulary::id(char32_t c) const {
    auto it = ids_.find(c);
    if (it == ids_.end()) throw InputError("character " + describe_char(c) + " is not in the vocabulary");
    return it->second;
}

std::vector<int32_t> Vocabulary::encode(std::u32string_view text, const std::string& source) const {
    std::vector<int32_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        auto it = ids_.find(text[i]);
        if (it == ids_.end()) throw InputError(unknown_char_message(source, text[i], i));
        ids[i] = it->second;
    }
    return ids;
}

std::string Vocabulary::unknown_char_message(const std::string& source, char32_t c, size_t position) const {
    return source + ": character " + describe_char(c) + " at character " + std::to_string(position) +
           " is not in the model's " + std::to_string(size()) + "-character vocabulary";
}

std::u32string Vocabulary::decode(const std::vector<int32_t>& ids) const {
    std::u32string text;
    text.reserve(ids.size());
    for (int32_t id : ids) text.push_back(chars_.at(id));
    return text;
}

}  // namespace tinyformer
