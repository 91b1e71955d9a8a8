// What `tinyformer lesson` prints (lesson_text) and writes with --json (lesson_json): the
// numbers of run_lesson(), laid out; nothing here computes a number of its own.
#include <cmath>
#include <cstdio>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/lesson/lesson.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

namespace {

// `value` right-aligned in `width` columns with `digits` decimals.
std::string column(double value, int width, int digits = 0) {
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%*.*f", width, digits, value);
    return buffer;
}

// 16384 → "16,384"
std::string with_commas(int64_t n) {
    std::string digits = std::to_string(n), text;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
        text += digits[i];
    }
    return text;
}

std::string padded(const std::string& text, size_t width) {
    return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// A [1,T,D] tensor, one row per position.
std::string positions_table(const Tensor& x) {
    const int64_t T = x.dim(1), D = x.dim(2);
    std::string text;
    for (int64_t t = 0; t < T; ++t) {
        text += "    t=" + std::to_string(t) + " ";
        for (int64_t i = 0; i < D; ++i) text += column(x.at(t * D + i), 4);
        text += "\n";
    }
    return text;
}

// A [1,H,T,d] tensor: one row per position, the heads side by side.
std::string heads_table(const Tensor& heads) {
    const int64_t H = heads.dim(1), T = heads.dim(2), d = heads.dim(3);
    const int width = static_cast<int>(4 * d) + 4;
    std::string text = "        ";
    for (int64_t h = 0; h < H; ++h) text += padded("head " + std::to_string(h), static_cast<size_t>(width));
    text += "\n";
    for (int64_t t = 0; t < T; ++t) {
        text += "    t=" + std::to_string(t) + " ";
        for (int64_t h = 0; h < H; ++h) {
            text += "    ";
            for (int64_t j = 0; j < d; ++j) text += column(heads.at((h * T + t) * d + j), 4);
        }
        text += "\n";
    }
    return text;
}

// `text` cut into lines of at most `width` columns at spaces, each line after `indent`.
std::string wrapped(const std::string& text, const std::string& indent, size_t width) {
    std::string result, line;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(start, end - start);
        if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
            result += indent + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
        start = end + 1;
    }
    return line.empty() ? result : result + indent + line + "\n";
}

std::string yes_no(bool value) { return value ? "yes" : "no"; }

nlohmann::json tensor_json(const Tensor& tensor) {
    return {{"shape", tensor.shape()}, {"values", tensor.to_vector()}};
}

}  // namespace

std::string lesson_text(const Lesson& lesson) {
    const SplitMerge& sm = lesson.split_merge;
    const AttentionExample& ex = lesson.attention;
    const int64_t D = ex.x.dim(2), H = ex.n_heads, d = D / H, T = ex.x.dim(1);
    std::string text = "Multi-head attention: the lesson's numbers, computed by tinyformer (float32, " +
                       backend().name() + " backend)\n";

    text += "\n1. Split and merge: X = arange(12) as [B=1,T=3,D=4], 2 heads\n";
    text += "  X " + shape_str(sm.x.shape()) + "\n" + positions_table(sm.x);
    text += "  split_heads(X, 2) " + shape_str(sm.split.shape()) + " = [B,H,T,d]\n" + heads_table(sm.split);
    text += "  merge_heads(split_heads(X, 2)) " + shape_str(sm.merged.shape()) + "\n" + positions_table(sm.merged);
    text += "  merge_heads(split_heads(X, 2)) == X: " + yes_no(sm.merged_equals_x) + "\n";
    text += "  Forgot the transpose: reshape(X, [1,2,3,2]) " + shape_str(sm.wrong.shape()) + "\n" + heads_table(sm.wrong);
    text += "  merge_heads(reshape(X, [1,2,3,2])) == X: " + yes_no(sm.wrong_merged_equals_x) + "\n";
    text += "  head 0, position 1: split_heads holds " + integers_text(sm.split_head0_position1) +
            ", the reshape without transpose " + integers_text(sm.wrong_head0_position1) + "\n";

    text += "\n2. Attention weights at query position 1\n";
    text += "  torch.manual_seed(" + std::to_string(ex.seed) + "); q_proj, k_proj, v_proj, out_proj = nn.Linear(" +
            std::to_string(D) + ", " + std::to_string(D) + ", bias=False) each,\n";
    text += "  weights uniform(-b, b) with b = " + fixed(ex.init_bound, 17) + " (kaiming_uniform_, a=sqrt(5))\n";
    text += "  X = arange(12) as [1,3,4], H=" + std::to_string(H) + " (d=" + std::to_string(d) +
            "), causal, scores x 1/sqrt(" + std::to_string(d) + ")\n";
    text += "           ";  // as wide as "    head 0:"
    for (int64_t key = 0; key < T; ++key) text += padded("key " + std::to_string(key), 10);
    text += "\n";
    for (int64_t h = 0; h < H; ++h) {
        text += "    head " + std::to_string(h) + ":";
        for (double weight : weights_at(ex.weights, h, 1)) text += column(weight, 10, 6);
        text += "\n";
    }

    text += "\n3. All heads at once = one head at a time\n";
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.3g", ex.max_abs_diff);
    text += "  max |batched - looped| over weights and output: " + std::string(diff) +
            " (<= 1e-6: " + yes_no(ex.max_abs_diff <= 1e-6) + ")\n";

    text += "\n4. Parameters of q_proj, k_proj, v_proj, out_proj: 4 D^2\n";
    text += "       D     H    counted      4 D^2\n";
    for (const ParameterCount& count : lesson.counts)
        text += "    " + padded(std::to_string(count.d_model), 4) + padded(std::to_string(count.n_heads), 6) +
                padded(with_commas(count.counted), 11) + padded(with_commas(count.formula), 11) + "\n";

    text += "\n5. D=5 into 2 heads: split_heads on [1,3,5]\n";
    text += "  " + (lesson.d5_error.empty() ? std::string("no error (unexpected)") : lesson.d5_error) + "\n";

    text += "\n6. Check questions\n";
    for (size_t i = 0; i < lesson.questions.size(); ++i) {
        text += "  Q" + std::to_string(i + 1) + ". " + lesson.questions[i].question + "\n";
        text += wrapped(lesson.questions[i].answer, "      ", 96);
    }
    return text;
}

nlohmann::json lesson_json(const Lesson& lesson) {
    const SplitMerge& sm = lesson.split_merge;
    const AttentionExample& ex = lesson.attention;
    const int64_t D = ex.x.dim(2), H = ex.n_heads, d = D / H, T = ex.x.dim(1);
    nlohmann::json json;
    json["dtype"] = "float32";
    json["backend"] = backend().name();
    json["split_merge"] = {
        {"x", tensor_json(sm.x)},
        {"split", tensor_json(sm.split)},
        {"merged", tensor_json(sm.merged)},
        {"merged_equals_x", sm.merged_equals_x},
        {"wrong", tensor_json(sm.wrong)},
        {"wrong_merged", tensor_json(sm.wrong_merged)},
        {"wrong_merged_equals_x", sm.wrong_merged_equals_x},
        {"head0_position1", {{"split", sm.split_head0_position1}, {"wrong", sm.wrong_head0_position1}}},
    };
    nlohmann::json at_query1 = nlohmann::json::array();
    for (int64_t h = 0; h < H; ++h) at_query1.push_back(weights_at(ex.weights, h, 1));
    json["attention"] = {
        {"seed", ex.seed},
        {"d_model", D},
        {"n_heads", H},
        {"head_width", d},
        {"positions", T},
        {"causal", true},
        {"scale", 1.0 / std::sqrt(static_cast<double>(d))},
        {"init_bound", ex.init_bound},
        {"q_proj", tensor_json(ex.q_proj)},
        {"k_proj", tensor_json(ex.k_proj)},
        {"v_proj", tensor_json(ex.v_proj)},
        {"out_proj", tensor_json(ex.out_proj)},
        {"x", tensor_json(ex.x)},
        {"weights", tensor_json(ex.weights)},
        {"output", tensor_json(ex.output)},
        {"weights_at_query1", at_query1},
        {"looped_weights", tensor_json(ex.looped_weights)},
        {"looped_output", tensor_json(ex.looped_output)},
        {"looped_max_abs_diff", ex.max_abs_diff},
        {"looped_equal_within_1e-6", ex.max_abs_diff <= 1e-6},
    };
    json["parameter_counts"] = nlohmann::json::array();
    for (const ParameterCount& count : lesson.counts)
        json["parameter_counts"].push_back(
            {{"d_model", count.d_model}, {"n_heads", count.n_heads}, {"counted", count.counted}, {"formula", count.formula}});
    json["d5_error"] = lesson.d5_error;
    json["check_questions"] = nlohmann::json::array();
    for (const CheckQuestion& question : lesson.questions)
        json["check_questions"].push_back({{"question", question.question}, {"answer", question.answer}});
    return json;
}

}  // namespace tinyformer
