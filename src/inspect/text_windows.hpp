// The windows a text is cut into for scoring, exactly as score_text (evaluate.cpp) and
// scripts/torch_reference.py eval cut it: inputs ids[k*T : k*T+len], targets one
// further, len = min(T, n - 1 - k*T), every window predicting at least one character.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

struct TextWindow {
    int64_t start = 0, length = 0;
};

inline std::vector<TextWindow> text_windows(int64_t n, int64_t T) {
    std::vector<TextWindow> windows;
    for (int64_t start = 0; start < n - 1; start += T) windows.push_back({start, std::min(T, n - 1 - start)});
    return windows;
}

// Windows of equal length in batches of at most 32: the inputs [B,len] and targets [B,len].
struct WindowBatch {
    std::vector<TextWindow> windows;
    Tensor inputs, targets;
};

inline std::vector<WindowBatch> window_batches(const std::vector<int32_t>& ids, int64_t T) {
    std::vector<WindowBatch> batches;
    for (const TextWindow& w : text_windows(static_cast<int64_t>(ids.size()), T)) {
        if (batches.empty() || batches.back().windows.size() == 32 || batches.back().windows[0].length != w.length)
            batches.emplace_back();
        batches.back().windows.push_back(w);
    }
    for (WindowBatch& batch : batches) {
        const int64_t B = static_cast<int64_t>(batch.windows.size()), len = batch.windows[0].length;
        std::vector<int32_t> inputs, targets;
        for (const TextWindow& w : batch.windows) {
            inputs.insert(inputs.end(), ids.begin() + w.start, ids.begin() + w.start + len);
            targets.insert(targets.end(), ids.begin() + w.start + 1, ids.begin() + w.start + len + 1);
        }
        batch.inputs = Tensor::ids(inputs, {B, len});
        batch.targets = Tensor::ids(targets, {B, len});
    }
    return batches;
}

}  // namespace tinyformer
