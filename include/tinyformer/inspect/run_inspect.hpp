// One `tinyformer inspect`, from a loaded checkpoint to its files and printed summary: the
// probes, the text whose maps are drawn, the validation text, every head measured
// (inspect.hpp), the weights read (circuits.hpp), the probes patched (patching.hpp), then the
// files of inspect_report.hpp and circuits_report.hpp written to one directory. The command
// line (src/cli/inspect.cpp) loads the checkpoint and hands over its pieces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tinyformer/data/data_config.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// A loaded checkpoint, and what to show of it.
struct InspectRequest {
    const Transformer& model;
    const Vocabulary& vocab;
    const DataConfig& data;           // the checkpoint's config: its validation text and probes
    std::string checkpoint;           // the .safetensors file read
    std::string run_dir;              // its directory: loss.svg, metrics.jsonl, the default output
    int64_t step = 0;                 // the optimizer step the weights belong to
    std::optional<std::string> text;  // --text: the text whose maps are drawn (none: the first probe's)
    std::string probes;               // --probes: a prompt<TAB>answer file (empty: the config's)
    std::string out;                  // the output directory (empty: <run_dir>/inspect)
    bool terminal_view = false;       // --view terminal: also print the maps
};

// Measures, writes attention.json, attention.npy, L{l}H{h}.svg, heads.json, circuits.json,
// L{l}H{h}_{weights,ov,qk}.svg and report.html, and prints a sentence per head, the circuits'
// and the patching's summaries and where the files went. Throws InputError for input it
// cannot use (an empty probes file, a character outside the vocabulary, ...).
void run_inspect(const InspectRequest& request);

}  // namespace tinyformer
