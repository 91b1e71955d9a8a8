// One `tinyformer inspect` (run_inspect.hpp), a step per function, in the order they run:
// the probes, the text whose maps are drawn, the validation text, the measurements, the
// files, the printed summary. What the report says about its sources gathers in a
// ReportContext along the way.
#include "tinyformer/inspect/run_inspect.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <vector>

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
#include "tinyformer/support/atomic_write.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/utf8.hpp"

namespace fs = std::filesystem;

namespace tinyformer {

namespace {

// Everything inspect measures.
struct Measurements {
    AttentionMaps maps;                       // every head's weights on the shown text
    InspectResult inspected;                  // reading patterns, answer sources, ablations, a sentence per head
    Circuits circuits;                        // the weights alone
    VocabularyGroups groups;                  // the vocabulary grouped by role, from the probes
    Patching patching;                        // activation and path patching (none without probes)
    std::vector<std::string> patching_lines;  // what the patching found
};

// The probes: every one counts in the statistics.
std::vector<Probe> read_probes(const InspectRequest& request, ReportContext& report) {
    report.probes_name = request.probes.empty() ? request.data.probes_path : request.probes;
    if (report.probes_name.empty()) return {};
    if (request.probes.empty() && !fs::exists(report.probes_name)) {
        spdlog::warn("the config's probes {} are gone: no answer sources or probe ablations", report.probes_name);
        return {};
    }
    std::vector<Probe> probes = load_probes(report.probes_name);
    if (probes.empty()) throw InputError(report.probes_name + ": no probes, expected prompt<TAB>answer lines");
    for (const Probe& probe : probes) request.vocab.encode(probe.prompt + probe.answer, report.probes_name);
    return probes;
}

// The text whose maps are drawn: --text, else the first probe's prompt + answer; at most a context's worth.
std::u32string shown_text(const InspectRequest& request, const std::vector<Probe>& probes, ReportContext& report) {
    std::u32string shown;
    if (request.text) {
        shown = decode_utf8(*request.text, "--text");
        report.maps_source = "--text";
        if (shown.empty()) throw InputError("--text: empty, expected at least one character");
    } else if (probes.empty()) {  // --probes '' and the config's probes are none, or gone
        throw InputError("inspect: no --text, and no probes to show the first of; give --text TEXT or --probes FILE");
    } else {
        shown = probes.front().prompt + probes.front().answer;
        report.maps_source = "probe 1 of " + std::to_string(probes.size()) + " (" + report.probes_name +
                             ", prompt + answer)";
    }
    request.vocab.encode(shown, report.maps_source);  // a character outside the vocabulary: exit 2, named
    const int64_t context = request.model.config().context;
    if (static_cast<int64_t>(shown.size()) > context) {
        const std::string note = report.maps_source + " has " + std::to_string(shown.size()) +
                                 " characters; the maps show the first " + std::to_string(context) +
                                 " (the model's context)";
        spdlog::warn("{}", note);
        report.notes.push_back(note);
        shown.resize(context);
    }
    return shown;
}

// The validation text, for reading patterns and losses: none when the config names no
// corpus or it cannot be read.
std::vector<int32_t> validation_ids(const InspectRequest& request, ReportContext& report) {
    const DataConfig& data = request.data;
    if (!data.has_corpus()) return {};
    report.text_name = data.validation_name();
    Corpus corpus;
    try {
        DataConfig text_only = data;
        text_only.probes_path.clear();
        corpus = load_corpus(text_only, true);
    } catch (const InputError& e) {
        const std::string note = std::string("no validation text (") + e.what() +
                                 "): no reading patterns, losses or mean ablation";
        spdlog::warn("{}", note);
        report.notes.push_back(note);
        return {};
    }
    if (corpus.vocab.chars() != request.vocab.chars())
        throw InputError(report.text_name + ": its corpus no longer has the checkpoint's vocabulary");
    // A large text: its first kMaxMeasuredWindows windows (the lesson's has 75).
    const int64_t kept = measured_length(corpus.val.size(), request.model.config().context);
    std::vector<int32_t> val_ids = corpus.val.slice(0, kept);
    if (kept < corpus.val.size()) {
        const std::string note = "reading patterns, losses and mean ablation use the first " + std::to_string(kept) +
                                 " of the validation text's " + std::to_string(corpus.val.size()) + " characters";
        spdlog::info("{}", note);
        report.notes.push_back(note);
    }
    return val_ids;
}

// The maps on the shown text, every head measured over the validation text and the probes,
// the weights read, and the probes patched.
Measurements measure(const InspectRequest& request, const std::u32string& shown, const std::vector<int32_t>& val_ids,
                     const std::vector<Probe>& probes, ReportContext& report) {
    const Transformer& model = request.model;
    Measurements measured;
    measured.maps = capture_attention(model, request.vocab, shown, report.maps_source);
    if (std::string fault = check_attention(measured.maps); !fault.empty()) throw std::runtime_error(fault);
    spdlog::info("measuring {} heads over {} validation characters and {} probes",
                 measured.maps.layers * measured.maps.heads, val_ids.size(), probes.size());
    measured.inspected = inspect_heads(model, request.vocab, val_ids, probes);
    // The weights alone: needs no text and no probes (the probes only group the vocabulary).
    measured.circuits = compute_circuits(model);
    measured.groups = group_vocabulary(request.vocab, probes);
    // What causes each answer: activation and path patching over the probes' twins.
    if (probes.empty()) {
        const std::string note = "no probes: no activation patching (give --probes FILE); the weight-only circuits "
                                 "need none";
        spdlog::warn("{}", note);
        report.notes.push_back(note);
    } else {
        measured.patching = activation_patching(model, request.vocab, probes);
        measured.patching_lines =
            patching_findings(measured.patching, measured.inspected, measured.circuits, model.config().n_heads);
    }
    return measured;
}

// The run directory's loss curve and metrics, when the checkpoint sits in one.
void read_run_history(const fs::path& run_dir, ReportContext& report) {
    const fs::path loss_svg = run_dir / "loss.svg";
    if (fs::exists(loss_svg)) {
        const std::string svg = read_file(loss_svg.string());
        if (size_t start = svg.find("<svg"); start != std::string::npos) report.loss_svg = svg.substr(start);
    }
    report.metrics = read_metrics_rows((run_dir / "metrics.jsonl").string());  // roles over training
}

// attention.json, attention.npy and one heatmap per head.
void write_attention_files(const fs::path& out, const AttentionMaps& maps, const std::string& source) {
    const int64_t T = maps.length();
    write_file_atomic((out / "attention.json").string(), attention_json(maps, source).dump() + "\n");
    write_file_atomic((out / "attention.npy").string(), npy_bytes(maps.weights, {maps.layers, maps.heads, T, T}));
    for (int64_t l = 0; l < maps.layers; ++l)
        for (int64_t h = 0; h < maps.heads; ++h) {
            const std::string name = "L" + std::to_string(l) + "H" + std::to_string(h);
            const std::string title = name + ": layer " + std::to_string(l) + ", head " + std::to_string(h);
            write_file_atomic((out / (name + ".svg")).string(),
                              attention_heatmap_svg(maps.text, maps.map(l, h), title));
        }
}

// Each head's weight, OV and QK pictures, and circuits.json (with the patching, when there are probes).
void write_circuit_files(const fs::path& out, const Measurements& measured, const Vocabulary& vocab,
                         const std::vector<Probe>& probes, const ReportContext& report) {
    const Circuits& circuits = measured.circuits;
    const VocabularyGroups& groups = measured.groups;
    const CircuitScales scales = circuit_scales(circuits);
    for (const HeadCircuits& head : circuits.heads) {
        const std::string name = head_label(head.weights.layer, head.weights.head);
        write_file_atomic((out / (name + "_weights.svg")).string(), head_weights_svg(head, scales));
        write_file_atomic((out / (name + "_ov.svg")).string(), circuit_svg(head, false, vocab, groups, scales));
        write_file_atomic((out / (name + "_qk.svg")).string(), circuit_svg(head, true, vocab, groups, scales));
    }
    nlohmann::json circuits_file = circuits_json(circuits, vocab, groups, report);
    add_patching_json(circuits_file, probes.empty() ? nullptr : &measured.patching, vocab, probes,
                      measured.patching_lines, report.model.n_layers, report.model.n_heads);
    write_file_atomic((out / "circuits.json").string(), circuits_file.dump(2) + "\n");
}

// Every file, the report last.
void write_files(const fs::path& out, const Measurements& measured, const Vocabulary& vocab,
                 const std::vector<Probe>& probes, const ReportContext& report) {
    write_attention_files(out, measured.maps, report.maps_source);
    write_file_atomic((out / "heads.json").string(), heads_json(measured.inspected, report).dump(2) + "\n");
    write_circuit_files(out, measured, vocab, probes, report);
    const std::string patching_section =
        probes.empty() ? std::string()
                       : patching_html(measured.patching, measured.inspected, vocab, measured.patching_lines,
                                       report.model.n_layers, report.model.n_heads);
    write_file_atomic((out / "report.html").string(),
                      report_html(measured.maps, measured.inspected, report,
                                  circuits_html(measured.circuits, vocab, measured.groups) + patching_section));
}

// On stdout: the maps (--view terminal), a sentence per head, the circuits' and the
// patching's summaries, and where the files went.
void print_summary(const InspectRequest& request, const Measurements& measured, bool has_probes, const fs::path& out) {
    if (request.terminal_view) std::fputs(terminal_view(measured.maps).c_str(), stdout);
    for (const HeadReport& head : measured.inspected.heads) std::printf("%s\n", head.finding.c_str());
    std::printf("%s\n", circuits_summary(measured.circuits).c_str());
    const int64_t H = request.model.config().n_heads;
    if (has_probes) std::printf("%s\n", patching_summary(measured.patching, measured.patching_lines, H).c_str());
    std::printf("wrote %s/{report.html, heads.json, circuits.json, attention.json, attention.npy, L*H*.svg, "
                "L*H*_{weights,ov,qk}.svg}\n",
                out.string().c_str());
}

}  // namespace

void run_inspect(const InspectRequest& request) {
    ReportContext report;
    report.checkpoint = request.checkpoint;
    report.step = request.step;
    report.model = request.model.config();
    const std::vector<Probe> probes = read_probes(request, report);
    const std::u32string shown = shown_text(request, probes, report);
    const std::vector<int32_t> val_ids = validation_ids(request, report);
    const Measurements measured = measure(request, shown, val_ids, probes, report);

    const fs::path out = request.out.empty() ? fs::path(request.run_dir) / "inspect" : fs::path(request.out);
    fs::create_directories(out);
    read_run_history(request.run_dir, report);
    write_files(out, measured, request.vocab, probes, report);
    print_summary(request, measured, !probes.empty(), out);
}

}  // namespace tinyformer
