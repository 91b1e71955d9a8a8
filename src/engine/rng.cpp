#include "tinyformer/engine/rng.hpp"

#include <cmath>

namespace tinyformer {

static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

Rng::Rng(uint64_t seed) {
    for (uint64_t& word : state) word = splitmix64(seed);
}

uint64_t Rng::next_u64() {
    uint64_t result = rotl(state[1] * 5, 7) * 9, t = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 45);
    return result;
}

double Rng::uniform() { return (next_u64() >> 11) * 0x1.0p-53; }

double Rng::normal(double mean, double std) {
    double u1 = 1.0 - uniform();  // (0, 1]: log is finite
    double u2 = uniform();
    return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

uint64_t Rng::below(uint64_t n) {
    // Rejection sampling: no modulo bias.
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = next_u64(); while (x >= limit);
    return x % n;
}

}  // namespace tinyformer
