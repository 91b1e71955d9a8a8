// Where a training step's time goes: ProfileScope wraps the current backend in one that
// times every kernel call, per kernel and shape, until the scope ends. Used by
// `tinyformer bench --profile`; see src/backends/profiling.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/engine/backend.hpp"

namespace tinyformer {

struct Profile {
    struct Entry {
        std::string kernel;  // "gemm 768×128 @ 128×512ᵀ", "gelu_forward [12,64,512]", ...
        int64_t calls = 0;
        double seconds = 0;
        double bytes = 0;  // the bytes its arguments hold, added up over its calls (0: not counted)
    };
    std::vector<Entry> entries;  // in order of first call

    void add(const std::string& kernel, double seconds, double bytes = 0);
    double kernel_seconds() const;  // all entries together
};

class ProfileScope {
public:
    explicit ProfileScope(Profile& profile);
    ~ProfileScope();
    ProfileScope(const ProfileScope&) = delete;
    ProfileScope& operator=(const ProfileScope&) = delete;
};

}  // namespace tinyformer
