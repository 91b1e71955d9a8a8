// Text generation from a trained model: temperature, top-k and top-p (nucleus) filtering,
// a key/value cache so that each new character costs O(T), and a stop string.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tinyformer/data/text.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/decoder.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// Past the context, what a new character reads.
//   window:  exactly the last `context` characters, recomputed from scratch at positions
//            0..context-1 — what PyTorch's reference and nanoGPT do (they crop the input
//            to the context and run the model on it). Costs a Decoder::prefill of
//            `context` positions per character.
//   rolling: the cache keeps going; the oldest position drops out of attention, but the
//            kept keys and values were computed with the longer history (rope only; learned
//            positions end at the context, so they always use the window). One position
//            per character.
// Within the context the two are the same computation.
enum class KvCache { window, rolling };

struct SampleOptions {
    int64_t max_new = 200;    // characters to generate at most
    double temperature = 1.0; // 0 = greedy (always the most likely character)
    int64_t top_k = 0;        // keep the k most likely characters; 0 = all
    double top_p = 1.0;       // keep the smallest set whose probability reaches p; 1 = all
    std::u32string stop;      // stop after generating this string (it is included); empty = never
    KvCache cache = KvCache::window;  // past the context: recompute the window, or roll the cache
};

// The names a caller gives the options in its messages: the command line's by default.
struct SampleOptionNames {
    std::string max_new = "--max-new", temperature = "--temperature", top_k = "--top-k", top_p = "--top-p";
};

// The one check of the options' ranges, for `tinyformer sample` and the explorer's
// /api/sample alike: "" when `options` are valid for a vocabulary of `vocab_size` characters
// and at most `max_new_limit` new ones, else the first problem as "<name>: <value>,
// expected ..." with the option named as `names` says.
std::string sample_options_problem(const SampleOptions& options, int64_t vocab_size, int64_t max_new_limit,
                                   const SampleOptionNames& names = {});

// The distribution the next character is drawn from, after temperature, top-k and top-p:
// probabilities over the vocabulary, zero outside the kept set. temperature 0 puts all
// mass on the first most likely character.
std::vector<double> next_char_distribution(const std::vector<double>& logits, double temperature, int64_t top_k,
                                           double top_p);

// Draws one id from `probabilities` with rng.
int32_t draw(const std::vector<double>& probabilities, Rng& rng);

// Continues `prompt` (at least one character; longer than the context, only its last
// `context` characters are read) and returns the generated characters (without the
// prompt). Past the context, options.cache says what a new character reads. `on_char`, if
// given, sees each character as it is generated.
std::u32string generate(const Transformer& model, const Vocabulary& vocab, const std::u32string& prompt,
                        const SampleOptions& options, Rng& rng,
                        const std::function<void(char32_t)>& on_char = nullptr);

// The same with a decoder made once and kept for call after call (a model's probes, several
// samples): making one copies every weight matrix transposed, which at the Shakespeare shape
// costs as much as generating 60 characters. Each call starts afresh (prefill resets the
// cache); head ablations set on the decoder stay.
std::u32string generate(Decoder& decoder, const Vocabulary& vocab, const std::u32string& prompt,
                        const SampleOptions& options, Rng& rng,
                        const std::function<void(char32_t)>& on_char = nullptr);

// The same generation without a cache, running the model's full forward pass on the last
// `context` characters for every new one (nanoGPT's way, KvCache::window's meaning);
// kept to test the cache against.
std::u32string generate_uncached(const Transformer& model, const Vocabulary& vocab, const std::u32string& prompt,
                                 const SampleOptions& options, Rng& rng);

}  // namespace tinyformer
