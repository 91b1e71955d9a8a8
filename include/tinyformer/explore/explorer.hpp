// The explorer (tinyformer serve): a learner types a sentence and sees every head's
// attention, the next characters the model expects at every position, and what changes when
// heads are switched off.
//
// One run goes through the same Decoder as `tinyformer sample` (decoder.hpp), one character
// at a time, keeping each head's attention weights at every position: the probabilities the
// page shows are the ones sampling draws from (at temperature 1). The Decoder only reads the
// model's weights, and each run makes its own, so runs may go on in many threads at once
// with no lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// One head, as the report names it: "L1H0" is layer 1, head 0.
struct HeadRef {
    int64_t layer = 0, head = 0;
    bool operator==(const HeadRef&) const = default;
};
// "L1H0" → {1, 0}; throws InputError (naming `source`) for anything else or a head the
// model does not have.
HeadRef parse_head(const std::string& label, const ModelConfig& config, const std::string& source);
std::string head_name(const HeadRef& head);  // {1, 0} → "L1H0"

// How an ablated head's output [d] is replaced: by zeros, or by its mean over the validation
// text (mean_head_outputs in inspect.hpp).
enum class Ablation { zero, mean };

struct ExplorerRun {
    AttentionMaps maps;         // [L,H,T,T]: row = query position, column = position read
    std::vector<float> logits;  // [T,V]: at each position, the scores of the character after it
};

// Runs `ids` (1..context) through a Decoder with `ablated` heads replaced (by zeros, or by
// `mean_outputs` [L*H][d] for Ablation::mean).
ExplorerRun explore(const Transformer& model, const Vocabulary& vocab, const std::vector<int32_t>& ids,
                    const std::vector<HeadRef>& ablated = {}, Ablation ablation = Ablation::zero,
                    const std::vector<std::vector<float>>* mean_outputs = nullptr);

// The `k` most likely next characters at one position, with their probabilities
// (softmax of the logits at temperature 1, in double), most likely first; equal
// probabilities by id.
struct NextChar {
    int32_t id = 0;
    double probability = 0;
};
std::vector<NextChar> top_next_chars(const float* logits, int64_t V, int64_t k);

}  // namespace tinyformer
