// tinyformer inspect --checkpoint PATH (--text TEXT | --probes FILE) [--out DIR] [--view terminal]
//
// Where does each trained head read? Runs the model on the text (or on the first probe's
// prompt + answer), keeps every head's attention, measures every head over the validation
// text and the probes (reading patterns, answer sources, ablations), reads the weights
// themselves (circuits through the vocabulary, composition between layers), and writes
// attention.json, attention.npy, L{l}H{h}.svg, heads.json, circuits.json,
// L{l}H{h}_{weights,ov,qk}.svg and report.html to DIR.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.hpp"
#include "tinyformer/data/dataset.hpp"
#include "tinyformer/inspect/circuits.hpp"
#include "tinyformer/inspect/circuits_report.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/inspect/inspect_report.hpp"
#include "tinyformer/inspect/npy.hpp"
#include "tinyformer/inspect/patching.hpp"
#include "tinyformer/inspect/patching_report.hpp"
#include "tinyformer/inspect/training_roles.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace fs = std::filesystem;

namespace tinyformer::cli {

// The validation windows inspect reads, at most: enough for stable averages, and minutes,
// not hours, on a gigabyte's validation text.
constexpr int64_t kMaxTextWindows = 512;

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
        if (text->count() == 0 && probes->count() == 0)
            throw InputError("inspect: give --text TEXT or --probes FILE (the text whose attention to show)");
        apply_engine_options(*engine);
        LoadedModel loaded = load_model(args->checkpoint);
        const Transformer& model = *loaded.model;
        const int64_t context = model.config().context;
        const DataConfig& data = loaded.config.data;
        ReportContext report;
        report.checkpoint = loaded.path;
        report.step = loaded.step;
        report.model = model.config();

        // The probes: every one counts in the statistics.
        std::vector<Probe> probe_list;
        report.probes_name = args->probes.empty() ? data.probes_path : args->probes;
        if (!report.probes_name.empty()) {
            if (args->probes.empty() && !fs::exists(report.probes_name)) {
                spdlog::warn("the config's probes {} are gone: no answer sources or probe ablations", report.probes_name);
            } else {
                probe_list = load_probes(report.probes_name);
                if (probe_list.empty()) throw InputError(report.probes_name + ": no probes, expected prompt<TAB>answer lines");
                for (const Probe& probe : probe_list) loaded.vocab.encode(probe.prompt + probe.answer, report.probes_name);
            }
        }

        // The text whose maps are drawn.
        std::u32string shown;
        if (text->count() > 0) {
            shown = decode_utf8(args->text, "--text");
            report.maps_source = "--text";
            if (shown.empty()) throw InputError("--text: empty, expected at least one character");
        } else {
            shown = probe_list.front().prompt + probe_list.front().answer;
            report.maps_source = "probe 1 of " + std::to_string(probe_list.size()) + " (" + report.probes_name +
                                 ", prompt + answer)";
        }
        loaded.vocab.encode(shown, report.maps_source);  // a character outside the vocabulary: exit 2, named
        if (static_cast<int64_t>(shown.size()) > context) {
            const std::string note = report.maps_source + " has " + std::to_string(shown.size()) +
                                     " characters; the maps show the first " + std::to_string(context) +
                                     " (the model's context)";
            spdlog::warn("{}", note);
            report.notes.push_back(note);
            shown.resize(context);
        }

        // The validation text, for reading patterns and losses.
        std::vector<int32_t> val_ids;
        if (data.has_corpus()) {
            report.text_name = data.validation_name();
            Corpus corpus;
            bool loaded_text = true;
            try {
                DataConfig text_only = data;
                text_only.probes_path.clear();
                corpus = load_corpus(text_only, true);
            } catch (const InputError& e) {
                loaded_text = false;
                const std::string note = std::string("no validation text (") + e.what() +
                                         "): no reading patterns, losses or mean ablation";
                spdlog::warn("{}", note);
                report.notes.push_back(note);
            }
            if (loaded_text) {
                if (corpus.vocab.chars() != loaded.vocab.chars())
                    throw InputError(report.text_name + ": its corpus no longer has the checkpoint's vocabulary");
                // A large text: its first kMaxTextWindows windows (the lesson's has 75).
                const int64_t kept = std::min(corpus.val.size(), kMaxTextWindows * context + 1);
                val_ids = corpus.val.slice(0, kept);
                if (kept < corpus.val.size()) {
                    const std::string note = "reading patterns, losses and mean ablation use the first " +
                                             std::to_string(kept) + " of the validation text's " +
                                             std::to_string(corpus.val.size()) + " characters";
                    spdlog::info("{}", note);
                    report.notes.push_back(note);
                }
            }
        }

        const AttentionMaps maps = capture_attention(model, loaded.vocab, shown, report.maps_source);
        if (std::string fault = check_attention(maps); !fault.empty()) throw std::runtime_error(fault);
        spdlog::info("measuring {} heads over {} validation characters and {} probes", maps.layers * maps.heads,
                     val_ids.size(), probe_list.size());
        const InspectResult result = inspect_heads(model, loaded.vocab, val_ids, probe_list);
        // The weights alone: needs no text and no probes (the probes only group the vocabulary).
        const Circuits circuits = compute_circuits(model);
        const VocabularyGroups groups = group_vocabulary(loaded.vocab, probe_list);
        // What causes each answer: activation and path patching over the probes' twins.
        const int64_t L = model.config().n_layers, H = model.config().n_heads;
        Patching patching;
        std::vector<std::string> patching_lines;
        if (probe_list.empty()) {
            const std::string note = "no probes: no activation patching (give --probes FILE); the weight-only circuits "
                                     "need none";
            spdlog::warn("{}", note);
            report.notes.push_back(note);
        } else {
            patching = activation_patching(model, loaded.vocab, probe_list);
            patching_lines = patching_findings(patching, result, circuits, H);
        }

        const fs::path out = args->out.empty() ? fs::path(loaded.run_dir) / "inspect" : fs::path(args->out);
        fs::create_directories(out);
        const fs::path loss_svg = fs::path(loaded.run_dir) / "loss.svg";
        if (fs::exists(loss_svg)) {
            const std::string svg = read_file(loss_svg.string());
            if (size_t start = svg.find("<svg"); start != std::string::npos) report.loss_svg = svg.substr(start);
        }
        report.metrics = read_metrics_rows((fs::path(loaded.run_dir) / "metrics.jsonl").string());  // roles over training
        const int64_t T = maps.length();
        write_file_atomic((out / "attention.json").string(), attention_json(maps, report.maps_source).dump() + "\n");
        write_file_atomic((out / "attention.npy").string(), npy_bytes(maps.weights, {maps.layers, maps.heads, T, T}));
        for (int64_t l = 0; l < maps.layers; ++l)
            for (int64_t h = 0; h < maps.heads; ++h) {
                const std::string name = "L" + std::to_string(l) + "H" + std::to_string(h);
                write_file_atomic((out / (name + ".svg")).string(),
                                  attention_heatmap_svg(maps.text, maps.map(l, h),
                                                        name + ": layer " + std::to_string(l) + ", head " + std::to_string(h)));
            }
        write_file_atomic((out / "heads.json").string(), heads_json(result, report).dump(2) + "\n");
        const CircuitScales scales = circuit_scales(circuits);
        for (const HeadCircuits& head : circuits.heads) {
            const std::string name = head_label(head.weights.layer, head.weights.head);
            write_file_atomic((out / (name + "_weights.svg")).string(), head_weights_svg(head, scales));
            write_file_atomic((out / (name + "_ov.svg")).string(), circuit_svg(head, false, loaded.vocab, groups, scales));
            write_file_atomic((out / (name + "_qk.svg")).string(), circuit_svg(head, true, loaded.vocab, groups, scales));
        }
        nlohmann::json circuits_file = circuits_json(circuits, loaded.vocab, groups, report);
        add_patching_json(circuits_file, probe_list.empty() ? nullptr : &patching, loaded.vocab, probe_list,
                          patching_lines, L, H);
        write_file_atomic((out / "circuits.json").string(), circuits_file.dump(2) + "\n");
        const std::string patching_section =
            probe_list.empty() ? std::string()
                               : patching_html(patching, result, loaded.vocab, patching_lines, L, H);
        write_file_atomic((out / "report.html").string(),
                          report_html(maps, result, report,
                                      circuits_html(circuits, loaded.vocab, groups) + patching_section));

        if (args->view == "terminal") std::fputs(terminal_view(maps).c_str(), stdout);
        for (const HeadReport& head : result.heads) std::printf("%s\n", head.finding.c_str());
        std::printf("%s\n", circuits_summary(circuits).c_str());
        if (!probe_list.empty()) std::printf("%s\n", patching_summary(patching, patching_lines, H).c_str());
        std::printf("wrote %s/{report.html, heads.json, circuits.json, attention.json, attention.npy, L*H*.svg, "
                    "L*H*_{weights,ov,qk}.svg}\n",
                    out.string().c_str());
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
