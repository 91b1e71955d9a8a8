// Scoring a model: loss, bits per character and perplexity of a text, and probe accuracy;
// and a checkpoint scored as `tinyformer eval` prints it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

struct TextScore {
    double loss = 0;        // mean cross-entropy per predicted character, in nats
    double bpc = 0;         // loss / ln 2
    double perplexity = 0;  // exp(loss)
    int64_t predicted = 0;  // characters scored
    int64_t windows = 0;    // windows they were scored in
};

// The text is cut into consecutive windows ids[k*T : k*T+T+1] (every window with at least
// 2 ids counts) — exactly as scripts/torch_reference.py eval does — and the loss is
// the mean over all predicted characters. With max_windows > 0, only that many windows,
// evenly spaced over the text, are scored (for quick evaluations during training).
// With `progress_bar`, a terminal shows how many windows are done.
TextScore score_text(const Transformer& model, const TokenIds& ids, int64_t max_windows = 0,
                     bool progress_bar = false);

// `count` windows of T+1 ids at random starts, uniform over [0, n - T - 1] as the training
// batches are, drawn from a generator of their own seeded with `seed` (the same seed, the
// same windows: every evaluation of a run scores the same ones). Throws InputError if the
// text is shorter than one window.
std::vector<int64_t> random_windows(int64_t text_length, int64_t context, int64_t count, uint64_t seed);
// The mean loss over the windows starting at `starts` (each scores min(T, n - 1 - start)
// characters), `batch_size` windows per forward pass; 0 = 32. (train.eval_batches passes train.batch_size: an evaluation batch has the
// training batch's shape, so it reuses the training step's buffers and needs no more memory.)
TextScore score_windows(const Transformer& model, const TokenIds& ids, const std::vector<int64_t>& starts,
                        bool progress_bar = false, int64_t batch_size = 0);

struct ProbeResult {
    Probe probe;
    std::u32string answer_given;  // greedy decoding, as many characters as the answer has
    bool correct = false;
};

struct ProbeScore {
    int64_t correct = 0, total = 0;
    double accuracy() const { return total ? static_cast<double>(correct) / total : 0.0; }
    std::map<std::string, std::pair<int64_t, int64_t>> by_kind;  // kind → (correct, total)
    std::vector<ProbeResult> misses;
};

// A probe is answered correctly when greedy decoding from its prompt yields exactly its
// answer (as many characters as the answer has).
ProbeScore score_probes(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& probes);

// What `tinyformer eval` scores: a checkpoint, on a text and probes.
struct EvalRequest {
    std::string checkpoint;   // a .safetensors file or a run directory
    std::string text;         // the text to score; "" = the validation text of the checkpoint's config
    std::string probes;       // prompt<TAB>answer file; "" = the config's data.probes_path (none: no probes)
    int64_t batches = 0;      // > 0: score this many batches of random windows instead of the whole text
    int64_t batch_size = 32;  // windows per batch, with batches
    int64_t seed = 1337;      // the random windows' seed, with batches
    bool json = false;        // print one JSON object instead of the table
};

// Loads the checkpoint, scores the text (score_text, or score_windows over random_windows)
// and the probes, and prints the loss, bits per character, perplexity and probe accuracy
// with each miss (stdout). Throws InputError for a text or probes that cannot be scored.
void evaluate_checkpoint(const EvalRequest& request);

}  // namespace tinyformer
