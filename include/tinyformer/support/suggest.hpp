// "Did you mean ...?": the valid word nearest to a mistyped one, for config keys, subcommands
// and options.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tinyformer {

// Edit distance: insertions, deletions, substitutions and swaps of two neighbouring letters,
// each costing 1 (the optimal-string-alignment distance: `sampel` is 1 from `sample`).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, or "" when none is near enough to be a likely typo: a
// candidate `word` is a prefix of (`--temp` → `--temperature`), else the one at the smallest
// edit distance if that is at most a third of the word's length (or 2), and less than half.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tinyformer
