#include "tinyformer/train/bench.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/prepared_data.hpp"
#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/buffer_pool.hpp"
#include "tinyformer/engine/build_info.hpp"
#include "tinyformer/engine/cpu_budget.hpp"
#include "tinyformer/engine/cpu_load.hpp"
#include "tinyformer/engine/kernel_targets.hpp"
#include "tinyformer/engine/threads.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/plot.hpp"
#include "tinyformer/support/progress.hpp"
#include "tinyformer/train/optim.hpp"
#include "tinyformer/train/step.hpp"

namespace tinyformer {

namespace {

using Clock = std::chrono::steady_clock;

// Random token ids, as torch_reference.py bench uses: the speed of a step does not depend on
// what the text says.
Batch random_batch(int64_t B, int64_t T, int64_t V, Rng& rng) {
    std::vector<int32_t> window(B * (T + 1));
    for (int32_t& id : window) id = static_cast<int32_t>(rng.below(V));
    std::vector<int32_t> inputs(B * T), targets(B * T);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            inputs[b * T + t] = window[b * (T + 1) + t];
            targets[b * T + t] = window[b * (T + 1) + t + 1];
        }
    return {Tensor::ids(inputs, {B, T}), Tensor::ids(targets, {B, T})};
}

// One training step exactly as the trainer takes it (train/step.hpp): forward, backward,
// clipping, AdamW. With a profile, the step's own passes (loops of their own, not backend
// kernels) are timed into it too.
StepOutcome bench_step(Transformer& model, AdamW& adam, const Batch& batch, const BenchOptions& options,
                       Profile* profile = nullptr) {
    const MatmulPrecision precision = options.precision == "bf16" ? MatmulPrecision::bf16 : MatmulPrecision::float32;
    return train_step(model, adam, batch,
                      {.lr = 1e-3, .grad_clip = 1.0, .precision = precision,
                       .overlap_exchange = options.overlap_exchange, .profile = profile});
}

std::vector<double> measure_training(const BenchOptions& options, BenchResult& result) {
    const int64_t B = options.batch_size, T = options.model.context;
    Transformer model(options.model, options.seed);
    AdamW adam(model.parameters(), OptimConfig{});
    // Under mpirun each process takes its share of the batch, as the trainer does.
    const int64_t share = static_cast<int64_t>(this_process_share(std::vector<int64_t>(static_cast<size_t>(B))).size());
    Rng rng(options.seed + static_cast<uint64_t>(rank()));
    std::vector<Batch> batches;  // made before the clock starts, cycled through
    for (int i = 0; i < 8; ++i) batches.push_back(random_batch(share, T, options.model.vocab_size, rng));

    int64_t step = 0;
    // The warm-up lasts long enough for share_cores to have read the machine's load twice, so
    // that the timed steps run on the threads it chose (on a busy machine, fewer).
    // Under mpirun every process takes the same number of steps (each is an exchange): warm-up
    // goes on while any of them wants more.
    const auto warmup_start = Clock::now();
    for (int64_t i = 0;; ++i) {
        bench_step(model, adam, batches[step++ % batches.size()], options);
        if (!any_process(i + 1 < options.warmup_steps || seconds_since(warmup_start) < 2.5 * kShareIntervalSeconds))
            break;
    }
    const buffer_pool::Stats before = buffer_pool::stats();
    const CpuReading load_before = read_cpu_load();
    result.running_threads_min = result.running_threads_max = running_threads();
    std::vector<double> tokens_per_s;
    double exchange_seconds = 0;
    const auto timed_start = Clock::now();
    for (int64_t r = 0; r < options.repeats; ++r) {
        const auto start = Clock::now();
        for (int64_t i = 0; i < options.steps_per_repeat; ++i) {
            const StepOutcome outcome = bench_step(model, adam, batches[step++ % batches.size()], options);
            exchange_seconds += outcome.exchange_seconds;
            result.buckets = outcome.buckets;
            result.buckets_started_in_backward = outcome.buckets_started_in_backward;
            result.running_threads_min = std::min(result.running_threads_min, running_threads());
            result.running_threads_max = std::max(result.running_threads_max, running_threads());
        }
        tokens_per_s.push_back(static_cast<double>(options.steps_per_repeat * B * T) / seconds_since(start));
    }
    result.exchange_share = exchange_seconds / seconds_since(timed_start);
    result.others_cpus = others_cpus(load_before, read_cpu_load());
    result.load_average = load_average_1min();
    const buffer_pool::Stats after = buffer_pool::stats();
    result.timed_buffer_allocations = after.system_allocations - before.system_allocations;
    result.tensor_peak_mb = static_cast<double>(after.peak_bytes_in_use) / (1 << 20);
    if (options.profile) {
        ProfileScope scope(result.profile);
        const auto start = Clock::now();
        for (int64_t i = 0; i < options.steps_per_repeat; ++i)
            bench_step(model, adam, batches[step++ % batches.size()], options, &result.profile);
        result.profile_seconds = seconds_since(start);
        result.profile_steps = options.steps_per_repeat;
    }
    return tokens_per_s;
}

// Characters per second of generate() with `sample`, from `prompt`, over `chars` characters
// in calls of at most sample.max_new each: one figure per repetition, after a warm-up.
std::vector<double> chars_per_second(const Transformer& model, const Vocabulary& vocab, const std::u32string& prompt,
                                     SampleOptions sample, int64_t chars, const BenchOptions& options) {
    Rng rng(options.seed);
    Decoder decoder(model);  // made once, as sample --num-samples and the probes do
    generate(decoder, vocab, prompt, sample, rng);  // warm-up
    std::vector<double> figures;
    for (int64_t r = 0; r < options.repeats; ++r) {
        int64_t generated = 0;
        const auto start = Clock::now();
        while (generated < chars)
            generated += static_cast<int64_t>(generate(decoder, vocab, prompt, sample, rng).size());
        figures.push_back(static_cast<double>(generated) / seconds_since(start));
    }
    return figures;
}

void measure_sampling(const BenchOptions& options, BenchResult& result) {
    const int previous_threads = num_threads();
    set_num_threads(options.sample_threads);
    Transformer model(options.model, options.seed);
    const int64_t T = options.model.context;
    std::vector<char32_t> chars(options.model.vocab_size);
    for (int64_t i = 0; i < options.model.vocab_size; ++i) chars[i] = U'A' + static_cast<char32_t>(i);
    const Vocabulary vocab(chars);
    SampleOptions sample;
    sample.temperature = 1.0;
    // Within the context: one character of prompt, then T-1 new ones, again and again.
    sample.max_new = std::max<int64_t>(1, T - 1);
    result.sample_chars_per_s = chars_per_second(model, vocab, std::u32string(1, chars[0]), sample,
                                                 options.sample_chars, options);
    // Past the context: a full window of prompt, so every new character is past it.
    std::u32string full_window;
    for (int64_t i = 0; i < T; ++i) full_window += chars[i % options.model.vocab_size];
    sample.max_new = options.sample_chars;
    sample.cache = KvCache::window;
    result.sample_window_chars_per_s =
        chars_per_second(model, vocab, full_window, sample, options.sample_chars, options);
    if (options.model.positions == "rope") {  // learned positions always recompute the window
        sample.cache = KvCache::rolling;
        result.sample_rolling_chars_per_s =
            chars_per_second(model, vocab, full_window, sample, options.sample_chars, options);
    }
    set_num_threads(previous_threads);
}

// The GEMMs the model itself runs in a training step: [B·T, D] times [D, D] (the attention
// projections) and [D, 4D] (the MLP), through the current backend.
std::vector<GemmMeasurement> measure_gemm(const BenchOptions& options) {
    const int64_t rows = options.batch_size * options.model.context, D = options.model.d_model;
    std::vector<GemmMeasurement> results;
    for (int64_t N : {D, 4 * D}) {
        GemmMeasurement m{rows, N, D, 0};
        Tensor a = Tensor::full({m.M, m.K}, 0.5), b = Tensor::full({m.K, m.N}, 0.25), c = Tensor::zeros({m.M, m.N});
        if (options.precision == "bf16") {  // the peak in the precision the steps use: bf16 operands
            a = bf16_copy(a);
            b = bf16_copy(b);
        }
        GemmSpec spec;
        spec.M = m.M, spec.N = m.N, spec.K = m.K;
        const double flops = 2.0 * m.M * m.N * m.K;
        // Enough calls per repetition for a few milliseconds of work at ~100 GFLOP/s.
        const int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(5e8 / flops));
        for (int64_t i = 0; i < calls; ++i) backend().gemm(a, b, c, spec);  // warm-up
        for (int64_t r = 0; r < options.repeats; ++r) {
            const auto start = Clock::now();
            for (int64_t i = 0; i < calls; ++i) backend().gemm(a, b, c, spec);
            m.gflops = std::max(m.gflops, flops * calls / seconds_since(start) / 1e9);
        }
        results.push_back(m);
    }
    return results;
}

double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double training_flops_per_token(const ModelConfig& m) {
    const double L = static_cast<double>(m.n_layers), D = static_cast<double>(m.d_model);
    const double V = static_cast<double>(m.vocab_size), T = static_cast<double>(m.context);
    return 6.0 * (12.0 * L * D * D + D * V) + 12.0 * L * T * D;
}

bool BenchResult::busy_machine() const { return others_cpus >= kBusyOthersCpus; }
double BenchResult::train_median() const { return median(train_tokens_per_s); }
double BenchResult::sample_median() const { return median(sample_chars_per_s); }
double BenchResult::gflops() const { return flops_per_token * train_median() / 1e9; }
const GemmMeasurement& BenchResult::gemm_peak() const {
    return *std::max_element(gemm.begin(), gemm.end(),
                             [](const GemmMeasurement& a, const GemmMeasurement& b) { return a.gflops < b.gflops; });
}

BenchResult run_bench(const BenchOptions& options) {
    options.model.validate();
    if (options.model.vocab_size < 1) throw std::invalid_argument("bench: the vocabulary size must be set");
    if (options.batch_size < 1 || options.repeats < 1 || options.steps_per_repeat < 1 || options.sample_chars < 1)
        throw std::invalid_argument("bench: batch, repeats, steps and sample characters must be at least 1");
    BenchResult result;
    result.flops_per_token = training_flops_per_token(options.model);
    result.gemm = measure_gemm(options);
    result.train_tokens_per_s = measure_training(options, result);
    result.processes = world_size();
    if (world_size() == 1) measure_sampling(options, result);  // one stream: nothing to share
    result.peak_rss_mb = peak_rss_mb();
    if (options.profile) {
        // The yardsticks for the profile's bytes per second, on the same threads. After the
        // peak memory is read: the copy's 512 MB are not the model's.
        result.memory_bandwidth = measure_copy_bandwidth(int64_t{256} << 20);
        result.cache_bandwidth = measure_copy_bandwidth((int64_t{128} << 10) * running_threads());
    }
    result.budget = cpu_budget();
    return result;
}

namespace {

// The vocabulary size: --vocab (-1 when not given), else the config's corpus, which must
// then be readable.
int64_t vocab_size_for(const RunConfig& config, int64_t vocab_option) {
    if (vocab_option != -1) {
        if (vocab_option < 1)
            throw InputError("bench: --vocab " + std::to_string(vocab_option) + ", expected 1 or more");
        return vocab_option;
    }
    if (config.model.vocab_size > 0) return config.model.vocab_size;
    const DataConfig& data = config.data;
    if (!data.prepared.empty()) return load_prepared(data.prepared).vocab.size();
    const std::string& text = data.path.empty() ? data.train_path : data.path;
    if (text.empty() || !std::filesystem::exists(text))
        throw InputError("bench: the vocabulary size comes from the config's corpus, and \"" + text +
                         "\" is not a file: give --vocab N (or --set data.path=FILE)");
    return load_corpus(data).vocab.size();
}

std::string thousands(double value) { return with_commas(static_cast<int64_t>(value + 0.5)); }  // 123456.7 → "123,457"

// Per step: each kernel's calls and milliseconds, slowest first, then what lies outside the
// kernels (building the graph, allocating, autograd's own walk).
void print_profile(const BenchResult& result) {
    const double steps = static_cast<double>(result.profile_steps), step_ms = 1e3 * result.profile_seconds / steps;
    std::vector<Profile::Entry> entries = result.profile.entries;
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
    std::printf("\n  where a training step's %.2f ms go (%lld profiled steps, per step; own kernels on %s):\n",
                step_ms, (long long)result.profile_steps, kernel_target().c_str());
    std::printf("  GB/s: the bytes a kernel's arguments hold (read once, written once) per second of it, beside\n"
                "  a copy on the same threads: %.1f GB/s from memory (%lld MB), %.1f GB/s in cache (%lld KB a thread)\n",
                result.memory_bandwidth.bytes_per_s / 1e9, (long long)(result.memory_bandwidth.bytes >> 20),
                result.cache_bandwidth.bytes_per_s / 1e9,
                (long long)(result.cache_bandwidth.bytes / std::max(1, running_threads()) >> 10));
    std::printf("    %8s %6s %6s %7s  %s\n", "ms", "share", "calls", "GB/s", "kernel");
    for (const Profile::Entry& e : entries) {
        const std::string rate = e.bytes > 0 ? std::to_string(static_cast<int64_t>(e.bytes / e.seconds / 1e9 + 0.5)) : "";
        std::printf("    %8.3f %5.1f%% %6.0f %7s  %s\n", 1e3 * e.seconds / steps,
                    100.0 * 1e3 * e.seconds / steps / step_ms, static_cast<double>(e.calls) / steps, rate.c_str(),
                    e.kernel.c_str());
    }
    const double outside_ms = step_ms - 1e3 * result.profile.kernel_seconds() / steps;
    std::printf("    %8.3f %5.1f%%                 outside the kernels (graph building, buffers, autograd's walk)\n",
                outside_ms, 100.0 * outside_ms / step_ms);
}

nlohmann::json profile_json(const BenchResult& result) {
    const double steps = static_cast<double>(result.profile_steps);
    nlohmann::json kernels = nlohmann::json::array();
    for (const Profile::Entry& e : result.profile.entries)
        kernels.push_back({{"kernel", e.kernel}, {"calls_per_step", e.calls / steps},
                           {"ms_per_step", 1e3 * e.seconds / steps}, {"bytes_per_step", e.bytes / steps},
                           {"bytes_per_s", e.seconds > 0 ? e.bytes / e.seconds : 0.0}});
    return {{"steps", result.profile_steps}, {"step_ms", 1e3 * result.profile_seconds / steps},
            {"copy_bytes_per_s_memory", result.memory_bandwidth.bytes_per_s},
            {"copy_bytes_per_s_cache", result.cache_bandwidth.bytes_per_s},
            {"outside_kernels_ms", 1e3 * (result.profile_seconds - result.profile.kernel_seconds()) / steps},
            {"kernels", kernels}};
}

// The report as one JSON object (bench --json).
nlohmann::json bench_json(const RunConfig& config, const BenchOptions& options, const BenchResult& result) {
    const ModelConfig& m = options.model;
    const GemmMeasurement& peak = result.gemm_peak();
    nlohmann::json gemm = nlohmann::json::array();
    for (const GemmMeasurement& g : result.gemm)
        gemm.push_back({{"M", g.M}, {"N", g.N}, {"K", g.K}, {"gflops", g.gflops}});
    nlohmann::json out = {
        {"config", config.name}, {"backend", backend().name()}, {"threads", num_threads()},
        {"kernels", kernel_target()}, {"onednn_isa", build_info().onednn_isa},
        {"precision", options.precision},
        {"d_model", m.d_model}, {"n_heads", m.n_heads}, {"n_layers", m.n_layers}, {"context", m.context},
        {"vocab_size", m.vocab_size}, {"batch", options.batch_size},
        {"train_tokens_per_s", result.train_median()}, {"train_tokens_per_s_runs", result.train_tokens_per_s},
        {"sample_tokens_per_s", result.sample_median()}, {"sample_tokens_per_s_runs", result.sample_chars_per_s},
        {"sample_past_context_window_chars_per_s", median(result.sample_window_chars_per_s)},
        {"sample_past_context_rolling_chars_per_s",
         result.sample_rolling_chars_per_s.empty() ? nlohmann::json(nullptr)
                                                   : nlohmann::json(median(result.sample_rolling_chars_per_s))},
        {"sample_threads", options.sample_threads}, {"flops_per_token", result.flops_per_token},
        {"gflops", result.gflops()}, {"gemm_peak_gflops", peak.gflops}, {"gemm", gemm},
        {"peak_fraction", result.gflops() / peak.gflops}, {"peak_rss_mb", result.peak_rss_mb},
        {"tensor_peak_mb", result.tensor_peak_mb}, {"timed_buffer_allocations", result.timed_buffer_allocations},
        {"cpus", result.budget.cpus}, {"cpus_reason", result.budget.reason}, {"cpu_model", build_info().cpu_model},
        {"running_threads_min", result.running_threads_min}, {"running_threads_max", result.running_threads_max},
        {"others_cpus", result.others_cpus < 0 ? nlohmann::json(nullptr) : nlohmann::json(result.others_cpus)},
        {"load_average_1min", result.load_average < 0 ? nlohmann::json(nullptr) : nlohmann::json(result.load_average)},
        {"busy_machine", result.busy_machine()},
        {"processes", result.processes}, {"exchange_share", result.exchange_share},
        {"exchange", options.overlap_exchange ? "overlap" : "after"}, {"buckets", result.buckets},
        {"buckets_started_in_backward", result.buckets_started_in_backward}};
    if (options.profile) out["profile"] = profile_json(result);
    return out;
}

// The CPUs found, and the load the timed steps ran beside, with a warning when it was high.
void print_machine_load(const BenchResult& result) {
    const std::string model = build_info().cpu_model;
    std::printf("  cpus     %d (%s)%s\n", result.budget.cpus, result.budget.reason.c_str(),
                model.empty() ? "" : ("; " + model).c_str());
    const std::string running = result.running_threads_min == result.running_threads_max
                                    ? std::to_string(result.running_threads_min)
                                    : std::to_string(result.running_threads_min) + "-" +
                                          std::to_string(result.running_threads_max);
    if (result.others_cpus < 0) {
        std::printf("  load     not readable here (/proc/stat); the steps ran on %s of %d threads\n", running.c_str(),
                    num_threads());
        return;
    }
    std::printf("  load     other processes kept %.2f CPUs busy during the timed steps; load average %.2f; the "
                "steps ran on %s of %d threads\n",
                result.others_cpus, result.load_average, running.c_str(), num_threads());
    if (result.busy_machine())
        std::printf("  warning: measured on a busy machine: these figures are this machine's load's, not "
                    "tinyformer's; measure again on an idle one before publishing them\n");
}

// The model's FLOPs, the share of the GEMM peak, memory, the machine's load and the profile.
void print_training_figures(const BenchOptions& options, const BenchResult& result) {
    const GemmMeasurement& peak = result.gemm_peak();
    std::printf("  model    %.3f MFLOP per training token\n", result.flops_per_token / 1e6);
    // With several processes the peak is one process's, measured while the others measured theirs.
    const double peak_of_all = peak.gflops * result.processes;
    std::printf("  achieved %.1f GFLOP/s = %.0f %% of the GEMM peak, %.1f GFLOP/s%s (%lld×%lld×%lld, this run)\n",
                result.gflops(), 100.0 * result.gflops() / peak_of_all, peak_of_all,
                result.processes > 1 ? (" = " + std::to_string(result.processes) + " processes × their own").c_str() : "",
                (long long)peak.M, (long long)peak.N, (long long)peak.K);
    std::printf("  memory   %.0f MB peak resident; tensors %.1f MB at most; %llu buffers from the system in the "
                "timed steps\n",
                result.peak_rss_mb, result.tensor_peak_mb, (unsigned long long)result.timed_buffer_allocations);
    print_machine_load(result);
    if (options.profile) print_profile(result);
}

// The report for a person: one line per figure, then with a profile where a step's time goes.
void print_bench_report(const RunConfig& config, const BenchOptions& options, const BenchResult& result) {
    const ModelConfig& m = options.model;
    std::printf("tinyformer bench: %s (D=%lld H=%lld L=%lld T=%lld V=%lld), batch %lld, %s, %d threads\n",
                config.name.c_str(), (long long)m.d_model, (long long)m.n_heads, (long long)m.n_layers,
                (long long)m.context, (long long)m.vocab_size, (long long)options.batch_size,
                backend().name().c_str(), num_threads());
    std::printf("  kernels  own on %s (TINYFORMER_ISA chooses), oneDNN's on %s\n", kernel_target().c_str(),
                build_info().onednn_isa.c_str());
    if (options.precision != "float32") std::printf("  precision %s matrix products\n", options.precision.c_str());
    const auto [train_min, train_max] =
        std::minmax_element(result.train_tokens_per_s.begin(), result.train_tokens_per_s.end());
    std::printf("  train    %s tokens/s   median of %lld × %lld steps (range %s–%s)\n",
                thousands(result.train_median()).c_str(), (long long)options.repeats,
                (long long)options.steps_per_repeat, thousands(*train_min).c_str(), thousands(*train_max).c_str());
    if (result.processes > 1)
        std::printf("  processes %d (mpirun), %lld windows each; the gradient exchange took %.1f %% of a step\n"
                    "  exchange %lld buckets, %lld of them started during the backward\n",
                    result.processes, (long long)(options.batch_size / result.processes), 100 * result.exchange_share,
                    (long long)result.buckets, (long long)result.buckets_started_in_backward);
    if (result.sample_chars_per_s.empty()) {  // several processes: sampling is one process's work
        print_training_figures(options, result);
        return;
    }
    // The sampling figures right-aligned on one another.
    const std::string within = thousands(result.sample_median()),
                      window = thousands(median(result.sample_window_chars_per_s)),
                      rolling = result.sample_rolling_chars_per_s.empty()
                                    ? ""
                                    : thousands(median(result.sample_rolling_chars_per_s));
    const int width = static_cast<int>(std::max({within.size(), window.size(), rolling.size()}));
    std::printf("  sample   %*s chars/s   within the context: one stream, KV cache, %d thread%s, median of "
                "%lld × %lld chars\n",
                width, within.c_str(), options.sample_threads, options.sample_threads == 1 ? "" : "s",
                (long long)options.repeats, (long long)options.sample_chars);
    std::printf("           %*s chars/s   past the context, --cache window (recomputes the last %lld characters)\n",
                width, window.c_str(), (long long)m.context);
    if (!rolling.empty()) std::printf("           %*s chars/s   past the context, --cache rolling\n", width, rolling.c_str());
    print_training_figures(options, result);
}

}  // namespace

void print_bench(const BenchRequest& request) {
    const RunConfig& config = request.config;
    BenchOptions options = request.options;
    // Whatever can be wrong is found on every process before the first exchange.
    run_on_every_rank([&] {
        options.model = config.model;
        options.model.vocab_size = vocab_size_for(config, request.vocab);
        options.batch_size = config.train.batch_size;
        options.seed = static_cast<uint64_t>(config.train.seed);
        options.precision = config.train.precision;
        options.overlap_exchange = overlap_exchange(config.train.exchange);
        if (options.repeats < 1 || options.steps_per_repeat < 1 || options.sample_chars < 1 || options.sample_threads < 1)
            throw InputError("bench: --repeats, --steps, --sample-chars and --sample-threads must be at least 1");
        this_process_share(std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(0, options.batch_size))));
    });
    const BenchResult result = run_bench(options);
    if (!is_writer()) return;  // under mpirun, rank 0 reports
    if (request.json) {
        std::printf("%s\n", bench_json(config, options, result).dump().c_str());
        return;
    }
    print_bench_report(config, options, result);
}

}  // namespace tinyformer
