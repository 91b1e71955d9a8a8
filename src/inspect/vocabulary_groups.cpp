// The vocabulary grouped by role, as far as the probes tell: the rows and columns of the
// circuit heatmaps, so that "names read names" shows as a block. The rule is in circuits.hpp.
#include <algorithm>
#include <map>

#include "tinyformer/inspect/circuits.hpp"

namespace tinyformer {

namespace {

enum Group { kNames, kColours, kVerbs, kObjects, kPunctuation, kOther };
const std::vector<std::string> kGroupNames = {"names", "colours", "verbs", "objects", "punctuation", "other"};

bool is_punctuation(char32_t c) {
    if (c < 0x80)  // ASCII: whitespace and control characters, and !"#…/ :;<=>?@ [\]^_` {|}~
        return c <= 0x20 || c == 0x7F || (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
               (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
    return (c >= 0x2000 && c <= 0x206F)      // general punctuation
           || (c >= 0x3000 && c <= 0x303F)   // CJK symbols and punctuation: 。「」、
           || (c >= 0xFF01 && c <= 0xFF0F)   // fullwidth ！＂＃ … ／
           || (c >= 0xFF1A && c <= 0xFF20)   // fullwidth ：；＜＝＞？＠
           || (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);
}

// The probe's story: its prompt up to and including the first 。 (the whole prompt if none).
std::u32string story_of(const Probe& probe) {
    const size_t end = probe.prompt.find(U'。');
    return end == std::u32string::npos ? probe.prompt : probe.prompt.substr(0, end + 1);
}

}  // namespace

const char* vocabulary_grouping_rule() {
    return "names: the characters of the who-answers; colours: of the colour-answers; verbs: the characters of a "
           "probe's story (its prompt up to the first 。) between its name and its colour; objects: the story's "
           "characters after the colour that the rest of the prompt (the questions) repeats; punctuation: "
           "punctuation and whitespace by code point; other: the rest. A character claimed by several roles keeps "
           "the first in this order. Without probes there are no groups.";
}

VocabularyGroups group_vocabulary(const Vocabulary& vocab, const std::vector<Probe>& probes) {
    const int32_t V = static_cast<int32_t>(vocab.size());
    VocabularyGroups groups;
    for (int32_t id = 0; id < V; ++id) groups.order.push_back(id);
    if (probes.empty()) return groups;

    std::vector<int> group(static_cast<size_t>(V), kOther);
    const auto claim = [&](char32_t c, Group g) {
        const int32_t id = vocab.find(c);
        if (id >= 0 && g < group[static_cast<size_t>(id)]) group[static_cast<size_t>(id)] = g;
    };
    // Every story's name and colour, from the probes that ask for them.
    struct Answers {
        std::u32string name, colour, rest_of_prompts;
    };
    std::map<std::u32string, Answers> stories;
    for (const Probe& probe : probes) {
        for (char32_t c : probe.answer) claim(c, probe.kind == "who" ? kNames : probe.kind == "colour" ? kColours : kOther);
        const std::u32string story = story_of(probe);
        Answers& answers = stories[story];
        if (probe.kind == "who") answers.name = probe.answer;
        if (probe.kind == "colour") answers.colour = probe.answer;
        answers.rest_of_prompts += probe.prompt.substr(story.size());
    }
    for (const auto& [story, answers] : stories) {
        if (answers.name.empty() || answers.colour.empty()) continue;
        const size_t name_at = story.find(answers.name), colour_at = story.find(answers.colour);
        if (name_at == std::u32string::npos || colour_at == std::u32string::npos) continue;
        const size_t name_end = name_at + answers.name.size(), colour_end = colour_at + answers.colour.size();
        if (name_end > colour_at) continue;
        for (size_t i = name_end; i < colour_at; ++i) claim(story[i], kVerbs);
        for (size_t i = colour_end; i < story.size(); ++i)
            if (answers.rest_of_prompts.find(story[i]) != std::u32string::npos && !is_punctuation(story[i]))
                claim(story[i], kObjects);
    }
    for (int32_t id = 0; id < V; ++id)
        if (is_punctuation(vocab.at(id))) claim(vocab.at(id), kPunctuation);

    groups.names = kGroupNames;
    groups.group_of = group;
    std::stable_sort(groups.order.begin(), groups.order.end(),
                     [&](int32_t a, int32_t b) { return group[static_cast<size_t>(a)] < group[static_cast<size_t>(b)]; });
    return groups;
}

}  // namespace tinyformer
