// The sweep's grid and its statistics (sweep.hpp, sweep_report.hpp). The runs themselves are
// tested through the binary, tests/cli/test_sweep.sh.
#include "catch.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "test_helpers.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/sweep/sweep.hpp"
#include "tinyformer/sweep/sweep_report.hpp"

using namespace tinyformer;
using tinyformer::testing::TempDir;
namespace fs = std::filesystem;

TEST_CASE("The grid is the cartesian product of the axes, times the seeds, the last axis fastest", "[sweep]") {
    SweepSpec spec{"c.toml", {parse_sweep_axis("model.n_heads=1,2"), parse_sweep_axis("optim.lr=1e-3,3e-3,1e-2")},
                   parse_sweep_seeds("7,3"), {"train.steps=10"}};
    const std::vector<SweepRun> runs = sweep_runs(spec, "out");
    REQUIRE(runs.size() == 2 * 3 * 2);
    CHECK(runs[0].group == "model.n_heads=1,optim.lr=1e-3");
    CHECK(runs[0].seed == 7);
    CHECK(runs[1].seed == 3);
    CHECK(runs[2].group == "model.n_heads=1,optim.lr=3e-3");
    CHECK(runs[6].group == "model.n_heads=2,optim.lr=1e-3");
    CHECK(runs[11].dir == (fs::path("out") / "model.n_heads=2,optim.lr=1e-2" / "seed=3").string());
    CHECK(runs[11].overrides ==
          std::vector<std::string>{"train.steps=10", "model.n_heads=2", "optim.lr=1e-2", "train.seed=3"});
    // No axes: one group of the seeds.
    const std::vector<SweepRun> seeds_only = sweep_runs(SweepSpec{"c.toml", {}, {1, 2}, {}}, "out");
    REQUIRE(seeds_only.size() == 2);
    CHECK(seeds_only[1].group == "base");
}

TEST_CASE("A group's directory name keeps a value with a slash as one name", "[sweep]") {
    CHECK(sweep_group_name({{"data.path", "../x/a b.txt"}}) == "data.path=..%2Fx%2Fa%20b.txt");
    CHECK(sweep_group_name({{"model.positions", "rope"}, {"optim.lr", "+1e-3"}}) == "model.positions=rope,optim.lr=+1e-3");
}

TEST_CASE("Sweep arguments: --vary and --seeds are parsed, and their mistakes refused in one line", "[sweep]") {
    const SweepAxis axis = parse_sweep_axis("model.positions=rope,learned");
    CHECK(axis.key == "model.positions");
    CHECK(axis.values == std::vector<std::string>{"rope", "learned"});
    CHECK(parse_sweep_axis("optim.lr=0.001").values.size() == 1);
    for (const char* bad : {"model.n_heads", "=1,2", "model.n_heads=", "model.n_heads=1,,2", "model.n_heads=2,", "model.n_heads=1,2,1"})
        CHECK_THROWS_AS(parse_sweep_axis(bad), InputError);
    CHECK(parse_sweep_seeds("1337,1,2") == std::vector<int64_t>{1337, 1, 2});
    for (const char* bad : {"", "1,,2", "1,x", "1.5", "-3", "4,4"}) CHECK_THROWS_AS(parse_sweep_seeds(bad), InputError);
}

TEST_CASE("Group statistics: mean, sample standard deviation and Student's t interval", "[sweep]") {
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squares 32, sample variance 32/7.
    const MetricStats s = metric_stats({2, 4, 4, 4, 5, 5, 7, 9});
    CHECK(s.n == 8);
    CHECK(s.mean == 5.0);
    CHECK(s.sd == Approx(std::sqrt(32.0 / 7.0)).epsilon(1e-14));  // not the population sd, 2
    CHECK(s.min == 2.0);
    CHECK(s.max == 9.0);
    CHECK(s.ci95 == Approx(2.365 * std::sqrt(32.0 / 7.0) / std::sqrt(8.0)).epsilon(1e-12));
    const MetricStats one = metric_stats({0.5});
    CHECK(one.mean == 0.5);
    CHECK(std::isnan(one.sd));
    CHECK(std::isnan(one.ci95));
    CHECK(metric_stats({}).n == 0);
    // t(0.975, df): the table's values, and the expansion beyond 30 within 0.003 of the exact
    // quantiles (40: 2.0211, 60: 2.0003, 120: 1.9799).
    CHECK(student_t_975(1) == 12.706);
    CHECK(student_t_975(4) == 2.776);
    CHECK(student_t_975(30) == 2.042);
    CHECK(std::abs(student_t_975(40) - 2.0211) < 0.003);
    CHECK(std::abs(student_t_975(60) - 2.0003) < 0.003);
    CHECK(std::abs(student_t_975(120) - 1.9799) < 0.003);
}

TEST_CASE("Aggregating a sweep reads each finished run's summary and counts the rest", "[sweep]") {
    const TempDir temp("tinyformer_test_sweep_report");
    const fs::path dir = temp.path / "sweep";
    const SweepSpec spec{"c.toml", {parse_sweep_axis("model.n_heads=1,2")}, {1, 2, 3}, {}};
    const std::vector<SweepRun> runs = sweep_runs(spec, dir.string());
    const double losses[] = {0.50, 0.52, 0.54, 0.40, 0.44};  // the sixth run never finished
    for (size_t i = 0; i < 5; ++i) {
        fs::create_directories(runs[i].dir);
        std::ofstream(fs::path(runs[i].dir) / "summary.json")
            << nlohmann::json{{"val_loss", losses[i]}, {"probe_accuracy", 0.5 + 0.1 * static_cast<double>(i)},
                              {"probe_accuracy_by_kind", {{"who", 1.0}, {"colour", 0.25 * static_cast<double>(i % 2)}}},
                              {"train_seconds", 3.0}}
                   .dump();
    }
    const SweepReport report = collect_sweep(spec, dir.string());
    REQUIRE(report.groups.size() == 2);
    const MetricStats& first = report.groups[0].metrics.at("val_loss");
    CHECK(first.n == 3);
    CHECK(first.mean == Approx(0.52).epsilon(1e-14));
    CHECK(first.sd == Approx(0.02).epsilon(1e-12));
    CHECK(report.groups[1].runs == 3);
    CHECK(report.groups[1].metrics.at("val_loss").n == 2);
    CHECK(report.groups[1].metrics.at("probe_colour").mean == Approx(0.125));
    std::vector<std::string> names;
    for (const SweepMetric& m : report.metrics) names.push_back(m.name);
    CHECK(names == std::vector<std::string>{"val_loss", "probe_accuracy", "probe_colour", "probe_who", "train_seconds"});
    const std::string csv = sweep_report_csv(report);
    CHECK(csv.find("model.n_heads=2,2,3,") != std::string::npos);  // group, the setting, the seed
    CHECK(csv.find(",false,,,,,,\n") != std::string::npos);        // the unfinished run: empty metrics
    const std::string table = sweep_report_table(report);
    CHECK(table.find("0.5200 ± 0.0200 (0.5000–0.5400)") != std::string::npos);
    CHECK(table.find("model.n_heads=2  2/3") != std::string::npos);
}

TEST_CASE("A sweep's directory holds one sweep", "[sweep]") {
    const TempDir temp("tinyformer_test_sweep_claim");
    const fs::path dir = temp.path / "sweep";
    const SweepSpec spec{"c.toml", {parse_sweep_axis("model.n_heads=1,2")}, {1, 2}, {"train.steps=5"}};
    claim_sweep_dir(dir.string(), spec);
    CHECK_NOTHROW(claim_sweep_dir(dir.string(), spec));  // the same sweep: continued
    SweepSpec other = spec;
    other.seeds = {1, 3};
    CHECK_THROWS_WITH(claim_sweep_dir(dir.string(), other), ContainsSubstring("holds a different sweep (--seeds"));
    other = spec;
    other.overrides = {};
    CHECK_THROWS_WITH(claim_sweep_dir(dir.string(), other), ContainsSubstring("--set"));
    const SweepSpec read = read_sweep_spec(dir.string());
    CHECK(sweep_spec_to_json(read) == sweep_spec_to_json(spec));
    // A directory with other files and no spec is not taken over.
    temp.write("used/notes.txt", "mine");
    CHECK_THROWS_AS(claim_sweep_dir(temp.file("used"), spec), InputError);
}

TEST_CASE("A head reads an answer kind by the report's rule: 0.3 of its attention, twice any other kind's", "[sweep]") {
    CHECK(answer_kind_read({{"colour", 0.05}, {"who", 0.72}}) == "who");
    CHECK(answer_kind_read({{"colour", 0.38}, {"who", 0.13}}) == "colour");
    CHECK(answer_kind_read({{"colour", 0.29}, {"who", 0.01}}).empty());  // under 0.3
    CHECK(answer_kind_read({{"colour", 0.40}, {"who", 0.39}}).empty());  // not twice the other's
    CHECK(answer_kind_read({{"colour", 0.60}, {"who", 0.30}}) == "colour");  // exactly twice
    CHECK(answer_kind_read({}).empty());
}
