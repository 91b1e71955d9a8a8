// The numbers the multi-head attention lesson prints, computed by the engine: every value
// below comes from running tinyformer's ops (split_heads, merge_heads, reshape, the
// attention module), none is written down. `tinyformer lesson` prints them; the tests hold
// them against PyTorch's.
//
// Notation: B batch, T positions, D = d_model, H heads, d = D/H the head width.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/engine/tensor.hpp"
#include "tinyformer/model/attention.hpp"

namespace tinyformer {

// X = arange(12) as [B=1,T=3,D=4]: position t holds 4t .. 4t+3. Every value is also its own
// flat index, so a value seen anywhere says which cell of X it came from.
Tensor lesson_input(DType dtype = DType::f32);

// The d values of head h at position t of a split tensor [1,H,T,d].
std::vector<double> head_row(const Tensor& heads, int64_t h, int64_t t);

// Whole numbers as the lesson writes them: [4, 5].
std::string integers_text(const std::vector<double>& values);

// The lesson's sections, in its order: an id (the JSON's key), a title and one line on what it
// shows. The report and the JSON both walk this list, so they cannot drift apart.
struct LessonSection {
    const char* id;
    const char* title;
    const char* shows;
};
const std::vector<LessonSection>& lesson_sections();

// 1. Where one row of weights reaches its limit. Two content vectors V = [1, 0] and [0, 2];
// one row of weights [a, 1-a] gives [a, 2(1-a)], a segment as a runs over [0, 1], and the
// target [0.8, 1.6] is off it: its first coordinate needs a = 0.8, its second a = 0.2. Two
// heads, one per coordinate, with the hand-set rows [0.8, 0.2] and [0.2, 0.8], reach it.
struct SingleRowLimit {
    Tensor values;                      // V [1,T=2,D=2]: [1, 0] and [0, 2]
    std::vector<double> target;         // [0.8, 1.6]
    std::vector<double> at_a0, at_a1;   // one row of weights at a = 0 and a = 1: [0, 2] and [1, 0]
    std::vector<double> a_needed;       // per coordinate, the a that reaches the target there
    bool reachable = false;             // one a for every coordinate
    double closest_a = 0;               // the point of the segment nearest the target
    std::vector<double> closest;
    double distance = 0;
    std::vector<std::vector<double>> head_weights;  // [0.8, 0.2] and [0.2, 0.8], set by hand
    Tensor two_heads;                   // [1,1,2] = merge_heads(head weights @ split_heads(V, 2))
    // The segment drawn: the output of one row [a, 1-a] for a = 0, 0.01, ..., 1 (101 points).
    std::vector<double> a_steps;
    std::vector<std::vector<double>> segment;
};
SingleRowLimit single_row_limit();

// 2. Splitting X into 2 heads and merging them back, and the split with the transpose forgotten.
struct SplitMerge {
    Tensor x;             // [1,3,4] = arange(12)
    Tensor features;      // [1,3,2,2] = reshape(x, [B,T,H,d]): the feature axis split, before the transpose
    Tensor split;         // [1,2,3,2] = split_heads(x, 2) = transpose(features, 1, 2)
    Tensor merged;        // [1,3,4] = merge_heads(split)
    Tensor wrong;         // [1,2,3,2] = reshape(x, [1,2,3,2]): the same shape, no transpose
    Tensor wrong_merged;  // [1,3,4] = merge_heads(wrong): not x
    bool merged_equals_x = false;
    bool wrong_merged_equals_x = false;
    std::vector<double> split_head0_position1;  // head_row(split, 0, 1)
    std::vector<double> wrong_head0_position1;  // head_row(wrong, 0, 1)
};
SplitMerge split_merge_example();

// PyTorch's bound for nn.Linear's default weight init, kaiming_uniform_(a=√5):
// √3 · √(2/(1+a²)) / √in_features, in double as torch computes it (for in=4 that is
// 0.49999999999999994, which is 0.5 once rounded to float).
double torch_linear_weight_bound(int64_t in_features);

// The lesson's attention module: torch.manual_seed(seed), then four nn.Linear(D, D,
// bias=False) constructed in the order q_proj, k_proj, v_proj, out_proj, each weight [D,D] =
// [out,in] drawn by uniform_(-bound, bound) from PyTorch's generator (TorchRng): the same
// float32 weights, bit for bit.
std::pair<MultiHeadAttention, Parameters> torch_seeded_attention(int64_t d_model, int64_t n_heads, uint64_t seed);

// 5 and 6. The lesson's random example: seed 42, D=4, H=2 (d=2), X = arange(12), causal,
// scores scaled by 1/√d. The weights are drawn in float32, as torch draws them, and the
// attention runs in float64, so that the six printed digits are the lesson's (float32 gives
// head 1's 0.99999750 as 0.999997; the exact value is 0.99999755).
struct AttentionExample {
    uint64_t seed = 42;
    int64_t n_heads = 2;
    double init_bound = 0;  // torch_linear_weight_bound(4)
    Tensor q_proj, k_proj, v_proj, out_proj;  // [4,4] each = [out,in]
    Tensor x;                // [1,3,4], float64
    Tensor context;          // [1,H,T,d]: the heads' outputs before merging
    Tensor weights;          // [1,H,T,T]: all heads at once (MultiHeadAttention::forward)
    Tensor output;           // [1,T,D]
    Tensor looped_weights;   // [1,H,T,T]: one head at a time, each from its own d features
    Tensor looped_output;    // [1,T,D]
    double max_abs_diff = 0;  // largest |batched − looped| over the weights and the output
};
AttentionExample attention_example();

// Row `query` of head h's attention weights [1,H,Tq,Tk]: how much it reads each key, [Tk].
std::vector<double> weights_at(const Tensor& weights, int64_t h, int64_t query);

// 3 and 4 (after the weights are drawn): the shapes of one head's computation, and the heads
// concatenated, not added, then mixed by out_proj. For the seed-42 example.
struct HeadShapes {
    Shape scores;        // [1,H,T,T]: all heads' score tables
    Shape head_output;   // [1,T,d]: one head's aggregate
    Shape all_heads;     // [1,H,T,d]
    double scale = 0;    // 1/√d, d the head width
    double wrong_scale = 0;  // 1/√D, the full width's
};
HeadShapes head_shapes(const AttentionExample& example);

struct Concatenation {
    std::vector<double> head0, head1;  // the two heads' outputs at position 1: [a, b] and [c, d]
    std::vector<double> merged;        // merge_heads at position 1: [a, b, c, d]
    std::vector<double> mixing_row;    // an out_proj row, [1, 0, 1, 0]
    double mixed = 0;                  // that row times the merged vector: a + c
};
Concatenation concatenation(const AttentionExample& example);

// 7. The four projections' parameters, counted from the parameters the engine allocates.
struct ParameterCount {
    int64_t d_model = 0, n_heads = 0;
    int64_t counted = 0;  // MultiHeadAttention::create(D, H, ...).second.count()
    int64_t formula = 0;  // 4 D²
};
std::vector<ParameterCount> parameter_counts();  // D=4 H=2, then D=64 with H = 1, 2, 4

// 8. The engine's message for split_heads on [1,3,D] into H heads when D is not divisible
// by H; empty if split_heads did not throw.
std::string split_error_message(int64_t d_model, int64_t n_heads);

// 9. The lesson's two check questions, answered by running the engine.
struct CheckQuestion {
    std::string question, answer;
};
struct CheckAnswers {
    // Q1: X = arange(12) in one head; and the full model's D=64, H=2.
    Shape one_head_shape;                 // [1,1,3,4]
    std::vector<double> one_head_row;    // head 0, position 1: [4, 5, 6, 7]
    int64_t full_head_width = 0;          // 32
    int64_t full_parameters = 0;          // 16,384
    // Q2: X[0] = [[0,1,2,3],[4,5,6,7]], 2 heads, with and without the transpose.
    Shape correct_shape, wrong_shape;     // both [1,2,2,2]
    std::vector<double> correct_row, wrong_row;  // head 0, position 1: [4, 5] and [2, 3]
};
CheckAnswers check_answers();

struct Lesson {
    SingleRowLimit single_row;
    SplitMerge split_merge;
    AttentionExample attention;
    HeadShapes shapes;
    Concatenation concatenation;
    CheckAnswers answers;
    std::vector<ParameterCount> counts;
    std::string d5_error;  // split_error_message(5, 2)
    std::vector<CheckQuestion> questions;
};
Lesson run_lesson();

// The terminal report (headings, aligned numbers, 6 decimals for weights) and every number
// of it as JSON.
std::string lesson_text(const Lesson& lesson);
nlohmann::json lesson_json(const Lesson& lesson);

}  // namespace tinyformer
