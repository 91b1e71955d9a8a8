// Threads (engine/threads.hpp): how many run never changes a number, only --threads does; the
// CPUs this process may use (engine/cpu_budget.hpp) and what other processes take of them
// (engine/cpu_load.hpp), read from files of the test's own.
#include <cstring>
#include <fstream>

#include "catch.hpp"
#include "test_helpers.hpp"
#include "tinyformer/engine/cpu_budget.hpp"
#include "tinyformer/engine/cpu_load.hpp"
#include "tinyformer/engine/mixed_precision.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/engine/threads.hpp"
#include "tinyformer/support/errors.hpp"

using namespace tinyformer;
using tinyformer::testing::BackendScope;
using tinyformer::testing::TempDir;

namespace {

// The gradient arena's bits after one forward and backward of the lesson's model on 8 windows
// of 32 (256 rows: a weight's gradient is split into runs of rows, product_split_over_rows),
// with `split` threads set and `running` of them running, the products in `precision`.
std::vector<float> gradient_bits(int split, int running, MatmulPrecision precision = MatmulPrecision::float32) {
    BackendScope onednn(make_onednn_backend());
    MatmulPrecisionScope products(precision);
    set_num_threads(split);
    force_running_threads(running);
    ModelConfig config;
    config.context = 32;
    Transformer model(config, 7);
    Rng rng(11);
    std::vector<int32_t> inputs(8 * 32), targets(8 * 32);
    for (int32_t& id : inputs) id = static_cast<int32_t>(rng.below(config.vocab_size));
    for (int32_t& id : targets) id = static_cast<int32_t>(rng.below(config.vocab_size));
    model.parameters().zero_grad();
    model.loss(Tensor::ids(inputs, {8, 32}), Tensor::ids(targets, {8, 32})).backward();
    const Tensor grads = model.parameters().gradients();
    std::vector<float> bits(grads.data<float>(), grads.data<float>() + grads.numel());
    force_running_threads(0);
    set_num_threads(0);
    return bits;
}

void write(const std::filesystem::path& file, const std::string& text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
}

}  // namespace

TEST_CASE("threads: the numbers follow --threads, not how many threads run", "[threads]") {
    const std::vector<float> two_running = gradient_bits(2, 2), one_running = gradient_bits(2, 1);
    REQUIRE(running_threads() == num_threads());
    // Compared as bits: equal floats computed in another order would not do.
    REQUIRE(std::memcmp(two_running.data(), one_running.data(), two_running.size() * sizeof(float)) == 0);
    // ... while --threads is part of the experiment: one run of rows sums in another order.
    const std::vector<float> one = gradient_bits(1, 1);
    REQUIRE(std::memcmp(two_running.data(), one.data(), one.size() * sizeof(float)) != 0);
}

TEST_CASE("threads: bf16 products too follow --threads, not how many threads run", "[threads]") {
    {
        BackendScope onednn(make_onednn_backend());
        if (!backend().bf16_unsupported().empty()) {
            WARN("not tried: " << backend().bf16_unsupported());
            return;
        }
    }
    const std::vector<float> two = gradient_bits(2, 2, MatmulPrecision::bf16),
                             one = gradient_bits(2, 1, MatmulPrecision::bf16);
    REQUIRE(std::memcmp(two.data(), one.data(), two.size() * sizeof(float)) == 0);
    // and they are bf16's: not float32's bits
    const std::vector<float> float32 = gradient_bits(2, 2);
    REQUIRE(std::memcmp(two.data(), float32.data(), two.size() * sizeof(float)) != 0);
}

TEST_CASE("threads: share_cores' rule, with its hysteresis", "[threads]") {
    // 2 CPUs, split 2: a busy process beside (1 CPU free) → 1; a browser's tenth → still 2.
    REQUIRE(threads_to_run(1.0, 2, 2) == 1);
    REQUIRE(threads_to_run(1.9, 2, 2) == 2);
    REQUIRE(threads_to_run(1.6, 2, 2) == 2);  // others hold 0.4: not yet
    REQUIRE(threads_to_run(1.4, 2, 2) == 1);
    // Back up only with a whole CPU and 0.7 to spare: 1.6 free keeps 1, 1.8 gives 2.
    REQUIRE(threads_to_run(1.6, 1, 2) == 1);
    REQUIRE(threads_to_run(1.8, 1, 2) == 2);
    // Never below 1, never above the split, and by as many as are free at once.
    REQUIRE(threads_to_run(0.0, 2, 2) == 1);
    REQUIRE(threads_to_run(7.9, 1, 4) == 4);
    REQUIRE(threads_to_run(3.1, 8, 8) == 3);
    REQUIRE(threads_to_run(5.0, 3, 8) == 5);
}

TEST_CASE("threads: set_num_threads(0) takes the CPUs this process may use", "[threads]") {
    set_num_threads(0);
    const CpuBudget budget = cpu_budget();
    REQUIRE(num_threads() == budget.cpus);
    REQUIRE(running_threads() == budget.cpus);
    REQUIRE(budget.cpus >= 1);
    REQUIRE(budget.cpus <= budget.affinity);
    REQUIRE(budget.reason.find("in the affinity mask") != std::string::npos);
}

TEST_CASE("cpu budget: cgroup v2's cpu.max", "[threads]") {
    REQUIRE(parse_cpu_max("100000 100000", "cpu.max") == Approx(1.0));
    REQUIRE(parse_cpu_max("150000 100000", "cpu.max") == Approx(1.5));
    REQUIRE_FALSE(parse_cpu_max("max 100000", "cpu.max").has_value());
    for (const char* bad : {"", "max", "100000", "-1 100000", "1.5 1", "100000 0", "max max", "a b"})
        REQUIRE_THROWS_AS(parse_cpu_max(bad, "/sys/fs/cgroup/x/cpu.max"), InputError);
    REQUIRE_THROWS_WITH(parse_cpu_max("lots 100000", "/sys/fs/cgroup/x/cpu.max"),
                        "/sys/fs/cgroup/x/cpu.max: \"lots 100000\", expected \"max PERIOD\" or \"QUOTA PERIOD\" in "
                        "microseconds");
}

TEST_CASE("cpu budget: the tightest limit from the process's cgroup up to the mount", "[threads]") {
    TempDir dir("cgroups");
    const std::filesystem::path v2 = dir.path / "v2";
    // v2: the parent allows 1.5 CPUs, the child none of its own, the grandchild 3.
    write(v2 / "cpu.max", "max 100000");  // the top: ignored when looser
    write(v2 / "parent" / "cpu.max", "150000 100000");
    write(v2 / "parent" / "child" / "cpu.max", "max 100000");
    write(v2 / "parent" / "child" / "leaf" / "cpu.max", "300000 100000");
    auto limit = cgroup_cpu_limit(v2.string(), "/parent/child/leaf");
    REQUIRE(limit.has_value());
    REQUIRE(limit->cpus == Approx(1.5));
    REQUIRE(limit->file == (v2 / "parent" / "cpu.max").string());
    REQUIRE_FALSE(cgroup_cpu_limit(v2.string(), "/").has_value());
    // v1: cpu.cfs_quota_us over cpu.cfs_period_us; -1 is none.
    const std::filesystem::path v1 = dir.path / "v1";
    write(v1 / "cpu.cfs_quota_us", "-1");
    write(v1 / "cpu.cfs_period_us", "100000");
    write(v1 / "job" / "cpu.cfs_quota_us", "50000");
    write(v1 / "job" / "cpu.cfs_period_us", "100000");
    limit = cgroup_cpu_limit(v1.string(), "/job");
    REQUIRE(limit.has_value());
    REQUIRE(limit->cpus == Approx(0.5));
    REQUIRE_FALSE(cgroup_cpu_limit(v1.string(), "/").has_value());
    write(v1 / "bad" / "cpu.cfs_quota_us", "many");
    write(v1 / "bad" / "cpu.cfs_period_us", "100000");
    REQUIRE_THROWS_AS(cgroup_cpu_limit(v1.string(), "/bad"), InputError);
}

TEST_CASE("cpu load: busy time of the CPUs in the mask, from /proc/stat", "[threads]") {
    const std::string stat = "cpu  400 0 200 900 10 0 0 0 0 0\n"
                             "cpu0 100 0 50 400 5 0 0 0 0 0\n"
                             "cpu1 300 0 150 500 5 0 0 25 0 0\n"
                             "intr 12345\n";
    int counted = 0;
    REQUIRE(busy_seconds(stat, {}, 100, counted) == Approx(6.25));  // (150 + 475) ticks
    REQUIRE(counted == 2);
    REQUIRE(busy_seconds(stat, {1}, 100, counted) == Approx(4.75));  // steal counts as taken
    REQUIRE(counted == 1);
    REQUIRE(busy_seconds(stat, {7}, 100, counted) == 0);
    REQUIRE(counted == 0);
    // Others: the CPUs' busy time less this process's own, per second.
    CpuReading before{10.0, 100.0, 20.0, 2}, after{12.0, 103.0, 21.0, 2};
    REQUIRE(others_cpus(before, after) == Approx(1.0));
    after.own_s = 24.0;  // more than the CPUs were busy (their ticks are coarse): none
    REQUIRE(others_cpus(before, after) == 0);
    REQUIRE(others_cpus(CpuReading{}, after) == -1);  // no /proc/stat
}
