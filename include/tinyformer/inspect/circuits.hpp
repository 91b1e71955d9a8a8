// Weight-only circuits: what a trained head's weights do, read without running the model
// (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"; TransformerLens).
//
//   head_weights        one head's W_Q, W_K, W_V [D,d] and W_O [d,D]
//   ov_circuit          E·W_V·W_O·U [V,V]: attending to character a raises the logit of b
//   qk_circuit          E·W_Q·(E·W_K)ᵀ [V,V]: how much query character a prefers key b
//   ov_factors, qk_factors  the same circuits kept as two thin factors [V,d]·[d,V]
//   copying_score       Σλ / Σ|λ| over the OV circuit's eigenvalues (1 = pure copying),
//                       taken from the [d,d] product of its factors the other way round
//   top_pairs_by_blocks a circuit's largest entries from its factors, a block of rows at a time
//   composition_score   ‖A·B‖_F / (‖A‖_F·‖B‖_F): how much of a later head's input reads
//                       what an earlier head writes (TransformerLens's composition_scores)
//   group_vocabulary    names, colours, verbs, objects, punctuation, as the probes tell them
//
// Large vocabularies. A [V,V] circuit of a 5,000-character vocabulary has 25 million entries
// (200 MB in float64), and the eigenvalues of a [V,V] matrix take O(V³). So:
//   - the copying score never needs the [V,V] matrix: E·W_V·W_O·U = A·B with A = E·W_V [V,d]
//     and B = W_O·U [d,V], and A·B and B·A [d,d] have the same nonzero eigenvalues (the
//     zero ones add nothing to Σλ or Σ|λ|), as TransformerLens's FactoredMatrix.eigenvalues
//     uses; every vocabulary takes this route;
//   - V ≤ kGridLimit (256): the whole [V,V] circuits are kept and drawn as grids, as always
//     (the lesson's 79 characters);
//   - V > kGridLimit: they are never held whole. Their largest entries and largest |entry| are
//     found a block of rows at a time, and the pictures show the kPairsDrawn largest entries on
//     the rows and columns of the characters they involve (a CircuitExcerpt), not a V×V grid.
//
// Conventions (issue 14), in the row-vector form x·W the lesson writes, with this project's
// [out,in] weights:
//   W_Q^h = diag(ln1.weight) · q_proj.weight[h·d:(h+1)·d, :]ᵀ      [D,d]   (likewise W_K^h, W_V^h)
//   W_O^h = out_proj.weight[:, h·d:(h+1)·d]ᵀ                        [d,D]
//   E     = tok_emb.weight                                          [V,D]
//   U     = diag(ln_f.weight) · lm_head.weightᵀ                     [D,V]
// Each layer norm's weight is folded into the matrices that read its output, as
// TransformerLens's fold_ln does. Left out: the layer norms' centring, 1/σ and biases, the
// MLPs, and rotary positions (a weight-only circuit is a query and a key at distance 0).
// Everything is computed in float64.
#pragma once

// GCC 12 warns "may be used uninitialized" inside its own AVX-512 intrinsics when Eigen
// instantiates them (a false positive in the compiler's headers, as src/backends/reference.cpp
// notes); silenced for those headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>
#pragma GCC diagnostic pop
#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// ---- one head's matrices ----

// A parameter in float64: a 2-D one [rows, columns] (row-major, as the checkpoint holds it) as
// a matrix, a 1-D one [n] (a layer norm's weight) as a vector.
Eigen::MatrixXd parameter_matrix(const Transformer& model, const std::string& name);
Eigen::VectorXd parameter_vector(const Transformer& model, const std::string& name);

struct HeadWeights {
    int64_t layer = 0, head = 0;
    Eigen::MatrixXd W_Q, W_K, W_V;  // [D,d], ln1's weight folded in
    Eigen::MatrixXd W_O;            // [d,D]

    Eigen::MatrixXd W_OV() const { return W_V * W_O; }              // [D,D]: what the head writes for what it reads
    Eigen::MatrixXd W_QK() const { return W_Q * W_K.transpose(); }  // [D,D]: query side x·W_QK·yᵀ key side
};

HeadWeights head_weights(const Transformer& model, int64_t layer, int64_t head);
Eigen::MatrixXd embedding_matrix(const Transformer& model);    // E [V,D]
Eigen::MatrixXd unembedding_matrix(const Transformer& model);  // U [D,V], ln_f's weight folded in

// ---- circuits through the vocabulary ----

Eigen::MatrixXd ov_circuit(const Eigen::MatrixXd& E, const HeadWeights& head, const Eigen::MatrixXd& U);  // [V,V]
Eigen::MatrixXd qk_circuit(const Eigen::MatrixXd& E, const HeadWeights& head);                            // [V,V]

// A [V,V] circuit kept as two thin factors, left·right, as TransformerLens's FactoredMatrix
// keeps one: [V,d]·[d,V] is 2·V·d numbers where the product has V².
struct FactoredCircuit {
    Eigen::MatrixXd left;   // [V,d]
    Eigen::MatrixXd right;  // [d,V]

    Eigen::MatrixXd product() const { return left * right; }  // [V,V]: the circuit itself
    // [d,d]: the factors multiplied the other way round. A·B and B·A have the same nonzero
    // eigenvalues, so this small matrix holds every eigenvalue of the circuit that is not 0.
    Eigen::MatrixXd turned() const { return right * left; }
};
FactoredCircuit ov_factors(const Eigen::MatrixXd& E, const HeadWeights& head, const Eigen::MatrixXd& U);  // E·W_V, W_O·U
FactoredCircuit qk_factors(const Eigen::MatrixXd& E, const HeadWeights& head);  // E·W_Q, (E·W_K)ᵀ

// Σλ / Σ|λ| over the eigenvalues λ of a square matrix (Eigen's EigenSolver; complex λ count
// by their modulus; Σλ is real, the complex ones coming in conjugate pairs). 1: every λ is
// real and positive, the circuit copies; −1: it suppresses what it reads; 0 for a zero matrix.
// Given ov_factors(...).turned() [d,d], it is the OV circuit's score without the [V,V] matrix.
double copying_score(const Eigen::MatrixXd& circuit);

// One cell of a [V,V] circuit: row `from` (the character read, or the query), column `to`.
struct TokenPair {
    int32_t from = 0, to = 0;
    double value = 0;
};
// The order of top pairs: larger value first; equal values: lower row, then lower column.
bool ranks_before(const TokenPair& x, const TokenPair& y);
// The `count` largest cells, in that order.
std::vector<TokenPair> top_pairs(const Eigen::MatrixXd& circuit, int64_t count);

// The same from the factors, computing `block_rows` rows of the circuit at a time
// (left.middleRows(r, n)·right, [n,V]) and keeping the running `count` largest: memory for
// one block, never for [V,V]. Also the largest |entry|, the end of the pictures' colour scale.
struct CircuitExtremes {
    std::vector<TokenPair> top;  // as top_pairs(product(), count) gives them
    double largest_abs = 0;      // product().cwiseAbs().maxCoeff()
};
CircuitExtremes top_pairs_by_blocks(const FactoredCircuit& circuit, int64_t count, int64_t block_rows);

// A circuit too large to draw, in a picture one can read: the rows of the characters its top
// pairs read (or query), the columns of those they raise (or key), each in order of its
// first pair, and the circuit's entries there, the top pairs among them.
struct CircuitExcerpt {
    std::vector<TokenPair> pairs;            // the largest entries, largest first
    std::vector<int32_t> rows, columns;      // character ids
    Eigen::MatrixXd values;                  // [rows, columns]: left.row(a)·right.col(b)
};
CircuitExcerpt circuit_excerpt(const FactoredCircuit& circuit, const std::vector<TokenPair>& pairs);

// ---- composition between layers ----

// ‖A·B‖_F / (‖A‖_F·‖B‖_F); 0 if A or B is zero.
double composition_score(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B);

// What "high" means: the same score for random matrices of the heads' shapes and ranks,
// A = G1·G2 and B = G3·G4 with G1, G3 [D,d] and G2, G4 [d,D] standard Gaussians.
struct CompositionBaseline {
    double mean = 0, std = 0;  // over the draws (std with n − 1)
    int64_t draws = 0;
    uint64_t seed = 0;
};
CompositionBaseline composition_baseline(int64_t D, int64_t d, int64_t draws, uint64_t seed);

// One earlier-layer head h1 and one later-layer head h2; A = W_OV^{h1} in all three:
//   q: B = W_QK^{h2}     (h1's output read by h2's queries)
//   k: B = (W_QK^{h2})ᵀ  (... by its keys)
//   v: B = W_OV^{h2}     (... by its values)
struct Composition {
    int64_t earlier_layer = 0, earlier_head = 0, later_layer = 0, later_head = 0;
    double q = 0, k = 0, v = 0;
};

// ---- everything, per head ----

struct HeadCircuits {
    HeadWeights weights;
    double copying = 0;                       // copying_score(ov_factors(...).turned())
    std::vector<TokenPair> ov_top, qk_top;    // the kTopPairs largest entries
    double ov_largest_abs = 0, qk_largest_abs = 0;  // the largest |entry| of each circuit

    // V ≤ kGridLimit: the whole circuits, drawn as grids.
    Eigen::MatrixXd ov, qk;                   // [V,V]; empty when V > kGridLimit
    // V > kGridLimit: what is drawn instead, the kPairsDrawn largest entries.
    CircuitExcerpt ov_excerpt, qk_excerpt;    // empty when V ≤ kGridLimit

    bool drawn_whole() const { return ov.size() > 0; }
};

struct Circuits {
    std::vector<HeadCircuits> heads;       // layer-major
    std::vector<Composition> composition;  // every earlier head × later head, earlier layer < later layer,
                                           // in order of (earlier layer, later layer, h1, h2)
    CompositionBaseline baseline;
};

inline constexpr int64_t kTopPairs = 10;     // in circuits.json and the report's tables
inline constexpr int64_t kGridLimit = 256;   // V up to this: whole [V,V] grids; above: excerpts
inline constexpr int64_t kPairsDrawn = 24;   // the entries an excerpt shows
inline constexpr int64_t kBaselineDraws = 100;
inline constexpr uint64_t kBaselineSeed = 1;  // fixed, so that every run states the same baseline

Circuits compute_circuits(const Transformer& model);

// ---- the vocabulary, grouped by role ----

// Which role each character plays, as far as the probes tell (no probes: no groups).
//   names        characters of who-answers
//   colours      characters of colour-answers
//   verbs        characters of a probe's story (its prompt up to the first 。) between the
//                name and the colour, when both answers stand in it
//   objects      characters of that story after the colour that the rest of the prompt (the
//                questions) repeats
//   punctuation  punctuation and whitespace (by code point: ASCII, general and CJK punctuation,
//                fullwidth forms)
//   other        the rest
// A character claimed by several roles keeps the first in this order.
struct VocabularyGroups {
    std::vector<std::string> names;  // the groups in display order (empty: no grouping)
    std::vector<int> group_of;       // [V]: index into names
    std::vector<int32_t> order;      // every id once: by group, then by id (no grouping: 0..V-1)
};
VocabularyGroups group_vocabulary(const Vocabulary& vocab, const std::vector<Probe>& probes);
// The rule above in one sentence, for circuits.json and the report.
const char* vocabulary_grouping_rule();

}  // namespace tinyformer
