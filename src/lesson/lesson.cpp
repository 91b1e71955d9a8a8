// The lesson's numbers, each computed by running the engine's ops (see lesson.hpp).
#include "tinyformer/lesson/lesson.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/torch_rng.hpp"

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

// ---------------------------------------------------------------------------------------
// 1. Split and merge
// ---------------------------------------------------------------------------------------

SplitMerge split_merge_example() {
    SplitMerge result;
    result.x = lesson_input();                                   // [1,3,4]
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
// 2. The lesson's random example, drawn as PyTorch draws it
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
// 3. The same attention, one head at a time
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
    auto created = torch_seeded_attention(D, example.n_heads, example.seed);
    const MultiHeadAttention& attention = created.first;
    example.init_bound = torch_linear_weight_bound(D);
    example.q_proj = attention.q_proj;
    example.k_proj = attention.k_proj;
    example.v_proj = attention.v_proj;
    example.out_proj = attention.out_proj;
    example.x = lesson_input(DType::f32);  // [1,3,4]

    AttentionOptions options;
    options.causal = true;
    const AttentionResult batched = attention.forward(example.x, example.x, example.x, options);
    example.weights = batched.weights;  // [1,H,T,T]
    example.output = batched.output;    // [1,T,D]

    const LoopedAttention looped = attention_head_by_head(attention, example.x);
    example.looped_weights = looped.weights;
    example.looped_output = looped.output;
    example.max_abs_diff = std::max(max_abs_diff(example.weights, example.looped_weights),
                                    max_abs_diff(example.output, example.looped_output));
    return example;
}

std::vector<double> weights_at(const Tensor& weights, int64_t h, int64_t query) {
    const int64_t Tq = weights.dim(2), Tk = weights.dim(3);
    std::vector<double> row;
    for (int64_t key = 0; key < Tk; ++key) row.push_back(weights.at((h * Tq + query) * Tk + key));  // [0,h,query,key]
    return row;
}

// ---------------------------------------------------------------------------------------
// 4 and 5. Parameter count, and D not divisible by H
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
// 6. The check questions, answered from the numbers
// ---------------------------------------------------------------------------------------

std::string integers_text(const std::vector<double>& values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(static_cast<long long>(std::llround(values[i])));
    }
    return text + "]";
}

static std::vector<CheckQuestion> check_questions(const SplitMerge& split_merge, const std::vector<ParameterCount>& counts) {
    std::vector<CheckQuestion> questions;

    // X holds its own flat indices, so a value v is feature v % D of position v / D.
    const int64_t D = split_merge.x.dim(2);
    auto where_in_x = [D](const std::vector<double>& values) {
        const int64_t first = std::llround(values.front()), last = std::llround(values.back());
        return "features " + std::to_string(first % D) + ".." + std::to_string(last % D) + " of position " +
               std::to_string(first / D);
    };
    questions.push_back({"At head 0, position 1, what does the split hold?",
                         integers_text(split_merge.split_head0_position1) + ", " +
                             where_in_x(split_merge.split_head0_position1) + ". Forgetting the transpose gives " +
                             integers_text(split_merge.wrong_head0_position1) + " instead, " +
                             where_in_x(split_merge.wrong_head0_position1) +
                             ": the same shape, the wrong numbers."});

    std::string listed;
    bool all_equal = true;
    int64_t first_at_64 = -1;
    for (const ParameterCount& count : counts) {
        if (count.d_model != 64) continue;
        if (first_at_64 < 0) first_at_64 = count.counted;
        all_equal = all_equal && count.counted == first_at_64;
        listed += (listed.empty() ? "" : ", ") + std::string("H=") + std::to_string(count.n_heads) + ": " +
                  std::to_string(count.counted);
    }
    questions.push_back({"Does splitting into more heads add parameters?",
                         std::string(all_equal ? "No" : "Yes") + ": at D=64 the four projections hold " + listed +
                             ". Splitting cuts each projection's output into heads; the [D,D] matrices stay the same."});
    return questions;
}

Lesson run_lesson() {
    Lesson lesson;
    lesson.split_merge = split_merge_example();
    lesson.attention = attention_example();
    lesson.counts = parameter_counts();
    lesson.d5_error = split_error_message(5, 2);
    lesson.questions = check_questions(lesson.split_merge, lesson.counts);
    return lesson;
}

}  // namespace tinyformer
