// tinyformer inspect --checkpoint PATH [--text TEXT] [--probes FILE] [--out DIR] [--view terminal]
//
// Where does each trained head read? Runs the model on the text (or on the first probe's
// prompt + answer; given neither, the probes the run's config names), keeps every head's
// attention, measures every head over the validation text and the probes (reading
// patterns, answer sources, ablations), reads the weights themselves (circuits through
// the vocabulary, composition between layers), and writes
// attention.json, attention.npy, L{l}H{h}.svg, heads.json, circuits.json,
// L{l}H{h}_{weights,ov,qk}.svg and report.html to DIR. Here: the options and the checkpoint;
// the rest is run_inspect (tinyformer/inspect/run_inspect.hpp).
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "tinyformer/inspect/run_inspect.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer::cli {

Runner add_inspect(CLI::App& app) {
    struct Args {
        std::string checkpoint, text, probes, out, view;
    };
    auto args = std::make_shared<Args>();
    auto engine = std::make_shared<EngineOptions>();
    auto* cmd = app.add_subcommand("inspect", "Where does each trained head read? Attention maps, head roles, "
                                              "ablations, weight-only circuits and a report.");
    cmd->add_option("--checkpoint", args->checkpoint, "a .safetensors file or a run directory")->required();
    auto* text = cmd->add_option("--text", args->text,
                                 "the text whose attention maps to draw (its first `context` characters)");
    auto* probes = cmd->add_option("--probes", args->probes,
                                   "prompt<TAB>answer file: the answer-source, ablation and patching probes (default: "
                                   "the config's); without --text the maps show its first probe");
    cmd->add_option("--out", args->out, "output directory (default: <run dir>/inspect)");
    cmd->add_option("--view", args->view, "also print the maps: terminal")->check(CLI::IsMember({"terminal"}));
    cmd->footer("Role scores and ablation losses use the validation text of the checkpoint's config; probe "
                "statistics use every probe. Writes attention.json, attention.npy ([L,H,T,T] float32), "
                "L{l}H{h}.svg, heads.json, circuits.json (weight-only circuits, composition scores and, with probes, "
                "activation and path patching), "
                "L{l}H{h}_weights.svg, L{l}H{h}_ov.svg, L{l}H{h}_qk.svg and report.html.");
    add_engine_options(cmd, *engine);
    return [cmd, args, engine, text, probes]() -> int {
        if (!cmd->parsed()) return -1;
        apply_engine_options(*engine);
        const LoadedModel loaded = load_model(args->checkpoint);
        if (text->count() == 0 && probes->count() == 0) {  // the run's own probes, which its config names
            const std::string& own = loaded.config.data.probes_path;
            if (own.empty())
                throw InputError("inspect: " + loaded.path +
                                 "'s config names no probes; give --text TEXT or --probes FILE (the text whose "
                                 "attention to show)");
            if (const std::string missing = missing_data_file(loaded, DataFiles::probes); !missing.empty())
                throw InputError(missing + "; give the probes with --probes FILE, or a text with --text TEXT");
            spdlog::info("no --text or --probes: the run's own probes, {} (data.probes_path of its config)", own);
        }
        run_inspect({.model = *loaded.model,
                     .vocab = loaded.vocab,
                     .data = loaded.config.data,
                     .checkpoint = loaded.path,
                     .run_dir = loaded.run_dir,
                     .step = loaded.step,
                     .text = text->count() > 0 ? std::optional(args->text) : std::nullopt,
                     .probes = args->probes,
                     .out = args->out,
                     .terminal_view = args->view == "terminal"});
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
