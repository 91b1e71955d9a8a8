// tinyformer sample --checkpoint PATH [--prompt TEXT] [--max-new N] [--temperature T]
//                   [--top-k K] [--top-p P] [--seed S] [--num-samples N] [--stop TEXT]
//                   [--cache window|rolling]
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer::cli {

constexpr int64_t kMaxSampleChars = 10'000'000;  // --max-new at most

Runner add_sample(CLI::App& app) {
    struct Args {
        std::string checkpoint, prompt = "\n", stop, cache = "window";
        int64_t max_new = 200, top_k = 0, num_samples = 1;
        double temperature = 1.0, top_p = 1.0;
        uint64_t seed = 1;
    };
    auto args = std::make_shared<Args>();
    auto engine = std::make_shared<EngineOptions>();
    auto* cmd = app.add_subcommand("sample", "Generate text from a checkpoint (with a key/value cache).");
    cmd->add_option("--checkpoint", args->checkpoint, "a .safetensors file or a run directory")->required();
    cmd->add_option("--prompt", args->prompt, "the text to continue (default: a newline)");
    cmd->add_option("--max-new", args->max_new, "characters to generate at most (default 200)");
    cmd->add_option("--temperature", args->temperature, "0 = greedy; higher = more random (default 1)");
    cmd->add_option("--top-k", args->top_k, "keep only the K most likely characters (1..V; default all)");
    cmd->add_option("--top-p", args->top_p, "keep the smallest set of characters whose probability reaches P, in (0,1]");
    cmd->add_option("--seed", args->seed, "random seed (default 1)");
    cmd->add_option("--num-samples", args->num_samples, "how many samples (default 1)");
    cmd->add_option("--stop", args->stop, "stop a sample after this text, e.g. 。 or a newline");
    cmd->add_option("--cache", args->cache,
                    "past the context: window (default; each new character reads the last `context` characters, "
                    "recomputed, as PyTorch and nanoGPT do) or rolling (faster: the cache keeps going and the oldest "
                    "position drops out; rope models only)")
        ->check(CLI::IsMember({"window", "rolling"}));
    add_engine_options(cmd, *engine);
    return [cmd, args, engine]() -> int {
        if (!cmd->parsed()) return -1;
        apply_engine_options(*engine);
        LoadedModel loaded = load_model(args->checkpoint);
        if (args->num_samples < 1) throw InputError("--num-samples: expected at least 1");
        SampleOptions options;
        options.max_new = args->max_new;
        options.temperature = args->temperature;
        options.top_k = args->top_k;
        options.top_p = args->top_p;
        options.cache = args->cache == "rolling" ? KvCache::rolling : KvCache::window;
        if (options.cache == KvCache::rolling && loaded.config.model.positions != "rope")
            throw InputError("--cache rolling: the model has learned positions, which end at the context; expected "
                             "a rope model, or --cache window");
        if (std::string problem = sample_options_problem(options, loaded.vocab.size(), kMaxSampleChars);
            !problem.empty())
            throw InputError(problem);
        options.stop = decode_utf8(args->stop, "--stop");
        const std::u32string prompt = decode_utf8(args->prompt, "--prompt");
        if (prompt.empty()) throw InputError("--prompt: empty, expected at least one character to continue");
        loaded.vocab.encode(prompt, "--prompt");  // unknown characters: an error before any output
        Rng rng(args->seed);
        Decoder decoder(*loaded.model);  // one for every sample
        for (int64_t i = 0; i < args->num_samples; ++i) {
            if (args->num_samples > 1) std::printf("--- sample %lld ---\n", static_cast<long long>(i + 1));
            std::fputs(args->prompt.c_str(), stdout);
            generate(decoder, loaded.vocab, prompt, options, rng, [](char32_t c) {
                std::fputs(encode_utf8(c).c_str(), stdout);
                std::fflush(stdout);
            });
            std::printf("\n");
        }
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
