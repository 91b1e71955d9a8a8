// What `tinyformer lesson` prints (lesson_text) and writes with --json (lesson_json): the
// numbers of run_lesson(), laid out; nothing here computes a number of its own.
#include <cmath>
#include <cstdio>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/lesson/lesson.hpp"
#include "tinyformer/support/json_number.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

namespace {

// `value` right-aligned in `width` columns with `digits` decimals.
std::string column(double value, int width, int digits = 0) {
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%*.*f", width, digits, value);
    return buffer;
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

// A float32 tensor's values in their float32 form (the drawn weights: 0.38226926, not
// 0.3822692632675171); a float64 tensor's as they are.
nlohmann::json tensor_json(const Tensor& tensor) {
    if (tensor.dtype() == DType::f32)
        return {{"shape", tensor.shape()},
                {"values", json_numbers({tensor.data<float>(), static_cast<size_t>(tensor.numel())})}};
    return {{"shape", tensor.shape()}, {"values", tensor.to_vector()}};
}

// 0.8, with as few decimals as the number needs (6 significant digits at most).
std::string number_text(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", std::abs(value) < 5e-7 ? 0.0 : value);
    return buffer;
}

// [0.8, 1.6]
std::string numbers_text(const std::vector<double>& values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i) text += (i > 0 ? ", " : "") + number_text(values[i]);
    return text + "]";
}

// Section `id`'s heading: its number in the lesson's order, its title, and what it shows.
std::string heading(const std::string& id) {
    const std::vector<LessonSection>& sections = lesson_sections();
    for (size_t i = 0; i < sections.size(); ++i)
        if (id == sections[i].id)
            return "\n" + std::to_string(i + 1) + ". " + sections[i].title + "\n" +
                   wrapped(std::string("What this shows: ") + sections[i].shows + ".", "   ", 96);
    return "\n" + id + "\n";
}

std::string single_row_text(const SingleRowLimit& limit) {
    std::string text = heading("single_row_limit");
    const std::vector<double> v = limit.values.to_vector();  // [1,2,2]
    text += "  V: position 0 holds " + numbers_text({v[0], v[1]}) + ", position 1 " + numbers_text({v[2], v[3]}) +
            "; the target aggregate is " + numbers_text(limit.target) + "\n";
    text += "  one row of weights [a, 1-a]: the output runs from " + numbers_text(limit.at_a0) + " (a=0) to " +
            numbers_text(limit.at_a1) + " (a=1)\n";
    std::string needs;
    for (size_t j = 0; j < limit.a_needed.size(); ++j)
        needs += (j > 0 ? ", " : "") + std::string("coordinate ") + std::to_string(j) + " needs a = " +
                 number_text(limit.a_needed[j]);
    text += "  " + needs + ": " + (limit.reachable ? "one a reaches it" : "no single a reaches the target") + "\n";
    text += "  nearest point of the segment: " + numbers_text(limit.closest) + " at a = " +
            number_text(limit.closest_a) + ", " + fixed(limit.distance, 4) + " from the target\n";
    text += "  two heads, one per coordinate, rows " + numbers_text(limit.head_weights[0]) + " and " +
            numbers_text(limit.head_weights[1]) + " (set by hand, not trained): concatenated " +
            numbers_text(limit.two_heads.to_vector()) + "\n";
    return text;
}

std::string split_merge_text(const SplitMerge& sm) {
    std::string text = heading("split_merge");
    text += "  X " + shape_str(sm.x.shape()) + "\n" + positions_table(sm.x);
    text += "  split_heads(X, 2) " + shape_str(sm.split.shape()) + " = [B,H,T,d]\n" + heads_table(sm.split);
    text += "  merge_heads(split_heads(X, 2)) " + shape_str(sm.merged.shape()) + "\n" + positions_table(sm.merged);
    text += "  merge_heads(split_heads(X, 2)) == X: " + yes_no(sm.merged_equals_x) + "\n";
    text += "  Forgot the transpose: reshape(X, [1,2,3,2]) " + shape_str(sm.wrong.shape()) + "\n" + heads_table(sm.wrong);
    text += "  merge_heads(reshape(X, [1,2,3,2])) == X: " + yes_no(sm.wrong_merged_equals_x) + "\n";
    text += "  head 0, position 1: split_heads holds " + integers_text(sm.split_head0_position1) +
            ", the reshape without transpose " + integers_text(sm.wrong_head0_position1) + "\n";
    return text;
}

std::string shapes_text(const HeadShapes& shapes, const AttentionExample& ex) {
    const int64_t D = ex.x.dim(2), d = D / ex.n_heads;
    std::string text = heading("head_shapes");
    text += "  head h: softmax(Q_h K_h^T / sqrt(d) + causal mask) V_h, on the seed-42 projections of section 5\n";
    text += "  all heads' scores " + shape_str(shapes.scores) + " = [B,H,T,T], softmax along the last (read) axis\n";
    text += "  one head's aggregate " + shape_str(shapes.head_output) + " = [B,T,d]; all heads " +
            shape_str(shapes.all_heads) + " = [B,H,T,d]\n";
    text += "  scale 1/sqrt(d) = 1/sqrt(" + std::to_string(d) + ") = " + fixed(shapes.scale, 6) +
            " (each head's dot product has d terms), not 1/sqrt(D) = 1/sqrt(" + std::to_string(D) + ") = " +
            fixed(shapes.wrong_scale, 6) + "\n";
    return text;
}

std::string concatenation_text(const Concatenation& c) {
    std::string text = heading("concatenation");
    text += "  position 1: head 0 gives [a, b] = " + numbers_text(c.head0) + ", head 1 gives [c, d] = " +
            numbers_text(c.head1) + "\n";
    text += "  merged: [a, b, c, d] = " + numbers_text(c.merged) + " (not [a+c, b+d])\n";
    text += "  an out_proj row " + numbers_text(c.mixing_row) + " times it: " + number_text(c.mixed) + " = a + c\n";
    return text;
}

}  // namespace

std::string lesson_text(const Lesson& lesson) {
    const AttentionExample& ex = lesson.attention;
    const int64_t D = ex.x.dim(2), H = ex.n_heads, d = D / H, T = ex.x.dim(1);
    std::string text = "Multi-head attention: the lesson's numbers, computed by tinyformer (" + backend().name() +
                       " backend)\n";
    text += single_row_text(lesson.single_row);
    text += split_merge_text(lesson.split_merge);
    text += shapes_text(lesson.shapes, ex);
    text += concatenation_text(lesson.concatenation);

    text += heading("attention");
    text += "  torch.manual_seed(" + std::to_string(ex.seed) + "); q_proj, k_proj, v_proj, out_proj = nn.Linear(" +
            std::to_string(D) + ", " + std::to_string(D) + ", bias=False) each,\n";
    text += "  weights uniform(-b, b) with b = " + fixed(ex.init_bound, 17) + " (kaiming_uniform_, a=sqrt(5))\n";
    text += "  X = arange(12) as [1,3,4], H=" + std::to_string(H) + " (d=" + std::to_string(d) +
            "), causal, scores x 1/sqrt(" + std::to_string(d) + "), in float64\n";
    text += "           ";  // as wide as "    head 0:"
    for (int64_t key = 0; key < T; ++key) text += padded("key " + std::to_string(key), 10);
    text += "\n";
    for (int64_t h = 0; h < H; ++h) {
        text += "    head " + std::to_string(h) + ":";
        for (double weight : weights_at(ex.weights, h, 1)) text += column(weight, 10, 6);
        text += "\n";
    }

    text += heading("looped");
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.3g", ex.max_abs_diff);
    text += "  max |batched - looped| over weights and output: " + std::string(diff) +
            " (<= 1e-6: " + yes_no(ex.max_abs_diff <= 1e-6) + ")\n";

    text += heading("parameter_counts");
    text += "       D     H    counted      4 D^2\n";
    for (const ParameterCount& count : lesson.counts)
        text += "    " + padded(std::to_string(count.d_model), 4) + padded(std::to_string(count.n_heads), 6) +
                padded(with_commas(count.counted), 11) + padded(with_commas(count.formula), 11) + "\n";

    text += heading("d5_error");
    text += "  " + (lesson.d5_error.empty() ? std::string("no error (unexpected)") : lesson.d5_error) + "\n";

    text += heading("check_questions");
    for (size_t i = 0; i < lesson.questions.size(); ++i) {
        text += wrapped("Q" + std::to_string(i + 1) + ". " + lesson.questions[i].question, "  ", 96);
        text += wrapped(lesson.questions[i].answer, "      ", 96);
    }
    return text;
}

nlohmann::json lesson_json(const Lesson& lesson) {
    const SplitMerge& sm = lesson.split_merge;
    const AttentionExample& ex = lesson.attention;
    const int64_t D = ex.x.dim(2), H = ex.n_heads, d = D / H, T = ex.x.dim(1);
    nlohmann::json json;
    json["backend"] = backend().name();
    // The sections in the lesson's order; each id is a key below.
    json["sections"] = nlohmann::json::array();
    for (const LessonSection& section : lesson_sections())
        json["sections"].push_back({{"id", section.id}, {"title", section.title}, {"shows", section.shows}});
    const SingleRowLimit& limit = lesson.single_row;
    json["single_row_limit"] = {
        {"values", tensor_json(limit.values)},
        {"target", limit.target},
        {"output_at_a0", limit.at_a0},
        {"output_at_a1", limit.at_a1},
        {"a_needed", limit.a_needed},
        {"reachable", limit.reachable},
        {"closest_a", limit.closest_a},
        {"closest", limit.closest},
        {"distance", limit.distance},
        {"head_weights", limit.head_weights},
        {"two_heads", tensor_json(limit.two_heads)},
    };
    json["head_shapes"] = {{"scores", lesson.shapes.scores},
                           {"head_output", lesson.shapes.head_output},
                           {"all_heads", lesson.shapes.all_heads},
                           {"scale", lesson.shapes.scale},
                           {"wrong_scale", lesson.shapes.wrong_scale}};
    const Concatenation& c = lesson.concatenation;
    json["concatenation"] = {{"head0", c.head0},   {"head1", c.head1},           {"merged", c.merged},
                             {"mixing_row", c.mixing_row}, {"mixed", c.mixed}};
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
        {"dtype", "float64 (the weights drawn in float32)"},
        {"x", tensor_json(ex.x)},
        {"context", tensor_json(ex.context)},
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
    json["looped"] = {{"max_abs_diff", ex.max_abs_diff}, {"equal_within_1e-6", ex.max_abs_diff <= 1e-6}};
    json["d5_error"] = lesson.d5_error;
    const CheckAnswers& answers = lesson.answers;
    json["check_questions"] = nlohmann::json::array();
    for (const CheckQuestion& question : lesson.questions)
        json["check_questions"].push_back({{"question", question.question}, {"answer", question.answer}});
    json["check_questions"][0]["computed"] = {{"one_head_shape", answers.one_head_shape},
                                              {"head0_position1", answers.one_head_row},
                                              {"d_at_D64_H2", answers.full_head_width},
                                              {"parameters_at_D64", answers.full_parameters}};
    json["check_questions"][1]["computed"] = {{"correct_shape", answers.correct_shape},
                                              {"wrong_shape", answers.wrong_shape},
                                              {"same_shape", answers.correct_shape == answers.wrong_shape},
                                              {"correct_head0_position1", answers.correct_row},
                                              {"wrong_head0_position1", answers.wrong_row}};
    return json;
}

}  // namespace tinyformer
