// A prepared corpus: its ids written once by `tinyformer prepare`, at the narrowest width the
// vocabulary allows, for `train` to read a window at a time (data.prepared = "DIR") instead of reading
// and encoding the text each time — as nanoGPT's prepare.py writes train.bin, val.bin and
// meta.pkl.
//
//   DIR/meta.json   {"format": "tinyformer-prepared/1", "vocab": ["\n", " ", "!", ...],
//                    "id_bytes": 1, "dtype": "uint8", "header_bytes": 64,
//                    "train": {"file": "train.bin", "ids": 1003854}, "val": {...},
//                    "fingerprint": "…16 hex digits…", "source": {...the texts...}}
//   DIR/train.bin   a 64-byte header, then the training ids, little-endian
//   DIR/val.bin     the same for the validation ids
//
// The header (so that a file is never read with another file's vocabulary or length):
//   bytes  0–7    "TFIDS001"
//          8–11   id bytes (1 or 2), uint32 little-endian
//         12–15   vocabulary size, uint32
//         16–23   number of ids, uint64
//         24–39   the corpus fingerprint, 16 hex digits (dataset.hpp: the same value the
//                 text gives, so a run resumes on prepared ids of the text it started on)
//         40–47   "train" or "val", zero-padded
//         48–63   zero
// In numpy: np.memmap("DIR/train.bin", dtype=np.uint8, mode="r", offset=64).
#pragma once

#include <cstdint>
#include <string>

#include "tinyformer/data/data_config.hpp"
#include "tinyformer/data/dataset.hpp"

namespace tinyformer {

inline constexpr int64_t kPreparedHeaderBytes = 64;

struct PreparedSummary {
    int64_t text_bytes = 0;
    int64_t train_ids = 0, val_ids = 0;
    int64_t vocab_size = 0;
    int id_bytes = 1;
    std::string fingerprint;
};

// Reads `data`'s texts (data.path split by data.val_fraction, or data.train_path and
// data.val_path) and writes DIR. Each file is written beside its final name and renamed
// into place, meta.json last, so a prepare that is stopped leaves no DIR that loads.
PreparedSummary prepare_corpus(const DataConfig& data, const std::string& dir, bool progress_bar);

// The corpus of a prepared DIR, its ids read from the files as windows are asked for. Throws InputError naming the file
// and what is wrong: no meta.json, a bad key in it, a .bin file truncated or too long, or
// written for another corpus or vocabulary.
Corpus load_prepared(const std::string& dir);

}  // namespace tinyformer
