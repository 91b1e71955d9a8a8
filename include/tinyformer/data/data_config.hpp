// Where a run's text comes from: the [data] section of a run's config (train/config.hpp
// reads and checks it; data/dataset.hpp loads what it names).
#pragma once

#include <string>

namespace tinyformer {

struct DataConfig {
    std::string path;          // one text, split: the last val_fraction is validation
    std::string train_path;    // or two texts (then `path` must be empty)
    std::string val_path;
    std::string prepared;      // or a directory `tinyformer prepare` wrote: ids read from the files
    std::string probes_path;   // optional: prompt<TAB>answer lines, scored by greedy decoding
    double val_fraction = 0.1; // in (0, 1), used with `path`

    bool has_corpus() const { return !path.empty() || !val_path.empty() || !prepared.empty(); }
    // The validation text's name in messages: "big.txt (validation part)", "val.txt", "DIR/val.bin".
    std::string validation_name() const;
};

}  // namespace tinyformer
