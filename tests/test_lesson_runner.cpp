// `tinyformer lesson`: every number it prints, held against the lesson's values and against
// PyTorch 1.13 (the constants below come from running the lesson's Python with torch; they
// live only here, never in the code that prints them), and the split/merge demo page.
#include "catch.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tinyformer/lesson/lesson.hpp"
#include "tinyformer/lesson/lesson_page.hpp"

using namespace tinyformer;

namespace {

void require_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": " << got[i] << " against " << want[i]);
        CHECK(std::abs(got[i] - want[i]) <= tolerance);
    }
}

// The numbers on the line of `text` that starts (after spaces) with `label`.
std::vector<double> numbers_on_line(const std::string& text, const std::string& label) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        const size_t start = line.find_first_not_of(' ');
        if (start == std::string::npos || line.compare(start, label.size(), label) != 0) continue;
        std::istringstream rest(line.substr(start + label.size()));
        std::vector<double> numbers;
        for (double number; rest >> number;) numbers.push_back(number);
        return numbers;
    }
    FAIL("no line starting with '" << label << "'");
    return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------
// 1. Split and merge
// ---------------------------------------------------------------------------------------

TEST_CASE("lesson: split_heads of arange(12) holds 4 5 at head 0 position 1 and the forgotten transpose holds 2 3",
          "[lesson_runner]") {
    const SplitMerge sm = split_merge_example();
    REQUIRE(sm.x.shape() == Shape{1, 3, 4});
    REQUIRE(sm.split.shape() == Shape{1, 2, 3, 2});
    REQUIRE(sm.wrong.shape() == Shape{1, 2, 3, 2});
    CHECK(sm.split.to_vector() == std::vector<double>{0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11});
    CHECK(sm.wrong.to_vector() == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    CHECK(sm.split_head0_position1 == std::vector<double>{4, 5});
    CHECK(sm.wrong_head0_position1 == std::vector<double>{2, 3});
    CHECK(sm.merged_equals_x);
    CHECK(sm.merged.to_vector() == sm.x.to_vector());
    CHECK_FALSE(sm.wrong_merged_equals_x);
    CHECK(sm.wrong_merged.to_vector() == std::vector<double>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
}

// ---------------------------------------------------------------------------------------
// 2. The seeded example: torch's weights bit for bit, then the weights at query 1
// ---------------------------------------------------------------------------------------

TEST_CASE("lesson: the init bound is the double PyTorch computes for nn.Linear(4 4)", "[lesson_runner]") {
    // math.sqrt(3) * (math.sqrt(2 / (1 + math.sqrt(5) ** 2)) / math.sqrt(4)) in Python
    CHECK(torch_linear_weight_bound(4) == 0x1.fffffffffffffp-2);  // 0.49999999999999994
    CHECK(static_cast<float>(torch_linear_weight_bound(4)) == 0.5f);
}

TEST_CASE("lesson: manual_seed 42 then four nn.Linear(4 4) give PyTorch's weights bit for bit", "[lesson_runner]") {
    // torch.manual_seed(42); q, k, v, o = (nn.Linear(4, 4, bias=False) for ...); w.flatten() as float.hex()
    const std::vector<float> q = {
        0x1.877198p-2f,  0x1.a8f6ccp-2f,  -0x1.dfca40p-4f, 0x1.d65438p-2f,  -0x1.c0b960p-4f, 0x1.9d4470p-4f,
        -0x1.f28a20p-3f, 0x1.2cb050p-2f,  0x1.c35998p-2f,  -0x1.779e1cp-2f, 0x1.bd0748p-2f,  0x1.7f4d60p-4f,
        0x1.7a4528p-2f,  0x1.155ca0p-4f,  0x1.edc2b8p-3f,  -0x1.2128c0p-4f};
    const std::vector<float> k = {
        0x1.8ab18cp-2f,  0x1.2eb670p-4f,  -0x1.de0b48p-3f, 0x1.050410p-3f,  -0x1.d7cb58p-3f, -0x1.e05980p-5f,
        -0x1.9fe7f8p-3f, 0x1.53a55cp-2f,  -0x1.942854p-2f, -0x1.d81318p-3f, -0x1.2126d8p-3f, -0x1.33d9fcp-2f,
        0x1.8297e0p-5f,  -0x1.f9b114p-2f, 0x1.ce6450p-2f,  -0x1.b2ed80p-2f};
    const std::vector<float> v = {
        0x1.8b472cp-2f,  0x1.54d390p-4f,  -0x1.4c7f58p-3f, 0x1.3c63f0p-2f,  0x1.3f2eb0p-4f,  0x1.9dad60p-2f,
        0x1.bfc600p-5f,  -0x1.42f130p-3f, 0x1.1321d0p-3f,  -0x1.15b010p-3f, 0x1.aef548p-3f,  0x1.c91ffcp-2f,
        0x1.27f76cp-2f,  -0x1.bfaa28p-3f, 0x1.278f3cp-2f,  0x1.6e70e0p-4f};
    const std::vector<float> o = {
        0x1.0402f4p-2f,  -0x1.38110cp-2f, -0x1.fad548p-2f, -0x1.8ba218p-3f, -0x1.88b738p-2f, 0x1.a41dacp-2f,
        0x1.26f1b0p-3f,  0x1.a82798p-3f,  0x1.43d9f8p-3f,  -0x1.1d0400p-7f, 0x1.90b208p-2f,  -0x1.6bc870p-2f,
        0x1.01e640p-5f,  -0x1.5d75e8p-2f, 0x1.3bc0a0p-3f,  -0x1.60a5c0p-3f};
    const AttentionExample ex = attention_example();
    const std::vector<std::pair<const Tensor*, const std::vector<float>*>> pairs = {
        {&ex.q_proj, &q}, {&ex.k_proj, &k}, {&ex.v_proj, &v}, {&ex.out_proj, &o}};
    for (const auto& pair : pairs) {
        REQUIRE(pair.first->shape() == Shape{4, 4});
        REQUIRE(pair.first->dtype() == DType::f32);
        for (size_t i = 0; i < 16; ++i) {
            INFO("element " << i);
            CHECK(pair.first->data<float>()[i] == (*pair.second)[i]);  // bit-identical
        }
    }
}

TEST_CASE("lesson: the attention weights at query position 1 are the lesson's and PyTorch's", "[lesson_runner]") {
    const AttentionExample ex = attention_example();
    REQUIRE(ex.weights.shape() == Shape{1, 2, 3, 3});
    // The lesson's numbers (6 decimals) ...
    require_close(weights_at(ex.weights, 0, 1), {0.002978, 0.997022, 0}, 1e-6);
    require_close(weights_at(ex.weights, 1, 1), {0.999998, 0.000002, 0}, 1e-6);
    // ... and PyTorch's float32 forward, every weight and the output.
    require_close(ex.weights.to_vector(),
                  {1, 0, 0, 2.9783810023e-03, 9.9702161551e-01, 0, 1.1460133953e-09, 3.3852247725e-05,
                   9.9996614456e-01, 1, 0, 0, 9.9999749660e-01, 2.4488035706e-06, 0, 1, 9.5215106632e-11, 0},
                  1e-6);
    require_close(ex.output.to_vector(),
                  {-0.7634117603, 0.1174632311, 0.5209412575, 0.1503289044, -0.6002657413, -0.2045368105,
                   0.8961756229, -0.2880115509, -0.4361424744, -0.5284535885, 1.2736372948, -0.7289565802},
                  1e-6);
}

// ---------------------------------------------------------------------------------------
// 3. All heads at once = one head at a time
// ---------------------------------------------------------------------------------------

TEST_CASE("lesson: batched heads equal the per-head loop within 1e-6", "[lesson_runner]") {
    const AttentionExample ex = attention_example();
    REQUIRE(ex.looped_weights.shape() == ex.weights.shape());
    REQUIRE(ex.looped_output.shape() == ex.output.shape());
    CHECK(ex.max_abs_diff <= 1e-6);
    require_close(ex.looped_weights.to_vector(), ex.weights.to_vector(), 1e-6);
    require_close(ex.looped_output.to_vector(), ex.output.to_vector(), 1e-6);
}

// ---------------------------------------------------------------------------------------
// 4 and 5. Parameter count and the D=5 error
// ---------------------------------------------------------------------------------------

TEST_CASE("lesson: the four projections hold 64 parameters at D=4 and 16384 at D=64 for H 1 2 and 4",
          "[lesson_runner]") {
    const std::vector<ParameterCount> counts = parameter_counts();
    REQUIRE(counts.size() == 4);
    CHECK((counts[0].d_model == 4 && counts[0].n_heads == 2 && counts[0].counted == 64 && counts[0].formula == 64));
    for (size_t i = 1; i < 4; ++i) {
        INFO("row " << i);
        CHECK(counts[i].d_model == 64);
        CHECK(counts[i].counted == 16384);
        CHECK(counts[i].formula == 16384);
    }
    CHECK(counts[1].n_heads == 1);
    CHECK(counts[2].n_heads == 2);
    CHECK(counts[3].n_heads == 4);
}

TEST_CASE("lesson: split_heads of D=5 into 2 heads reports the engine's error", "[lesson_runner]") {
    const std::string message = split_error_message(5, 2);
    CHECK_THAT(message, ContainsSubstring("split_heads") && ContainsSubstring("5") && ContainsSubstring("2") &&
                            ContainsSubstring("divisible"));
    CHECK(split_error_message(4, 2).empty());
}

// ---------------------------------------------------------------------------------------
// 6 and the report: the check questions, the printed text, the JSON
// ---------------------------------------------------------------------------------------

TEST_CASE("lesson: the printed report and its JSON carry the computed numbers", "[lesson_runner]") {
    const Lesson lesson = run_lesson();
    REQUIRE(lesson.questions.size() == 2);
    CHECK_THAT(lesson.questions[0].answer, ContainsSubstring("[1,1,3,4]") && ContainsSubstring("[4, 5, 6, 7]") &&
                                               ContainsSubstring("d = 32") && ContainsSubstring("16,384"));
    CHECK(lesson.questions[1].answer.rfind("No:", 0) == 0);
    CHECK_THAT(lesson.questions[1].answer,
               ContainsSubstring("[1,2,2,2]") && ContainsSubstring("[4, 5]") && ContainsSubstring("[2, 3]"));

    const std::string text = lesson_text(lesson);
    // Each number printed (6 decimals) is within 1e-6 of PyTorch's.
    require_close(numbers_on_line(text, "head 0:"), {2.9783810023e-03, 9.9702161551e-01, 0}, 1e-6);
    require_close(numbers_on_line(text, "head 1:"), {9.9999749660e-01, 2.4488035706e-06, 0}, 1e-6);
    CHECK_THAT(text, ContainsSubstring("split_heads holds [4, 5], the reshape without transpose [2, 3]"));
    CHECK_THAT(text, ContainsSubstring("merge_heads(split_heads(X, 2)) == X: yes"));
    CHECK_THAT(text, ContainsSubstring("16,384") && ContainsSubstring("(<= 1e-6: yes)"));
    CHECK_THAT(text, ContainsSubstring("is not divisible by n_heads 2"));
    // The six digits the lesson prints, as printed (float32 would give head 1's 0.999997).
    CHECK_THAT(text, ContainsSubstring("head 0:  0.002978  0.997022  0.000000"));
    CHECK_THAT(text, ContainsSubstring("head 1:  0.999998  0.000002  0.000000"));

    const nlohmann::json json = lesson_json(lesson);
    require_close(json["attention"]["weights_at_query1"][0].get<std::vector<double>>(), {0.002978, 0.997022, 0}, 1e-6);
    require_close(json["attention"]["weights_at_query1"][1].get<std::vector<double>>(), {0.999998, 0.000002, 0}, 1e-6);
    CHECK(json["split_merge"]["head0_position1"]["split"] == nlohmann::json({4, 5}));
    CHECK(json["split_merge"]["head0_position1"]["wrong"] == nlohmann::json({2, 3}));
    CHECK(json["parameter_counts"][3]["counted"] == 16384);
    CHECK(json["attention"]["looped_equal_within_1e-6"] == true);
}

// ---------------------------------------------------------------------------------------
// The split/merge demo page
// ---------------------------------------------------------------------------------------

TEST_CASE("lesson: the demo page embeds the engine's split and merge tables", "[lesson_runner]") {
    const nlohmann::json tables = split_merge_tables(split_merge_example());
    // Head 0 position 1 of the split holds X[0,1,0] and X[0,1,1]; of the wrong reshape X[0,0,2] and X[0,0,3].
    CHECK(tables["split"]["values"][2] == 4);
    CHECK(tables["split"]["from"][2] == nlohmann::json({0, 1, 0}));
    CHECK(tables["split"]["from"][3] == nlohmann::json({0, 1, 1}));
    CHECK(tables["wrong"]["from"][2] == nlohmann::json({0, 0, 2}));
    CHECK(tables["wrong"]["from"][3] == nlohmann::json({0, 0, 3}));
    CHECK(tables["merged"]["values"] == tables["x"]["values"]);
    CHECK(tables["merged_equals_x"] == true);
    CHECK(tables["wrong_merged_equals_x"] == false);
    // The feature axis split before the swap, [B,T,H,d] = [1,3,2,2]: position 1, head 0 holds 4 and 5.
    CHECK(tables["features"]["shape"] == nlohmann::json({1, 3, 2, 2}));
    CHECK(tables["features"]["values"][4] == 4);
    CHECK(tables["features"]["values"][5] == 5);

    // The single row of weights the page plots: 101 points from [0, 2] (a = 0) to [1, 0] (a = 1).
    const nlohmann::json single_row = single_row_table(single_row_limit());
    REQUIRE(single_row["segment"].size() == 101);
    CHECK(single_row["segment"][0] == nlohmann::json({0.0, 2.0}));
    CHECK(single_row["segment"][100] == nlohmann::json({1.0, 0.0}));
    CHECK(single_row["segment"][80][0].get<double>() == Approx(0.8));
    CHECK(single_row["segment"][80][1].get<double>() == Approx(0.4));
    CHECK(single_row["two_heads"]["values"][1].get<double>() == Approx(1.6));

    const std::string html = split_merge_html();
    CHECK_THAT(html, ContainsSubstring("<script id=\"single-row-table\" type=\"application/json\">" +
                                       single_row.dump() + "</script>"));
    CHECK_THAT(html, ContainsSubstring("id=\"row-a\"") && ContainsSubstring("id=\"grid-features\""));
    CHECK_THAT(html, ContainsSubstring("<script id=\"lesson-tables\" type=\"application/json\">" + tables.dump() +
                                       "</script>"));
    CHECK_THAT(html, ContainsSubstring("id=\"forget-transpose\""));
    CHECK_THAT(html, ContainsSubstring("<strong id=\"head0-position1-split\">[4, 5]</strong>"));
    CHECK_THAT(html, ContainsSubstring("id=\"head0-position1-wrong\" class=\"wrong\">[2, 3]</strong>"));
    for (const char* id : {"id=\"demo\"", "id=\"grid-x\"", "id=\"grid-split\"", "id=\"grid-merged\"", "id=\"where\"",
                           "id=\"merged-check\"", "id=\"head0-position1-current\"", "dataset.tensor", "'selected'",
                           "'landed'"})
        CHECK_THAT(html, ContainsSubstring(id));
    // Self-contained: nothing fetched from anywhere.
    for (const char* outside : {"http://", "https://", "src=", "<link", "@import", "url("}) {
        INFO(outside);
        CHECK(html.find(outside) == std::string::npos);
    }
}

// ---------------------------------------------------------------------------------------
// The lesson's own order, its opening argument and its two check questions
// ---------------------------------------------------------------------------------------

TEST_CASE("lesson: one row of weights cannot reach the target 0.8 1.6 and two heads reach it exactly", "[lesson_runner]") {
    const SingleRowLimit limit = single_row_limit();
    require_close(limit.at_a0, {0, 2}, 1e-12);  // [a, 2(1-a)] at a = 0 and a = 1
    require_close(limit.at_a1, {1, 0}, 1e-12);
    require_close(limit.a_needed, {0.8, 0.2}, 1e-12);  // one coordinate needs 0.8, the other 0.2
    CHECK_FALSE(limit.reachable);
    CHECK(limit.distance > 0.5);  // the target lies off the segment, 0.537 from its nearest point
    require_close(limit.closest, {limit.closest_a, 2 * (1 - limit.closest_a)}, 1e-12);  // on the segment
    REQUIRE(limit.two_heads.shape() == Shape{1, 1, 2});
    require_close(limit.two_heads.to_vector(), {0.8, 1.6}, 1e-12);
}

TEST_CASE("lesson: each head's shapes, and the heads concatenated before out_proj mixes them", "[lesson_runner]") {
    const AttentionExample ex = attention_example();
    const HeadShapes shapes = head_shapes(ex);
    CHECK(shapes.scores == Shape{1, 2, 3, 3});
    CHECK(shapes.head_output == Shape{1, 3, 2});
    CHECK(shapes.all_heads == Shape{1, 2, 3, 2});
    CHECK(shapes.scale == Approx(1 / std::sqrt(2.0)));  // the head's width, not D = 4
    const Concatenation c = concatenation(ex);
    REQUIRE(c.head0.size() == 2);
    REQUIRE(c.head1.size() == 2);
    require_close(c.merged, {c.head0[0], c.head0[1], c.head1[0], c.head1[1]}, 1e-12);  // [a, b, c, d]
    CHECK(c.mixed == Approx(c.head0[0] + c.head1[0]));                                 // [1,0,1,0]: a + c
}

TEST_CASE("lesson: the check questions' answers are the lesson's", "[lesson_runner]") {
    const CheckAnswers answers = check_answers();
    CHECK(answers.one_head_shape == Shape{1, 1, 3, 4});
    CHECK(answers.one_head_row == std::vector<double>{4, 5, 6, 7});
    CHECK(answers.full_head_width == 32);
    CHECK(answers.full_parameters == 16384);
    CHECK(answers.correct_shape == Shape{1, 2, 2, 2});
    CHECK(answers.wrong_shape == Shape{1, 2, 2, 2});  // the same shape ...
    CHECK(answers.correct_row == std::vector<double>{4, 5});
    CHECK(answers.wrong_row == std::vector<double>{2, 3});  // ... other numbers
}

TEST_CASE("lesson: the report and the JSON walk the lesson's sections in its order", "[lesson_runner]") {
    const Lesson lesson = run_lesson();
    const std::string text = lesson_text(lesson);
    const nlohmann::json json = lesson_json(lesson);
    const std::vector<std::string> order = {"single_row_limit", "split_merge",      "head_shapes",
                                            "concatenation",    "attention",        "looped",
                                            "parameter_counts", "d5_error",         "check_questions"};
    REQUIRE(lesson_sections().size() == order.size());
    size_t previous = 0;
    for (size_t i = 0; i < order.size(); ++i) {
        const LessonSection& section = lesson_sections()[i];
        INFO(section.id);
        CHECK(section.id == order[i]);
        CHECK(json["sections"][i]["id"] == order[i]);
        CHECK(json.contains(order[i]));  // each section's numbers are in the JSON
        const size_t at = text.find(std::to_string(i + 1) + ". " + section.title);
        REQUIRE(at != std::string::npos);
        CHECK(at >= previous);  // printed in the lesson's order
        previous = at;
        CHECK_THAT(text, ContainsSubstring("What this shows: " + std::string(section.shows).substr(0, 20)));
    }
    CHECK_THAT(text, ContainsSubstring("coordinate 0 needs a = 0.8, coordinate 1 needs a = 0.2: no single a"));
    CHECK_THAT(text, ContainsSubstring("concatenated [0.8, 1.6]"));
    CHECK(json["check_questions"][1]["computed"]["same_shape"] == true);
    CHECK(json["check_questions"][1]["computed"]["wrong_head0_position1"] == nlohmann::json({2, 3}));
}
