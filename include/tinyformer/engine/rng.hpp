// A small, portable random generator (xoshiro256**, seeded by SplitMix64). The standard
// library's distributions differ between implementations; ours give the same numbers on
// every machine, which the determinism promise needs.
#pragma once

#include <cstdint>

namespace tinyformer {

class Rng {
public:
    explicit Rng(uint64_t seed = 0);
    uint64_t next_u64();
    double uniform();                          // [0, 1)
    double normal(double mean = 0, double std = 1);  // Box–Muller
    uint64_t below(uint64_t n);                // uniform integer in [0, n)

    uint64_t state[4];  // public so that a checkpoint can save and restore it
};

}  // namespace tinyformer
