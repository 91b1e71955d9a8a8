// A sweep's results, aggregated: one row per run (sweep.csv, sweep.json) and, per group of
// runs that differ only in their seed, each metric's mean ± sample standard deviation,
// min–max, n and a 95 % interval for the mean (a console table, sweep.svg).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tinyformer/sweep/sweep.hpp"

namespace tinyformer {

// One run's outcome: its summary.json when it finished, else nothing; and, when it was
// inspected (<run>/inspect/heads.json), the heads that read each answer kind by the
// report's rule (answer_kind_read, inspect.hpp).
struct SweepRunResult {
    SweepRun run;
    bool finished = false;
    nlohmann::json summary;  // summary.json, when finished
    bool inspected = false;
    std::map<std::string, std::vector<std::string>> readers;  // answer kind → heads ("L1H1") that read it
};

// Over a group's inspected runs: in how many some head reads an answer kind, and which heads.
struct ReaderCount {
    int64_t inspected = 0, with_reader = 0;
    std::map<std::string, int64_t> heads;  // head → in how many runs it reads the kind
};

// Statistics of one metric over a group's finished runs.
struct MetricStats {
    int64_t n = 0;
    double mean = 0, sd = 0, min = 0, max = 0;  // sd: the sample standard deviation (n - 1), NaN for n < 2
    double ci95 = 0;  // half the width of the 95 % interval for the mean, t(0.975, n-1)·sd/√n; NaN for n < 2
};
MetricStats metric_stats(const std::vector<double>& values);
// Student's t quantile t(0.975, df), the two-sided 95 % point: a table for df ≤ 30, beyond it
// the Cornish-Fisher expansion z + (z³ + z)/(4 df) (within 0.003 of the exact value).
double student_t_975(int64_t df);

// The metrics aggregated, in the table's order: key in the summary, and a heading.
struct SweepMetric {
    std::string name;     // "val_loss", "probe_accuracy", "probe_colour", ..., "train_seconds"
    std::string heading;  // "val loss", "probes", ...
};

struct SweepGroup {
    std::string group;
    std::vector<std::pair<std::string, std::string>> settings;
    int64_t runs = 0;                           // in the grid
    std::map<std::string, MetricStats> metrics;  // over the finished ones
    std::map<std::string, std::vector<double>> values;  // each metric's values, in seed order
    std::map<std::string, ReaderCount> readers;  // answer kind → its readers over the seeds
};

struct SweepReport {
    SweepSpec spec;
    std::vector<SweepRunResult> results;
    std::vector<SweepMetric> metrics;
    std::vector<SweepGroup> groups;
    std::vector<std::string> reader_kinds;  // the answer kinds the inspected runs report
};

// Reads every run's summary.json (and inspect/heads.json) under out_dir; runs not finished
// are counted, not used. A malformed file is an InputError naming it.
SweepReport collect_sweep(const SweepSpec& spec, const std::string& out_dir);
// The value of a metric in a summary, NaN when it has none.
double summary_metric(const nlohmann::json& summary, const std::string& metric);

nlohmann::json sweep_report_json(const SweepReport& report);
std::string sweep_report_csv(const SweepReport& report);
std::string sweep_report_table(const SweepReport& report);  // for the console
std::string sweep_report_svg(const SweepReport& report);
// Writes sweep.json, sweep.csv and sweep.svg into out_dir (atomically) and returns the table.
std::string write_sweep_report(const SweepReport& report, const std::string& out_dir);

}  // namespace tinyformer
