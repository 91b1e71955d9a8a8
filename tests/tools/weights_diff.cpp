// weights_diff A.safetensors B.safetensors: how far apart two checkpoints' tensors are, for the
// tests and scripts that compare runs (tests/cli/test_distributed.sh). Prints one line:
//   tensors 12 max_abs 3.1e-08 max_rel 2.4e-06 rel_norm 4.0e-07 identical false
//   max_abs   the largest |a - b| over all elements
//   max_rel   the largest |a - b| / max(|a|, |b|) over the elements where either is at least
//             1e-3 in magnitude (below that an element's relative difference says nothing)
//   rel_norm  the largest ‖a - b‖ / ‖a‖ over the tensors (2-norms): "equal to 1e-5 relative"
// Exit 2 when the files hold different tensor names or shapes, or cannot be read.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "tinyformer/engine/safetensors.hpp"

int main(int argc, char** argv) {
    using namespace tinyformer;
    if (argc != 3) {
        std::fprintf(stderr, "usage: weights_diff A.safetensors B.safetensors\n");
        return 2;
    }
    try {
        const SafetensorsFile a = read_safetensors(argv[1]), b = read_safetensors(argv[2]);
        std::map<std::string, Tensor> by_name(b.tensors.begin(), b.tensors.end());
        if (a.tensors.size() != b.tensors.size()) {
            std::fprintf(stderr, "weights_diff: %zu tensors against %zu\n", a.tensors.size(), b.tensors.size());
            return 2;
        }
        double max_abs = 0, max_rel = 0, rel_norm = 0;
        bool identical = true;
        for (const auto& [name, ta] : a.tensors) {
            auto it = by_name.find(name);
            if (it == by_name.end() || it->second.shape() != ta.shape()) {
                std::fprintf(stderr, "weights_diff: %s is missing from %s or has another shape\n", name.c_str(), argv[2]);
                return 2;
            }
            const float* x = ta.data<float>();
            const float* y = it->second.data<float>();
            const int64_t n = ta.numel();
            if (std::memcmp(x, y, static_cast<size_t>(n) * sizeof(float)) != 0) identical = false;
            double difference_squares = 0, squares = 0;
            for (int64_t i = 0; i < n; ++i) {
                const double difference = std::fabs(static_cast<double>(x[i]) - y[i]);
                difference_squares += difference * difference;
                squares += static_cast<double>(x[i]) * x[i];
                const double size = std::max(std::fabs(static_cast<double>(x[i])), std::fabs(static_cast<double>(y[i])));
                max_abs = std::max(max_abs, difference);
                if (size >= 1e-3) max_rel = std::max(max_rel, difference / size);
            }
            if (squares > 0) rel_norm = std::max(rel_norm, std::sqrt(difference_squares / squares));
            else if (difference_squares > 0) rel_norm = INFINITY;
        }
        std::printf("tensors %zu max_abs %.3g max_rel %.3g rel_norm %.3g identical %s\n", a.tensors.size(), max_abs,
                    max_rel, rel_norm, identical ? "true" : "false");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "weights_diff: %s\n", e.what());
        return 2;
    }
}
