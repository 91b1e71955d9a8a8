// The lesson's numbers, each computed by running the engine's ops (see lesson.hpp).
#include "tinyformer/lesson/lesson.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/torch_rng.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

Tensor lesson_input(DType dtype) {
    std::vector<double> values(12);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
    return Tensor::from(values, {1, 3, 4}, dtype);  // [B=1,T=3,D=4]
}

std::vector<double> head_row(const Tensor& heads, int64_t h, int64_t t) {
    const int64_t T = heads.dim(2), d = heads.dim(3);
    std::vector<double> row;
    for (int64_t j = 0; j < d; ++j) row.push_back(heads.at((h * T + t) * d + j));  // heads[0,h,t,j]
    return row;
}

const std::vector<LessonSection>& lesson_sections() {
    static const std::vector<LessonSection> sections = {
        {"single_row_limit", "One row of weights cannot reach every target; two heads can",
         "a single row of weights moves the output only along a segment; heads with rows of their own reach a point off it"},
        {"split_merge", "Split and merge: X = arange(12) as [B=1,T=3,D=4], 2 heads",
         "splitting cuts the feature axis, not the positions: every head keeps all three positions"},
        {"head_shapes", "One head's attention: its own scores, its own aggregate",
         "each head has its own [T,T] score table, scaled by its own width d, not by D"},
        {"concatenation", "The heads are concatenated, then mixed by out_proj",
         "merging places the heads side by side; only out_proj's rows add one head to another"},
        {"attention", "Attention weights at query position 1 (seed 42)",
         "with the same input and query, two heads with random projections already read different positions"},
        {"looped", "All heads at once = one head at a time",
         "batching over the head axis computes exactly what a loop over the heads does"},
        {"parameter_counts", "Parameters of q_proj, k_proj, v_proj, out_proj: 4 D^2",
         "more heads share out the same width: the four [D,D] projections do not grow"},
        {"d5_error", "D=5 into 2 heads: split_heads on [1,3,5]",
         "a width the heads cannot share equally is refused, not silently cut"},
        {"check_questions", "The lesson's check questions, answered by the engine",
         "a shape alone does not prove a split right: the numbers at head 0, position 1 do"},
    };
    return sections;
}

// ---------------------------------------------------------------------------------------
// 1. One row of weights, and two heads
// ---------------------------------------------------------------------------------------

SingleRowLimit single_row_limit() {
    SingleRowLimit result;
    result.values = Tensor::from(std::vector<double>{1, 0, 0, 2}, {1, 2, 2}, DType::f64);  // V: [1,0], [0,2]
    result.target = {0.8, 1.6};
    // One row of weights [a, 1-a] over the two positions: the output [1,1,2], linear in a.
    auto one_row = [&](double a) {
        return matmul(Tensor::from(std::vector<double>{a, 1 - a}, {1, 1, 2}, DType::f64), result.values).to_vector();
    };
    result.at_a0 = one_row(0.0);  // V's second row, [0, 2]
    result.at_a1 = one_row(1.0);  // its first, [1, 0]
    const size_t D = result.target.size();
    std::vector<double> direction(D);  // output(a) = at_a0 + a · direction
    for (size_t j = 0; j < D; ++j) {
        direction[j] = result.at_a1[j] - result.at_a0[j];
        result.a_needed.push_back((result.target[j] - result.at_a0[j]) / direction[j]);
    }
    result.reachable = true;
    for (double a : result.a_needed) result.reachable = result.reachable && std::abs(a - result.a_needed[0]) < 1e-12;
    // The nearest point of the segment: the target projected on the line, a clamped to [0, 1].
    double along = 0, length_squared = 0;
    for (size_t j = 0; j < D; ++j) {
        along += (result.target[j] - result.at_a0[j]) * direction[j];
        length_squared += direction[j] * direction[j];
    }
    result.closest_a = std::clamp(along / length_squared, 0.0, 1.0);
    result.closest = one_row(result.closest_a);
    for (size_t j = 0; j < D; ++j) result.distance += std::pow(result.target[j] - result.closest[j], 2);
    result.distance = std::sqrt(result.distance);
    // Two heads of width 1, one per coordinate, each with its own row of weights.
    result.head_weights = {{0.8, 0.2}, {0.2, 0.8}};
    const Tensor weights = Tensor::from(std::vector<double>{0.8, 0.2, 0.2, 0.8}, {1, 2, 1, 2}, DType::f64);  // [1,H,1,T]
    const Tensor per_head = matmul(weights, split_heads(result.values, 2));  // [1,H,1,d=1]
    result.two_heads = merge_heads(per_head);                                // [1,1,2]
    for (int step = 0; step <= 100; ++step) {
        result.a_steps.push_back(step / 100.0);
        result.segment.push_back(one_row(step / 100.0));
    }
    return result;
}

// ---------------------------------------------------------------------------------------
// 2. Split and merge
// ---------------------------------------------------------------------------------------

SplitMerge split_merge_example() {
    SplitMerge result;
    result.x = lesson_input();                                   // [1,3,4]
    result.features = reshape(result.x, {1, 3, 2, 2});           // [B,T,H,d]: the feature axis split
    result.split = split_heads(result.x, 2);                     // [1,2,3,2]
    result.merged = merge_heads(result.split);                   // [1,3,4]
    result.wrong = reshape(result.x, {1, 2, 3, 2});              // [1,2,3,2], no transpose
    result.wrong_merged = merge_heads(result.wrong);             // [1,3,4]
    result.merged_equals_x = result.merged.shape() == result.x.shape() &&
                             result.merged.to_vector() == result.x.to_vector();
    result.wrong_merged_equals_x = result.wrong_merged.shape() == result.x.shape() &&
                                   result.wrong_merged.to_vector() == result.x.to_vector();
    result.split_head0_position1 = head_row(result.split, 0, 1);
    result.wrong_head0_position1 = head_row(result.wrong, 0, 1);
    return result;
}

// ---------------------------------------------------------------------------------------
// 5. The lesson's random example, drawn as PyTorch draws it
// ---------------------------------------------------------------------------------------

double torch_linear_weight_bound(int64_t in_features) {
    // torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5)): gain = calculate_gain("leaky_relu", a),
    // std = gain / sqrt(fan_in), bound = sqrt(3) * std — the same operations in the same order.
    const double a = std::sqrt(5.0);
    const double gain = std::sqrt(2.0 / (1.0 + a * a));
    const double std_dev = gain / std::sqrt(static_cast<double>(in_features));
    return std::sqrt(3.0) * std_dev;
}

std::pair<MultiHeadAttention, Parameters> torch_seeded_attention(int64_t d_model, int64_t n_heads, uint64_t seed) {
    Parameters params(MultiHeadAttention::parameter_specs(d_model), DType::f32);
    TorchRng rng(seed);  // torch.manual_seed(seed)
    const double bound = torch_linear_weight_bound(d_model);
    // parameter_specs lists q_proj, k_proj, v_proj, out_proj: the order the lesson constructs them.
    for (const auto& named : params.named()) {
        Tensor weight = named.second;  // [D,D] = [out,in]
        rng.uniform(weight.data<float>(), weight.numel(), -bound, bound);
    }
    MultiHeadAttention attention(params, "", n_heads);
    return {attention, params};
}

// ---------------------------------------------------------------------------------------
// 6. The same attention, one head at a time
// ---------------------------------------------------------------------------------------

// Features h*d .. h*d+d-1 of every position of x [B,T,D], copied out: head h's slice [B,T,d].
static Tensor head_features(const Tensor& x, int64_t h, int64_t d) {
    const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
    std::vector<double> values;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < d; ++j) values.push_back(x.at((b * T + t) * D + h * d + j));
    return Tensor::from(values, {B, T, d}, x.dtype());
}

// Causal self-attention of x [1,T,D] written as a loop over the heads: each head's q, k, v
// are its own d features of the projections, its weights softmax(q kᵀ / √d) [1,T,T], its
// output weights v [1,T,d] written into its d features of the concatenation [1,T,D].
struct LoopedAttention {
    Tensor weights;  // [1,H,T,T]
    Tensor output;   // [1,T,D]
};
static LoopedAttention attention_head_by_head(const MultiHeadAttention& attention, const Tensor& x) {
    const int64_t T = x.dim(1), D = x.dim(2), H = attention.n_heads(), d = D / H;
    const double alpha = 1.0 / std::sqrt(static_cast<double>(d));
    const Tensor q = linear(x, attention.q_proj);  // [1,T,D]
    const Tensor k = linear(x, attention.k_proj);  // [1,T,D]
    const Tensor v = linear(x, attention.v_proj);  // [1,T,D]
    std::vector<double> weights(static_cast<size_t>(H * T * T));     // [1,H,T,T]
    std::vector<double> concatenated(static_cast<size_t>(T * D));    // [1,T,D]
    for (int64_t h = 0; h < H; ++h) {
        const Tensor q_h = head_features(q, h, d);                                    // [1,T,d]
        const Tensor k_h = head_features(k, h, d);                                    // [1,T,d]
        const Tensor v_h = head_features(v, h, d);                                    // [1,T,d]
        const Tensor scores = matmul(q_h, k_h, /*transpose_a=*/false, /*transpose_b=*/true, alpha);  // [1,T,T]
        const Tensor weights_h = softmax(scores, /*causal=*/true);                    // [1,T,T]
        const Tensor output_h = matmul(weights_h, v_h);                               // [1,T,d]
        for (int64_t i = 0; i < T * T; ++i) weights[static_cast<size_t>(h * T * T + i)] = weights_h.at(i);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < d; ++j)
                concatenated[static_cast<size_t>(t * D + h * d + j)] = output_h.at(t * d + j);
    }
    LoopedAttention result;
    result.weights = Tensor::from(weights, {1, H, T, T}, x.dtype());
    result.output = linear(Tensor::from(concatenated, {1, T, D}, x.dtype()), attention.out_proj);  // [1,T,D]
    return result;
}

static double max_abs_diff(const Tensor& a, const Tensor& b) {
    const std::vector<double> x = a.to_vector(), y = b.to_vector();
    double largest = 0;
    for (size_t i = 0; i < x.size(); ++i) largest = std::max(largest, std::abs(x[i] - y[i]));
    return largest;
}

AttentionExample attention_example() {
    AttentionExample example;
    const int64_t D = 4;
    auto created = torch_seeded_attention(D, example.n_heads, example.seed);  // float32, as torch draws
    example.init_bound = torch_linear_weight_bound(D);
    example.q_proj = created.first.q_proj;
    example.k_proj = created.first.k_proj;
    example.v_proj = created.first.v_proj;
    example.out_proj = created.first.out_proj;
    // The same weights in float64 (every float32 is a double exactly), and the attention run there.
    Parameters in_float64(MultiHeadAttention::parameter_specs(D), DType::f64);
    for (const auto& [name, weight] : in_float64.named()) {
        const std::vector<double> drawn = created.second.get(name).to_vector();
        std::copy(drawn.begin(), drawn.end(), Tensor(weight).data<double>());
    }
    const MultiHeadAttention attention(in_float64, "", example.n_heads);
    example.x = lesson_input(DType::f64);  // [1,3,4]

    AttentionOptions options;
    options.causal = true;
    options.keep_heads = true;
    const AttentionResult batched = attention.forward(example.x, example.x, example.x, options);
    example.weights = batched.weights;  // [1,H,T,T]
    example.output = batched.output;    // [1,T,D]
    example.context = batched.heads;    // [1,H,T,d]

    const LoopedAttention looped = attention_head_by_head(attention, example.x);
    example.looped_weights = looped.weights;
    example.looped_output = looped.output;
    example.max_abs_diff = std::max(max_abs_diff(example.weights, example.looped_weights),
                                    max_abs_diff(example.output, example.looped_output));
    return example;
}

// ---------------------------------------------------------------------------------------
// 3 and 4. One head's shapes; concatenation and out_proj
// ---------------------------------------------------------------------------------------

HeadShapes head_shapes(const AttentionExample& example) {
    HeadShapes shapes;
    const int64_t H = example.n_heads, D = example.x.dim(2), d = D / H;
    shapes.scores = example.weights.shape();   // [1,H,T,T]
    shapes.all_heads = example.context.shape();  // [1,H,T,d]
    shapes.head_output = {example.context.dim(0), example.context.dim(2), example.context.dim(3)};  // [1,T,d]
    shapes.scale = 1.0 / std::sqrt(static_cast<double>(d));
    shapes.wrong_scale = 1.0 / std::sqrt(static_cast<double>(D));
    return shapes;
}

Concatenation concatenation(const AttentionExample& example) {
    Concatenation result;
    result.head0 = head_row(example.context, 0, 1);  // [a, b]
    result.head1 = head_row(example.context, 1, 1);  // [c, d]
    const Tensor merged = merge_heads(example.context);  // [1,T,D]
    const int64_t D = merged.dim(2);
    for (int64_t j = 0; j < D; ++j) result.merged.push_back(merged.at(1 * D + j));  // position 1
    result.mixing_row = {1, 0, 1, 0};
    const Tensor row = Tensor::from(result.mixing_row, {1, D}, merged.dtype());  // one out_proj row [1,D]
    result.mixed = linear(merged, row).at(1);  // [1,T,1] at position 1: a + c
    return result;
}

std::vector<double> weights_at(const Tensor& weights, int64_t h, int64_t query) {
    const int64_t Tq = weights.dim(2), Tk = weights.dim(3);
    std::vector<double> row;
    for (int64_t key = 0; key < Tk; ++key) row.push_back(weights.at((h * Tq + query) * Tk + key));  // [0,h,query,key]
    return row;
}

// ---------------------------------------------------------------------------------------
// 7 and 8. Parameter count, and D not divisible by H
// ---------------------------------------------------------------------------------------

std::vector<ParameterCount> parameter_counts() {
    std::vector<ParameterCount> counts;
    for (const auto& [D, H] : std::vector<std::pair<int64_t, int64_t>>{{4, 2}, {64, 1}, {64, 2}, {64, 4}}) {
        ParameterCount count;
        count.d_model = D;
        count.n_heads = H;
        count.counted = MultiHeadAttention::create(D, H, /*seed=*/1).second.count();
        count.formula = 4 * D * D;
        counts.push_back(count);
    }
    return counts;
}

std::string split_error_message(int64_t d_model, int64_t n_heads) {
    try {
        split_heads(Tensor::zeros({1, 3, d_model}), n_heads);  // [B=1,T=3,D]
    } catch (const ShapeError& error) {
        return error.what();
    }
    return "";
}

// ---------------------------------------------------------------------------------------
// 9. The check questions, answered by running the engine
// ---------------------------------------------------------------------------------------

std::string integers_text(const std::vector<double>& values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(static_cast<long long>(std::llround(values[i])));
    }
    return text + "]";
}

CheckAnswers check_answers() {
    CheckAnswers answers;
    // Q1: the same X in one head, then the full model's width.
    const Tensor one_head = split_heads(lesson_input(), 1);  // [1,1,3,4]
    answers.one_head_shape = one_head.shape();
    answers.one_head_row = head_row(one_head, 0, 1);
    const int64_t D = 64, H = 2;
    answers.full_head_width = D / H;
    answers.full_parameters = MultiHeadAttention::create(D, H, /*seed=*/1).second.count();
    // Q2: two positions, so that positions and heads have the same length and only the
    // numbers can tell them apart.
    std::vector<double> eight(8);
    for (size_t i = 0; i < eight.size(); ++i) eight[i] = static_cast<double>(i);
    const Tensor short_x = Tensor::from(eight, {1, 2, 4}, DType::f32);  // [[0,1,2,3],[4,5,6,7]]
    const Tensor correct = split_heads(short_x, 2);                      // [1,2,2,2]
    const Tensor wrong = reshape(short_x, {1, 2, 2, 2});                 // the transpose left out
    answers.correct_shape = correct.shape();
    answers.wrong_shape = wrong.shape();
    answers.correct_row = head_row(correct, 0, 1);
    answers.wrong_row = head_row(wrong, 0, 1);
    return answers;
}

static std::vector<CheckQuestion> check_questions(const CheckAnswers& answers) {
    const bool same_shape = answers.correct_shape == answers.wrong_shape;
    return {
        {"Keep X = 0..11 but use 1 head: what shape, and what is at head 0, position 1? At D=64, H=2, "
         "what is each head's width and the four projections' parameter count?",
         shape_str(answers.one_head_shape) + "; head 0, position 1 holds " + integers_text(answers.one_head_row) +
             " (one head keeps all 4 features). At D=64, H=2: d = " + std::to_string(answers.full_head_width) +
             ", and 4 D^2 = " + with_commas(answers.full_parameters) + " parameters."},
        {"X[0] = [[0,1,2,3],[4,5,6,7]] into 2 heads: without transpose(1, 2) the shape is still [1,2,2,2]. "
         "Does that prove the split right? What do both hold at head 0, position 1?",
         std::string(same_shape ? "No" : "The shapes differ") + ": both are " + shape_str(answers.correct_shape) +
             ", but at head 0, position 1 the split holds " + integers_text(answers.correct_row) +
             " (position 1's first half) and the reshape without transpose " + integers_text(answers.wrong_row) +
             " (position 0's second half)."},
    };
}

Lesson run_lesson() {
    Lesson lesson;
    lesson.single_row = single_row_limit();
    lesson.split_merge = split_merge_example();
    lesson.attention = attention_example();
    lesson.shapes = head_shapes(lesson.attention);
    lesson.concatenation = concatenation(lesson.attention);
    lesson.counts = parameter_counts();
    lesson.d5_error = split_error_message(5, 2);
    lesson.answers = check_answers();
    lesson.questions = check_questions(lesson.answers);
    return lesson;
}

}  // namespace tinyformer
