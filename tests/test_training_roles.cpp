// How the roles formed: the fixed probe subset follows its stated rule, the recorded numbers
// are inspect's own (answer_sources, probe_accuracy) on that subset, train writes them at
// every evaluation only when the run has probes and trains exactly the same either way, and
// the report draws them.
#include "catch.hpp"
#include "test_helpers.hpp"
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/inspect/inspect_report.hpp"
#include "tinyformer/inspect/training_roles.hpp"
#include "tinyformer/support/plot.hpp"
#include "tinyformer/train/config.hpp"
#include "tinyformer/train/trainer.hpp"

using namespace tinyformer;
namespace fs = std::filesystem;

namespace {

using tinyformer::testing::kSource;

// Training logs at info level; the tests keep their output to failures.
struct QuietLog {
    spdlog::level::level_enum before = spdlog::get_level();
    QuietLog() { spdlog::set_level(spdlog::level::warn); }
    ~QuietLog() { spdlog::set_level(before); }
};

// tests/data/tiny.toml with a context of 32, so that the colour probes (up to 29 characters
// with their answer) fit as well as the who probes.
RunConfig tiny_config() {
    RunConfig config = load_config(kSource + "/tests/data/tiny.toml");
    config.model.context = 32;
    return config;
}

// xmllint (Debian's libxml2-utils) parses the document as XML: 0 = well-formed.
int xmllint(const std::string& document, const fs::path& dir) {
    const std::string path = (dir / "report.xhtml").string();
    std::ofstream(path) << document;
    return std::system(("xmllint --noout --nonet '" + path + "' 2>/dev/null").c_str());
}

Probe probe(const std::u32string& prompt, const std::u32string& answer, const std::string& kind) {
    return {prompt, answer, kind};
}

}  // namespace

TEST_CASE("role_probes: per kind 32 / kinds probes, evenly over the kind's probes, in file order",
          "[training_roles]") {
    SECTION("the lesson's 320 probes: 16 who (lines 1, 21, ...) and 16 colour (lines 2, 22, ...)") {
        const std::vector<Probe> probes = load_probes(kSource + "/corpus/lesson_probes.tsv");
        REQUIRE(probes.size() == 320);
        const std::vector<Probe> subset = role_probes(probes);
        REQUIRE(subset.size() == 32);
        // who and colour alternate in the file: the k-th who probe is line 2k, its colour twin 2k + 1 (from 0).
        for (size_t i = 0; i < 16; ++i) {
            const Probe& who = subset[2 * i];
            const Probe& colour = subset[2 * i + 1];
            CHECK(who.kind == "who");
            CHECK(who.prompt == probes[20 * i].prompt);
            CHECK(colour.kind == "colour");
            CHECK(colour.prompt == probes[20 * i + 1].prompt);
        }
    }
    SECTION("three kinds of uneven sizes: 10 each at most, every probe of a small kind, file order kept") {
        std::vector<Probe> probes;
        for (int i = 0; i < 40; ++i) probes.push_back(probe(std::u32string(1, U'a' + i % 26), U"x", "colour"));
        probes.insert(probes.begin() + 7, probe(U"only", U"x", "other"));
        for (int i = 0; i < 5; ++i) probes.push_back(probe(U"w" + std::u32string(1, U'0' + i), U"x", "who"));
        const std::vector<Probe> subset = role_probes(probes);
        REQUIRE(subset.size() == 10 + 1 + 5);
        // colour: n = 40, m = 10, so its probes 0, 4, 8, ... 36; "other" sits in the file after colour 6.
        std::vector<std::u32string> expected;
        for (int i = 0; i < 40; i += 4) {
            expected.push_back(std::u32string(1, U'a' + i % 26));
            if (i == 4) expected.push_back(U"only");
        }
        for (int i = 0; i < 5; ++i) expected.push_back(U"w" + std::u32string(1, U'0' + i));
        std::vector<std::u32string> got;
        for (const Probe& p : subset) got.push_back(p.prompt);
        CHECK(got == expected);
    }
    SECTION("no probes, no subset") { CHECK(role_probes({}).empty()); }
}

TEST_CASE("training_roles records answer_sources' span share and probe_accuracy on the subset, and changes nothing",
          "[training_roles]") {
    const std::vector<Probe> probes = {
        probe(U"小丁拿着红色的苹果。谁拿着苹果？", U"小丁", "who"),
        probe(U"阿芳拿着蓝色的苹果。谁拿着苹果？", U"阿芳", "who"),
        probe(U"小丁拿着红色的苹果。谁拿着苹果？小丁。苹果是什么颜色？", U"红色", "colour"),
        probe(U"阿芳拿着蓝色的苹果。谁拿着苹果？阿芳。苹果是什么颜色？", U"蓝色", "colour"),
    };
    const Vocabulary vocab = Vocabulary::from_text(U"小丁拿着红色的苹果。谁？阿芳蓝是什么颜");
    ModelConfig config;
    config.vocab_size = vocab.size(), config.d_model = 16, config.n_heads = 2, config.n_layers = 2, config.context = 32;
    const Transformer model(config, 5);
    const Tensor ids = Tensor::ids(vocab.encode(probes[2].prompt, "probe"), {1, 27});
    const Tensor logits_before = [&] {
        NoGradScope no_grad;
        return model.forward(ids).to(DType::f32);
    }();

    const nlohmann::json roles = training_roles(model, vocab, probes);
    const auto sources = answer_sources(model, vocab, probes);
    const ProbeTally tally = probe_accuracy(model, vocab, probes);
    CHECK(roles["probes"] == 4);
    CHECK(roles["rule"] == role_probes_rule());
    CHECK(roles["probes_by_kind"] == nlohmann::json{{"colour", 2}, {"who", 2}});
    for (const std::string kind : {"who", "colour"}) {
        CHECK(roles["accuracy"][kind].get<double>() == tally.accuracy(kind));
        for (int64_t l = 0; l < 2; ++l)
            for (int64_t h = 0; h < 2; ++h) {
                const std::string name = "L" + std::to_string(l) + "H" + std::to_string(h);
                INFO(name << " " << kind);
                CHECK(roles["span_share"][name][kind].get<double>() == sources[l * 2 + h].at(kind).span_share);
            }
    }
    // The heads really differ, so a mix-up of their names would show.
    CHECK(roles["span_share"]["L0H1"]["who"] != roles["span_share"]["L1H0"]["who"]);

    // Measuring leaves the model as it was: the same logits, bit for bit.
    NoGradScope no_grad;
    const Tensor logits_after = model.forward(ids).to(DType::f32);
    REQUIRE(logits_after.numel() == logits_before.numel());
    for (int64_t i = 0; i < logits_after.numel(); ++i)
        REQUIRE(logits_after.data<float>()[i] == logits_before.data<float>()[i]);
}

TEST_CASE("train records roles at every evaluation with probes, none without, and trains the same either way",
          "[training_roles]") {
    const QuietLog quiet;
    testing::TempDir with_probes("tinyformer_test_training_roles"), without_probes("tinyformer_test_training_roles");
    RunConfig config = tiny_config();  // 40 steps, evaluations at 20 and 40, log rows every 10
    const nlohmann::json summary = train({config, with_probes.path.string(), false, false, training_roles_of_probes});
    const std::vector<nlohmann::json> rows = read_metrics_rows((with_probes.path / "metrics.jsonl").string());
    REQUIRE(rows.size() == 4);
    for (const nlohmann::json& row : rows) {
        INFO(row.dump());
        const bool evaluation = row.contains("val_loss");
        CHECK(evaluation == (row["step"] == 20 || row["step"] == 40));
        CHECK(row.contains("roles") == evaluation);
        if (!evaluation) continue;
        const nlohmann::json& roles = row["roles"];
        CHECK(roles["probes"] == 32);
        CHECK(roles["probes_by_kind"] == nlohmann::json{{"colour", 16}, {"who", 16}});
        CHECK(roles["accuracy"].size() == 2);
        REQUIRE(roles["span_share"].size() == 2);  // one layer, two heads
        for (const std::string name : {"L0H0", "L0H1"})
            for (const std::string kind : {"who", "colour"}) {
                const double share = roles["span_share"][name][kind].get<double>();
                CHECK(share >= 0.0);
                CHECK(share <= 1.0);
            }
    }

    config.data.probes_path.clear();
    const nlohmann::json plain = train({config, without_probes.path.string(), false, false, training_roles_of_probes});
    const std::vector<nlohmann::json> plain_rows = read_metrics_rows((without_probes.path / "metrics.jsonl").string());
    REQUIRE(plain_rows.size() == rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        CHECK_FALSE(plain_rows[i].contains("roles"));
        CHECK(plain_rows[i]["loss"] == rows[i]["loss"]);  // bit for bit: the recording draws and changes nothing
        CHECK(plain_rows[i].value("val_loss", -1.0) == rows[i].value("val_loss", -1.0));
    }
    CHECK(plain["val_loss"] == summary["val_loss"]);
    CHECK(plain["train_loss"] == summary["train_loss"]);
}

TEST_CASE("a resumed run keeps the roles rows before its step and records its own", "[training_roles]") {
    const QuietLog quiet;
    testing::TempDir run("tinyformer_test_training_roles");
    RunConfig config = tiny_config();
    config.train.steps = 20;  // evaluates at 20 and stops
    train({config, run.path.string(), false, false, training_roles_of_probes});
    config.train.steps = 40;  // evaluates at 40
    train({config, run.path.string(), /*resume=*/true, false, training_roles_of_probes});
    std::vector<int64_t> steps_with_roles;
    for (const nlohmann::json& row : read_metrics_rows((run.path / "metrics.jsonl").string()))
        if (row.contains("roles")) steps_with_roles.push_back(row["step"].get<int64_t>());
    CHECK(steps_with_roles == std::vector<int64_t>{20, 40});
}

TEST_CASE("the report draws a chart per kind: a line per head and the accuracy dashed, and says when each rose",
          "[training_roles]") {
    // Three evaluations: L1H1 takes up the name between 100 and 200, the who accuracy jumps
    // between 200 and 300; L0H1 reads the colour from the start.
    auto row = [](int step, double l0h1_colour, double l1h1_who, double who_accuracy, double colour_accuracy) {
        return nlohmann::json{
            {"step", step},
            {"val_loss", 1.0},
            {"roles",
             {{"probes", 32},
              {"rule", role_probes_rule()},
              {"accuracy", {{"colour", colour_accuracy}, {"who", who_accuracy}}},
              {"span_share",
               {{"L0H0", {{"colour", 0.1}, {"who", 0.1}}},
                {"L0H1", {{"colour", l0h1_colour}, {"who", 0.05}}},
                {"L1H0", {{"colour", 0.05}, {"who", 0.2}}},
                {"L1H1", {{"colour", 0.02}, {"who", l1h1_who}}}}}}}};
    };
    const std::vector<nlohmann::json> rows = {nlohmann::json{{"step", 50}, {"loss", 2.0}},  // a log row
                                              row(100, 0.35, 0.10, 0.0625, 0.25), row(200, 0.38, 0.55, 0.1875, 0.75),
                                              row(300, 0.40, 0.70, 0.9, 0.8125)};
    const std::string html = roles_over_training_html(rows);
    CHECK_THAT(html, ContainsSubstring("<h2>How the roles formed</h2>"));
    CHECK_THAT(html, ContainsSubstring("who: span share per head, and accuracy"));
    CHECK_THAT(html, ContainsSubstring("colour: span share per head, and accuracy"));
    // One polyline per head and one dashed for the accuracy, in each of the two charts.
    auto count = [&](const std::string& what) {
        size_t n = 0;
        for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
        return n;
    };
    CHECK(count("<svg") == 2);
    CHECK(count("<polyline") == 2 * 5);
    CHECK(count("<polyline fill=\"none\" stroke=\"#000000\" stroke-width=\"1.5\" stroke-dasharray") == 2);
    CHECK(count(">L1H1</text>") == 2);
    CHECK(count(">who accuracy</text>") == 1);
    // The y axis is 0..1 for both: span share and accuracy on one scale.
    CHECK(count(">0.25</text>") == 2);
    CHECK(count(">1</text>") == 2);
    // The captions' sentences, from the numbers.
    CHECK_THAT(html, ContainsSubstring("L1H1 reads the answer&apos;s place most at the last evaluation (step 300: 0.70); its "
                                       "share rose most from step 100 to 200 (0.10 → 0.55) and first reached 0.30 at "
                                       "step 200. The who accuracy rose most from step 200 to 300 (19 % → 90 %)."));
    CHECK_THAT(html, ContainsSubstring("L0H1 reads the answer&apos;s place most at the last evaluation (step 300: 0.40)"));
    CHECK_THAT(html, ContainsSubstring("first reached 0.30 at step 100. The colour accuracy rose most from step 100 to "
                                       "200 (25 % → 75 %)."));

    // No rows with roles (a run without probes, or one trained before they were recorded): no section.
    CHECK(roles_over_training_html({}).empty());
    CHECK(roles_over_training_html({rows[0]}).empty());

    // In the report, after the loss curve, and the page still well-formed XHTML.
    ModelConfig config;
    const Vocabulary vocab = Vocabulary::from_text(U"小丁拿着红色的苹果。");
    config.vocab_size = vocab.size(), config.d_model = 16, config.n_heads = 2, config.n_layers = 2, config.context = 16;
    const Transformer model(config, 3);
    const AttentionMaps maps = capture_attention(model, vocab, U"小丁拿着红色的苹果。", "--text");
    ReportContext context;
    context.model = config;
    context.loss_svg = line_chart_svg("loss", "step", "loss", {Series{"train loss", "#1f77b4", {{1, 2.0}, {2, 1.0}}}});
    context.metrics = rows;
    const std::string report = report_html(maps, InspectResult{}, context);
    const size_t training = report.find("<h2>Training</h2>"), roles = report.find("<h2>How the roles formed</h2>");
    REQUIRE(training != std::string::npos);
    REQUIRE(roles != std::string::npos);
    CHECK(training < roles);
    testing::TempDir dir("tinyformer_test_training_roles");
    CHECK(xmllint(report, dir.path) == 0);
    context.metrics.clear();
    CHECK(report_html(maps, InspectResult{}, context).find("How the roles formed") == std::string::npos);
}
