// tinyformer bench [--config FILE] [--set K=V]... [--vocab N] [--json] [--backend B] [--threads N]
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/prepared_data.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/bench.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer::cli {

namespace {

// Without --config, the lesson's model: configs/lesson12.toml in the working directory (a
// source tree), else the copy installed beside the binary (<prefix>/bin/tinyformer →
// <prefix>/share/tinyformer/configs/lesson12.toml), wherever the prefix is.
std::string default_bench_config() {
    namespace fs = std::filesystem;
    const fs::path here = "configs/lesson12.toml";
    std::error_code error;
    if (fs::exists(here, error)) return here.string();
    const fs::path executable = fs::read_symlink("/proc/self/exe", error);
    const fs::path installed = executable.parent_path().parent_path() / "share/tinyformer/configs/lesson12.toml";
    if (!error && fs::exists(installed, error)) return installed.string();
    throw InputError("bench: no --config given, and neither ./" + here.string() + " nor " + installed.string() +
                     " exists; expected --config FILE");
}

// The vocabulary size: --vocab (-1 when not given), else the config's corpus, which must
// then be readable.
int64_t vocab_size_for(const RunConfig& config, int64_t vocab_option) {
    if (vocab_option != -1) {
        if (vocab_option < 1) throw InputError("bench: --vocab " + std::to_string(vocab_option) + ", expected 1 or more");
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

std::string thousands(double value) {  // 123456.7 → "123,457"
    std::string digits = std::to_string(static_cast<long long>(value + 0.5)), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// Per step: each kernel's calls and milliseconds, slowest first, then what lies outside the
// kernels (building the graph, allocating, autograd's own walk).
void print_profile(const BenchResult& result) {
    const double steps = static_cast<double>(result.profile_steps), step_ms = 1e3 * result.profile_seconds / steps;
    std::vector<Profile::Entry> entries = result.profile.entries;
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
    std::printf("\n  where a training step's %.2f ms go (%lld profiled steps, per step):\n", step_ms,
                (long long)result.profile_steps);
    std::printf("    %8s %6s %6s  %s\n", "ms", "share", "calls", "kernel");
    for (const Profile::Entry& e : entries)
        std::printf("    %8.3f %5.1f%% %6.0f  %s\n", 1e3 * e.seconds / steps, 100.0 * 1e3 * e.seconds / steps / step_ms,
                    static_cast<double>(e.calls) / steps, e.kernel.c_str());
    const double outside_ms = step_ms - 1e3 * result.profile.kernel_seconds() / steps;
    std::printf("    %8.3f %5.1f%%         outside the kernels (graph building, buffers, autograd's walk)\n",
                outside_ms, 100.0 * outside_ms / step_ms);
}

nlohmann::json profile_json(const BenchResult& result) {
    const double steps = static_cast<double>(result.profile_steps);
    nlohmann::json kernels = nlohmann::json::array();
    for (const Profile::Entry& e : result.profile.entries)
        kernels.push_back({{"kernel", e.kernel}, {"calls_per_step", e.calls / steps}, {"ms_per_step", 1e3 * e.seconds / steps}});
    return {{"steps", result.profile_steps}, {"step_ms", 1e3 * result.profile_seconds / steps},
            {"outside_kernels_ms", 1e3 * (result.profile_seconds - result.profile.kernel_seconds()) / steps},
            {"kernels", kernels}};
}

}  // namespace

Runner add_bench(CLI::App& app) {
    struct Args {
        std::string config;  // "" = default_bench_config()
        std::vector<std::string> overrides;
        int64_t vocab = -1;  // not given
        bool json = false;
        BenchOptions bench;
    };
    auto args = std::make_shared<Args>();
    auto engine = std::make_shared<EngineOptions>();
    auto* cmd = app.add_subcommand("bench", "Measure training and sampling speed on this machine.");
    cmd->add_option("--config", args->config, "the model and batch size to measure (default: the lesson's, configs/lesson12.toml)");
    cmd->add_option("--set", args->overrides, "override a config key, e.g. --set train.batch_size=8 (repeatable)");
    cmd->add_option("--vocab", args->vocab, "vocabulary size (default: the config's corpus)");
    cmd->add_option("--repeats", args->bench.repeats, "timed repetitions; figures are their median (default 7)");
    cmd->add_option("--steps", args->bench.steps_per_repeat, "training steps per repetition (default 10)");
    cmd->add_option("--sample-chars", args->bench.sample_chars, "characters per sampling repetition (default 256)");
    cmd->add_option("--sample-threads", args->bench.sample_threads, "threads while sampling (default 1)");
    cmd->add_flag("--json", args->json, "print one JSON object");
    cmd->add_flag("--profile", args->bench.profile,
                  "after the timed steps, time every kernel of --steps more steps and print where a step's time goes");
    add_engine_options(cmd, *engine);
    cmd->footer(
        "Training steps are the trainer's own (forward, backward, clipping, AdamW) on random ids, after\n"
        "warm-up steps. FLOPs per token count the matrix products of forward + backward:\n"
        "6·(12·L·D² + D·V) + 12·L·T·D (PaLM appendix B; nanoGPT's estimate_mfu). The GEMM peak is\n"
        "the model's own matmul shapes through the same backend, measured in the same run.");
    return [cmd, args, engine]() -> int {
        if (!cmd->parsed()) return -1;
        if (args->config.empty()) args->config = default_bench_config();
        const RunConfig config = load_config(args->config, args->overrides, /*check_files=*/false);
        apply_engine_options(*engine, static_cast<int>(config.train.threads));
        BenchOptions options = args->bench;
        options.model = config.model;
        options.model.vocab_size = vocab_size_for(config, args->vocab);
        options.batch_size = config.train.batch_size;
        options.seed = static_cast<uint64_t>(config.train.seed);
        options.precision = config.train.precision;
        if (options.repeats < 1 || options.steps_per_repeat < 1 || options.sample_chars < 1 || options.sample_threads < 1)
            throw InputError("bench: --repeats, --steps, --sample-chars and --sample-threads must be at least 1");
        const BenchResult result = run_bench(options);
        const ModelConfig& m = options.model;
        const GemmMeasurement& peak = result.gemm_peak();
        if (args->json) {
            nlohmann::json gemm = nlohmann::json::array();
            for (const GemmMeasurement& g : result.gemm) gemm.push_back({{"M", g.M}, {"N", g.N}, {"K", g.K}, {"gflops", g.gflops}});
            nlohmann::json out = {
                {"config", config.name}, {"backend", backend().name()}, {"threads", num_threads()},
                {"precision", options.precision},
                {"d_model", m.d_model}, {"n_heads", m.n_heads}, {"n_layers", m.n_layers}, {"context", m.context},
                {"vocab_size", m.vocab_size}, {"batch", options.batch_size},
                {"train_tokens_per_s", result.train_median()}, {"train_tokens_per_s_runs", result.train_tokens_per_s},
                {"sample_tokens_per_s", result.sample_median()}, {"sample_tokens_per_s_runs", result.sample_chars_per_s},
                {"sample_threads", options.sample_threads}, {"flops_per_token", result.flops_per_token},
                {"gflops", result.gflops()}, {"gemm_peak_gflops", peak.gflops}, {"gemm", gemm},
                {"peak_fraction", result.gflops() / peak.gflops}, {"peak_rss_mb", result.peak_rss_mb},
                {"tensor_peak_mb", result.tensor_peak_mb}, {"timed_buffer_allocations", result.timed_buffer_allocations}};
            if (options.profile) out["profile"] = profile_json(result);
            std::printf("%s\n", out.dump().c_str());
            return kExitOk;
        }
        std::printf("tinyformer bench: %s (D=%lld H=%lld L=%lld T=%lld V=%lld), batch %lld, %s, %d threads\n",
                    config.name.c_str(), (long long)m.d_model, (long long)m.n_heads, (long long)m.n_layers,
                    (long long)m.context, (long long)m.vocab_size, (long long)options.batch_size,
                    backend().name().c_str(), num_threads());
        if (options.precision != "float32") std::printf("  precision %s matrix products\n", options.precision.c_str());
        const auto [train_min, train_max] = std::minmax_element(result.train_tokens_per_s.begin(), result.train_tokens_per_s.end());
        std::printf("  train    %s tokens/s   median of %lld × %lld steps (range %s–%s)\n",
                    thousands(result.train_median()).c_str(), (long long)options.repeats,
                    (long long)options.steps_per_repeat, thousands(*train_min).c_str(), thousands(*train_max).c_str());
        std::printf("  sample   %s chars/s    one stream, KV cache, %d thread%s, median of %lld × %lld chars\n",
                    thousands(result.sample_median()).c_str(), options.sample_threads,
                    options.sample_threads == 1 ? "" : "s", (long long)options.repeats, (long long)options.sample_chars);
        std::printf("  model    %.3f MFLOP per training token\n", result.flops_per_token / 1e6);
        std::printf("  achieved %.1f GFLOP/s = %.0f %% of the GEMM peak, %.1f GFLOP/s (%lld×%lld×%lld, this run)\n",
                    result.gflops(), 100.0 * result.gflops() / peak.gflops, peak.gflops, (long long)peak.M,
                    (long long)peak.N, (long long)peak.K);
        std::printf("  memory   %.0f MB peak resident; tensors %.1f MB at most; %llu buffers from the system in the timed steps\n",
                    result.peak_rss_mb, result.tensor_peak_mb, (unsigned long long)result.timed_buffer_allocations);
        if (options.profile) print_profile(result);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
