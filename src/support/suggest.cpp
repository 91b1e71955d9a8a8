#include "tinyformer/support/suggest.hpp"

#include <algorithm>
#include <limits>

namespace tinyformer {

size_t edit_distance(std::string_view a, std::string_view b) {
    // d[i][j]: the distance from a[0..i) to b[0..j), three rows kept (a swap looks two back).
    std::vector<size_t> before_previous(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t substituted = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({substituted, previous[j] + 1, current[j - 1] + 1});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])  // "ab" → "ba"
                current[j] = std::min(current[j], before_previous[j - 2] + 1);
        }
        std::swap(before_previous, previous);
        std::swap(previous, current);
    }
    return previous[b.size()];
}

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
    if (word.empty()) return "";
    // A unique-enough prefix first: the shortest candidate that starts with the word.
    std::string best_prefixed;
    for (const std::string& candidate : candidates)
        if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0 &&
            (best_prefixed.empty() || candidate.size() < best_prefixed.size()))
            best_prefixed = candidate;
    if (!best_prefixed.empty()) return best_prefixed;

    std::string best;
    size_t best_distance = std::numeric_limits<size_t>::max();
    for (const std::string& candidate : candidates) {
        const size_t distance = edit_distance(word, candidate);
        if (distance < best_distance) best_distance = distance, best = candidate;
    }
    // Near enough: a third of the word's letters wrong (two for a short word: a swapped
    // pair), and never half of them (`-x` is not a typo of `-h`).
    const size_t allowed = std::max<size_t>(2, word.size() / 3);
    return best_distance <= allowed && 2 * best_distance < word.size() ? best : "";
}

}  // namespace tinyformer
