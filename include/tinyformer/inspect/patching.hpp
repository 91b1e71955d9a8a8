// Activation patching: which heads, and which connections between heads, carry an answer?
// (Meng et al. 2022, "Locating and Editing Factual Associations in GPT"; Wang et al. 2022,
// "Interpretability in the Wild" — path patching; the conventions of TransformerLens and the
// ARENA IOI exercises.)
//
// Each probe gets a corrupted twin: the same story with another name (who) or another colour
// (colour), so the two answers differ in their first character. At the position that
// predicts that character the metric is
//     logit difference = logit(clean answer's first character) − logit(corrupted answer's)
// Running the corrupted story while copying in one piece of the clean run's activations and
// measuring how much of the gap comes back:
//     recovered = (patched − corrupted) / (clean − corrupted)
// 1: that piece alone carries the answer; 0: it carries none of it.
//
//   traced_forward       the model's forward pass of one story in float64, written out head by
//                        head, so that any head's output, or one input of one head, can be
//                        replaced (the fused training forward cannot do the second)
//   corrupted_twins      the probes' twins
//   patch_heads          activation patching: one head's output z = weights·v [T,d], before
//                        out_proj, from the clean run, at every position or at one position
//   patch_paths          path patching: an earlier head's direct contribution z·W_O^h to the
//                        residual stream, from the clean run, added only to what one later
//                        head's queries, keys or values read (its ln1 recomputed); every other
//                        path stays corrupted
#pragma once

// GCC 12 warns "may be used uninitialized" inside its own AVX-512 intrinsics when Eigen
// instantiates them (a false positive, as circuits.hpp notes); silenced for those headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>
#pragma GCC diagnostic pop
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// ---- a forward pass that can be intervened in ----

// The model's parameters in float64, as the forward formula reads them (nn.Linear's [out,in]).
struct DenseLayer {
    Eigen::VectorXd ln1_weight, ln1_bias;               // [D]
    Eigen::MatrixXd q_proj, k_proj, v_proj, out_proj;   // [D,D]
    Eigen::VectorXd ln2_weight, ln2_bias;               // [D]
    Eigen::MatrixXd fc1_weight;                         // [4D,D]
    Eigen::VectorXd fc1_bias;                           // [4D]
    Eigen::MatrixXd fc2_weight;                         // [D,4D]
    Eigen::VectorXd fc2_bias;                           // [D]
};
struct DenseModel {
    ModelConfig config;
    Eigen::MatrixXd tok_emb;            // [V,D]
    Eigen::MatrixXd pos_emb;            // [context,D] (learned positions only)
    std::vector<DenseLayer> layers;
    Eigen::VectorXd ln_f_weight, ln_f_bias;  // [D]
    Eigen::MatrixXd lm_head;                 // [V,D]
    Eigen::MatrixXd rope_cos, rope_sin;      // [context, d/2]: cos and sin of t·10000^(−2j/d) (rope only)
};
DenseModel dense_model(const Transformer& model);

// What one run of one story computed.
struct Trace {
    std::vector<Eigen::MatrixXd> residual;       // [L]: the stream x entering each block [T,D]
    std::vector<std::vector<Eigen::MatrixXd>> z; // [L][H]: each head's output weights·v [T,d], as it went on
    Eigen::MatrixXd logits;                      // [T,V]
};

// Activation patching: head (layer, head)'s output is replaced by `source`'s rows — at every
// position, or only at `position`.
struct HeadPatch {
    int64_t layer = 0, head = 0;
    int64_t position = -1;                 // -1: every position
    const Eigen::MatrixXd* source = nullptr;  // [T,d]
};
// Path patching: what head (layer, head) reads as its queries ('q'), keys ('k') or values
// ('v') is ln1(x + delta) instead of ln1(x); its other inputs and every other head read ln1(x).
struct InputPatch {
    int64_t layer = 0, head = 0;
    char input = 'q';
    Eigen::MatrixXd delta;  // [T,D], added to the residual stream this head's input reads
};
struct Interventions {
    std::vector<HeadPatch> heads;
    std::vector<InputPatch> inputs;
};
// The two usual cases: one head's output, one head's input.
inline Interventions patch_output(int64_t layer, int64_t head, int64_t position, const Eigen::MatrixXd& source) {
    Interventions one;
    one.heads.push_back({layer, head, position, &source});
    return one;
}
inline Interventions patch_input(int64_t layer, int64_t head, char input, const Eigen::MatrixXd& delta) {
    Interventions one;
    one.inputs.push_back({layer, head, input, delta});
    return one;
}

// ids [T] (1..context) → the run, with the interventions. No interventions: model.forward's
// logits (to float32 rounding). `unpatched`, the same ids' run without interventions, saves
// recomputing the layers before the first one the interventions touch (the result is the same).
Trace traced_forward(const DenseModel& model, const std::vector<int32_t>& ids, const Interventions& interventions = {},
                     const Trace* unpatched = nullptr);

// ---- the probes' twins ----

struct ProbeTwin {
    size_t probe = 0;                  // index into the probes
    std::string kind;
    std::vector<int32_t> clean, corrupted;  // the two prompts' ids, of equal length
    std::u32string corrupted_answer;
    int32_t clean_answer = 0, corrupted_answer_id = 0;  // the answers' first characters
};
// For each probe whose answer stands in its prompt: the first other answer of the same kind
// (the kind's answers in the order the probes first give them, going round after the probe's
// own) with as many characters and another first character, that the prompt does not already
// hold; every place the prompt holds the answer gets it instead. Probes with no such answer,
// or longer than `context`, get no twin.
std::vector<ProbeTwin> corrupted_twins(const Vocabulary& vocab, const std::vector<Probe>& probes, int64_t context);
// The rule above in one sentence, for the report and patching JSON.
const char* corruption_rule();

// logits[last] of the clean answer's first character minus the corrupted answer's.
double logit_difference(const Trace& run, const ProbeTwin& twin);
// (patched − corrupted) / (clean − corrupted); 0 when clean == corrupted.
double recovered_fraction(double patched, double clean, double corrupted);

// ---- the measurements ----

// Path patching's change to the residual stream: the sender head's direct contribution
// z·W_O^h in the clean run minus in the corrupted run.   [T,D]
Eigen::MatrixXd path_delta(const DenseModel& model, int64_t sender_layer, int64_t sender_head, const Trace& clean,
                           const Trace& corrupted);

// One earlier head's path into one later head's input.
struct PathEdge {
    int64_t sender_layer = 0, sender_head = 0, receiver_layer = 0, receiver_head = 0;
    double q = 0, k = 0, v = 0;  // recovered fraction through the receiver's queries, keys, values
};

// One question kind over all its twins. The logit differences are averaged over the twins
// first and then normalised, as the ARENA IOI exercises do (a twin whose gap is small cannot
// blow the mean up).
struct KindPatching {
    int64_t twins = 0;
    double clean = 0, corrupted = 0;            // mean logit difference of the two runs
    std::vector<double> every_position;          // [L*H]: recovered, the head patched at every position
    std::vector<double> answer_position;         // [L*H]: ... at the answer position only
    std::vector<PathEdge> paths;                 // every earlier × later head, as Circuits::composition orders them
    // One twin (the kind's first) in detail: the head patched at each position alone.
    ProbeTwin example;
    double example_clean = 0, example_corrupted = 0;
    std::vector<std::vector<double>> example_by_position;  // [L*H][T]
};

struct Patching {
    std::map<std::string, KindPatching> kinds;  // "who", "colour", ...
    int64_t probes = 0, skipped = 0;            // probes given; those without a twin
};

Patching activation_patching(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& probes);

}  // namespace tinyformer
