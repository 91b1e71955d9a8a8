// Benchmarks (`tinyformer bench`): how fast training and sampling run on this machine,
// against the GEMM peak measured in the same run. Every figure is the median of several
// timed repetitions after a warm-up, because the machines we run on are shared and noisy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/engine/cpu_budget.hpp"
#include "tinyformer/engine/memory_bandwidth.hpp"
#include "tinyformer/engine/profiling.hpp"
#include "tinyformer/model/model.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer {

struct BenchOptions {
    ModelConfig model;            // vocab_size must be set
    int64_t batch_size = 32;
    int64_t warmup_steps = 5;     // untimed training steps first (primitives made, buffers pooled)
    int64_t steps_per_repeat = 10;
    int64_t repeats = 7;
    int64_t sample_chars = 256;   // characters generated per sampling repetition (each of three)
    int sample_threads = 1;       // sampling is one stream of one character at a time
    uint64_t seed = 1337;
    bool profile = false;         // after the timed steps, time every kernel of steps_per_repeat more
    std::string precision = "float32";  // train.precision: the training steps' and the GEMM peak's products
    bool overlap_exchange = false;      // train.exchange, resolved (train/step.hpp)
};

struct GemmMeasurement {
    int64_t M = 0, N = 0, K = 0;
    double gflops = 0;  // the best repetition: a peak is what the machine can do, not what it usually does
};

struct BenchResult {
    std::vector<double> train_tokens_per_s;   // one per repetition
    std::vector<double> sample_chars_per_s;   // one per repetition, within the context
    std::vector<double> sample_window_chars_per_s;   // past the context, KvCache::window
    std::vector<double> sample_rolling_chars_per_s;  // past the context, KvCache::rolling (rope only)
    double flops_per_token = 0;               // training (forward + backward), see training_flops_per_token
    std::vector<GemmMeasurement> gemm;        // the model's own matmul shapes
    double peak_rss_mb = 0;                   // of this process, at the end
    double tensor_peak_mb = 0;                // tensor buffers held at once, at most (training)
    uint64_t timed_buffer_allocations = 0;    // tensor buffers the timed training steps got from the system
    Profile profile;                          // with BenchOptions::profile: per kernel, over profile_steps
    int64_t profile_steps = 0;
    double profile_seconds = 0;               // wall time of the profiled steps (timing adds a little)
    CopyBandwidth memory_bandwidth;           // with a profile: the threads copying far more than the caches hold,
    CopyBandwidth cache_bandwidth;            // and a share each that stays in its L2 (memory_bandwidth.hpp)
    // The machine the figures were measured on: the CPUs found, what other processes kept busy
    // of them while the steps were timed (cpu_load.hpp; -1 when unreadable), the 1-minute
    // load average after, and how many threads share_cores ran the steps on.
    CpuBudget budget;
    double others_cpus = -1, load_average = -1;
    int running_threads_min = 0, running_threads_max = 0;
    // Under mpirun: the processes, and the share of the timed steps' wall time this one spent
    // in the gradient exchange (waiting for the others included). Alone: 1 and 0.
    int processes = 1;
    double exchange_share = 0;
    int64_t buckets = 0, buckets_started_in_backward = 0;  // of a step's gradient sum (train/step.hpp)

    double train_median() const;
    double sample_median() const;
    double gflops() const;                    // flops_per_token × median train tokens/s
    const GemmMeasurement& gemm_peak() const; // the fastest shape
    bool busy_machine() const;                // others kept at least kBusyOthersCpus busy: warn
};

// Matrix-multiply FLOPs to train on one token (forward + backward = 3 × forward), counting a
// multiply-add as 2 and ignoring the elementwise work — the estimate of the PaLM paper
// (appendix B) and nanoGPT's estimate_mfu:
//   forward = 2·(L·12·D² + D·V)   the projections (4·D² per layer), the MLP (8·D²), the LM head
//           + L·4·T·D             q·kᵀ and weights·v over all T positions (masked ones are computed too)
//   training = 3 × forward = 6·(12·L·D² + D·V) + 12·L·T·D
double training_flops_per_token(const ModelConfig& model);

// Other processes keeping a fifth of a CPU busy while the steps were timed: the figures are a
// busy machine's, and bench says so.
inline constexpr double kBusyOthersCpus = 0.2;

// Runs the benchmark with the current backend and thread count.
BenchResult run_bench(const BenchOptions& options);

double median(std::vector<double> values);

// What `tinyformer bench` measures: a config's model, batch size, seed and precision, and how.
struct BenchRequest {
    RunConfig config;
    int64_t vocab = -1;     // the vocabulary size; -1 = the config's model.vocab_size, else its corpus's
    BenchOptions options;   // repeats, steps, sample characters and threads, profile; the rest from `config`
    bool json = false;      // print one JSON object instead of the report
};

// Runs the benchmark with the current backend and thread count and prints its report
// (stdout): training and sampling speed, FLOPs against the GEMM peak, memory, and with
// options.profile where a step's time goes. Throws InputError for a vocabulary size or
// options it cannot run with.
void print_bench(const BenchRequest& request);

}  // namespace tinyformer
