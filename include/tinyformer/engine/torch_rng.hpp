// PyTorch's CPU random generator, reproduced draw for draw.
//
// torch.manual_seed(s) seeds a 32-bit Mersenne Twister (mt19937) with s, and each of
// torch's random kernels turns the twister's 32-bit outputs into numbers in its own fixed
// way. With `[train] rng = "torch"`, tinyformer draws its initial weights and its batch
// windows through this class, in the order scripts/torch_reference.py train draws
// them, so that the two engines run the same experiment for the same seed: same initial
// weights, same batches. (tinyformer's own generator, rng.hpp, is the default.)
//
// What torch 1.13 does on the CPU, and so what this does, for float32 tensors:
//   uniform_(from, to)  each value: 24 bits of one 32-bit output, x = bits / 2^24, then
//                        x * (to - from) + from, in double, rounded to float;
//   normal_(mean, std)   16 or more values: all of them drawn as uniform_(0, 1) first, then
//                        Box–Muller on blocks of 16 (u1 = value j, u2 = value j+8); when the
//                        size is not a multiple of 16 the last 16 values are drawn again and
//                        transformed again. Fewer than 16: one double normal at a time from
//                        two 53-bit uniforms, the sine half kept for the next value;
//   randint(high)        one 32-bit output modulo high (high < 2^32).
// Every number is bit-identical to torch's except the normals of 16 or more values: torch
// takes their logarithms, sines and cosines from AVX polynomials (avx_mathfun.h), this from
// libm, so they agree to a few float roundings (≤ 1.4e-6 for N(0, 1) draws).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace tinyformer {

class TorchRng {
public:
    explicit TorchRng(uint64_t seed);  // torch.manual_seed(seed)

    void uniform(float* values, int64_t n, double from, double to);  // tensor.uniform_(from, to)
    void normal(float* values, int64_t n, double mean, double std);  // tensor.normal_(mean, std)
    int64_t randint(int64_t high);                                   // torch.randint(high, ()): [0, high)

    // The whole generator state as text (the twister's 624 words and position, and the
    // cached normal), so that a resumed run continues the same stream.
    std::string state() const;
    void set_state(const std::string& text);  // throws std::invalid_argument on malformed text

private:
    uint64_t random64();   // two outputs, the first in the high half
    double uniform53();    // [0, 1) from 53 bits, as torch's double uniform

    std::mt19937 engine_;
    std::optional<double> next_double_normal_;  // the sine half of the last double Box–Muller pair
};

}  // namespace tinyformer
