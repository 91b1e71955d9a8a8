// tinyformer eval --checkpoint PATH [--text FILE] [--probes FILE] [--batches N [--batch-size B] [--seed S]] [--json]
#include <memory>

#include "commands.hpp"
#include "tinyformer/train/evaluate.hpp"

namespace tinyformer::cli {

Runner add_eval(CLI::App& app) {
    auto request = std::make_shared<EvalRequest>();
    auto engine = std::make_shared<EngineOptions>();
    auto* cmd = app.add_subcommand("eval", "Score a checkpoint: loss, bits per character, perplexity, probes.");
    cmd->add_option("--checkpoint", request->checkpoint, "a .safetensors file or a run directory")->required();
    cmd->add_option("--text", request->text, "text to score (default: the validation text of the checkpoint's config)");
    cmd->add_option("--probes", request->probes, "prompt<TAB>answer file (default: the config's data.probes_path)");
    cmd->add_option("--batches", request->batches,
                    "score this many batches of random windows instead of the whole text (as train.eval_batches)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--batch-size", request->batch_size, "windows per batch with --batches")
        ->check(CLI::PositiveNumber)
        ->default_val(32);
    cmd->add_option("--seed", request->seed, "the windows' seed with --batches")
        ->check(CLI::NonNegativeNumber)
        ->default_val(1337);
    cmd->add_flag("--json", request->json, "print one JSON object");
    cmd->footer("The text is cut into consecutive windows ids[k*T : k*T+T+1], as scripts/torch_reference.py eval does.");
    add_engine_options(cmd, *engine);
    return [cmd, request, engine]() -> int {
        if (!cmd->parsed()) return -1;
        apply_engine_options(*engine);
        evaluate_checkpoint(*request);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
