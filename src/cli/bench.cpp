// tinyformer bench [--config FILE] [--set K=V]... [--vocab N] [--json] [--backend B] [--threads N]
#include <filesystem>
#include <memory>

#include "commands.hpp"
#include "tinyformer/distributed/process_group.hpp"
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

}  // namespace

Runner add_bench(CLI::App& app) {
    struct Args {
        std::string config;  // "" = default_bench_config()
        std::vector<std::string> overrides;
        BenchRequest request;  // its config loaded once the command line is parsed
    };
    auto args = std::make_shared<Args>();
    auto engine = std::make_shared<EngineOptions>();
    BenchOptions& bench = args->request.options;
    auto* cmd = app.add_subcommand("bench", "Measure training and sampling speed on this machine.");
    cmd->add_option("--config", args->config,
                    "the model and batch size to measure (default: the lesson's, configs/lesson12.toml)");
    cmd->add_option("--set", args->overrides, "override a config key, e.g. --set train.batch_size=8 (repeatable)");
    cmd->add_option("--vocab", args->request.vocab, "vocabulary size (default: the config's corpus)");
    cmd->add_option("--repeats", bench.repeats, "timed repetitions; figures are their median (default 7)");
    cmd->add_option("--steps", bench.steps_per_repeat, "training steps per repetition (default 10)");
    cmd->add_option("--sample-chars", bench.sample_chars, "characters per sampling repetition (default 256)");
    cmd->add_option("--sample-threads", bench.sample_threads, "threads while sampling (default 1)");
    cmd->add_flag("--json", args->request.json, "print one JSON object");
    cmd->add_flag("--profile", bench.profile,
                  "after the timed steps, time every kernel of --steps more steps and print where a step's time goes");
    add_engine_options(cmd, *engine);
    cmd->footer(
        "Training steps are the trainer's own (forward, backward, clipping, AdamW) on random ids, after\n"
        "warm-up steps. FLOPs per token count the matrix products of forward + backward:\n"
        "6·(12·L·D² + D·V) + 12·L·T·D (PaLM appendix B; nanoGPT's estimate_mfu). The GEMM peak is\n"
        "the model's own matmul shapes through the same backend, measured in the same run.\n"
        "Under mpirun (mpirun -np N tinyformer bench), the N processes take data-parallel steps, each its\n"
        "share of the batch; tokens/s count them all, and the gradient exchange's share of a step is shown.");
    return [cmd, args, engine]() -> int {
        if (!cmd->parsed()) return -1;
        // Under mpirun, the processes time data-parallel steps together; rank 0 reports.
        const Launch launch = launch_from_environment();
        init_process_group();
        run_on_every_rank([&] {
            if (args->config.empty()) args->config = default_bench_config();
            args->request.config = load_config(args->config, args->overrides, /*check_files=*/false);
            apply_engine_options(*engine, static_cast<int>(args->request.config.train.threads), launch.local_size);
        });
        print_bench(args->request);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
