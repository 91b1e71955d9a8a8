// tinyformer inspect: where does each trained head read? The lesson warns that a head's role
// must be measured on the trained model, not assumed; these are the measurements.
//
//   capture_attention   every layer's per-head weights on one text           [L,H,T,T]
//   role_scores         how much of a head's attention falls on a fixed pattern (previous
//                       character, itself, the first position, earlier copies of its own
//                       character, the character after such a copy), its reading distance
//                       and entropy — over the validation text
//   answer_sources      at the position that predicts each probe answer's character, the
//                       share of attention on the positions holding that character
//   ablate_head         validation loss and probe accuracy with one head's output zeroed,
//                       or replaced by its mean output
//
// Files and pictures made from these are in inspect_report.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// ---- attention on one text ----

struct AttentionMaps {
    std::u32string text;          // the T characters the model read
    int64_t layers = 0, heads = 0;
    std::vector<float> weights;   // [L,H,T,T]: row = query position, column = position read

    int64_t length() const { return static_cast<int64_t>(text.size()); }
    const float* map(int64_t layer, int64_t head) const {  // [T,T]
        return weights.data() + (layer * heads + head) * length() * length();
    }
};

// Runs the model once on `text` (1..context characters; `source` names it in errors, e.g.
// "--text": a character outside the vocabulary is an InputError naming it).
AttentionMaps capture_attention(const Transformer& model, const Vocabulary& vocab, const std::u32string& text,
                                const std::string& source);

// What an attention map must be: every row sums to 1 (within 1e-5), every future entry
// (column > row) is exactly 0, nothing is NaN or infinite. Returns "" or the first fault,
// naming layer, head, row and column.
std::string check_attention(const AttentionMaps& maps);

// ---- role scores ----

// How a head spreads its attention over one window, after TransformerLens's detect_head
// (transformer_lens/head_detector.py, error_measure="mul", exclude_bos and
// exclude_current_token off): for a 0/1 pattern P over [T,T], score = Σ A∘P / Σ A, the share
// of the head's attention that falls on the pattern's cells (Σ A = T, every row summing to 1).
struct HeadRoles {
    double previous = 0;   // on the character just before the query (their previous_token_head)
    double self = 0;       // on the query's own position
    double first = 0;      // on the window's first position
    double duplicate = 0;  // on earlier positions holding the query's character (duplicate_token_head)
    double induction = 0;  // on positions right after an earlier copy of the query's character (induction_head)
    double distance = 0;   // mean of (query − position read), weighted by attention, in characters
    double entropy = 0;    // mean over queries of −Σ a ln a, in nats (0 = one position; ln(t+1) = uniform)
};

// One head on one window: pattern [T,T] and the window's character ids [T].
HeadRoles role_scores(const float* pattern, const std::vector<int32_t>& ids);

// Every head's role scores averaged over the windows of `ids` (cut as score_text cuts
// them: ids[k*T : k*T+T], every window of at least 2 characters). Index layer * H + head.
std::vector<HeadRoles> text_head_roles(const Transformer& model, const std::vector<int32_t>& ids);

// ---- answer sources ----

// One head, one question kind: at the position that predicts an answer character (the one
// before it), where does the head read?
//   share       on the earlier positions that hold that very character — is it copying it?
//   span_share  on the answer's place in the story (the first place the prompt holds the
//               whole answer, e.g. 小丁 at 0–1) — is it reading the name / the colour there,
//               whichever of its characters it reads? (A name can be read at its last
//               character, which an earlier layer has told what came before it.)
struct AnswerSource {
    int64_t probes = 0;
    std::vector<double> by_answer_char;  // mean share for the 1st, 2nd, ... answer character
    double share = 0;                    // mean over every answer character of every probe
    int64_t stated = 0;                  // probes whose prompt holds the whole answer
    std::vector<double> span_by_answer_char;
    double span_share = 0;               // mean over every answer character of those probes
};

// Index layer * H + head, then the probe's kind ("who", "colour", ...). Each probe runs as
// prompt + answer (probes longer than the context are skipped).
std::vector<std::map<std::string, AnswerSource>> answer_sources(const Transformer& model, const Vocabulary& vocab,
                                                                const std::vector<Probe>& probes);

// ---- ablation ----

// The part of a validation text that inspect (and the Python module's mean ablation)
// measures over: its first kMaxMeasuredWindows windows of `context` characters, enough for
// stable averages, and minutes, not hours, on a gigabyte's validation text.
constexpr int64_t kMaxMeasuredWindows = 512;
inline int64_t measured_length(int64_t text_length, int64_t context) {
    return std::min(text_length, kMaxMeasuredWindows * context + 1);
}

struct ProbeTally {
    int64_t correct = 0, total = 0;
    std::map<std::string, std::pair<int64_t, int64_t>> by_kind;  // kind → (correct, total)
    double accuracy() const { return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0; }
    double accuracy(const std::string& kind) const;
};

// Mean cross-entropy over `ids` in score_text's windows, with the hooks' ablation (no hooks:
// exactly score_text's loss).
double text_loss(const Transformer& model, const std::vector<int32_t>& ids, const ForwardHooks& hooks = {});
// Greedy decoding of each probe's answer, as many characters as it has (as score_probes
// does), with the hooks' ablation, probes of equal lengths in one batch.
ProbeTally probe_accuracy(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& probes,
                          const ForwardHooks& hooks = {});
// Each head's output [d] averaged over every position of the windows of `ids` — what
// "mean ablation" puts in its place. Index layer * H + head.
std::vector<Tensor> mean_head_outputs(const Transformer& model, const std::vector<int32_t>& ids);

struct AblationResult {
    double val_loss = 0;  // (when there is a validation text)
    ProbeTally probes;    // (when there are probes)
};

// ---- everything, per head ----

struct HeadReport {
    int64_t layer = 0, head = 0;
    HeadRoles roles;                                     // (when there is a validation text)
    std::map<std::string, AnswerSource> answer_source;   // (when there are probes)
    AblationResult zeroed, mean_replaced;
    std::string finding;                                 // one sentence, from the numbers above
};

struct InspectResult {
    bool has_text = false, has_probes = false;
    int64_t text_characters = 0;
    double val_loss = 0;   // the model as trained
    ProbeTally probes;
    std::vector<HeadReport> heads;  // layer-major
};

// Measures every head. `val_ids` may be empty (no roles, no loss), `probes` too (no answer
// sources, no probe accuracies).
InspectResult inspect_heads(const Transformer& model, const Vocabulary& vocab, const std::vector<int32_t>& val_ids,
                            const std::vector<Probe>& probes);

// The sentence a report states about one head, built only from its numbers (thresholds in
// findings.cpp): its strongest reading pattern, the answers it reads, what removing it costs.
std::string describe_head(const HeadReport& head, const InspectResult& result);
// The answer kind a head "reads" by the report's rule (findings.cpp): at least 0.3 of its
// attention at the answer on that answer's place in the story (span_share), and at least
// twice as much as for any other kind. "" when it reads none.
std::string answer_kind_read(const std::map<std::string, double>& span_share_by_kind);

}  // namespace tinyformer
