// exp(x) for float32 in plain arithmetic that the compiler vectorises (libm's expf is a
// call it cannot), for the backend's own softmax and GELU loops.
//
// exp(x) = 2^n · exp(r) with n = round(x / ln 2) and r = x - n·ln 2 in [-ln2/2, ln2/2];
// exp(r) is Cephes' degree-6 polynomial, and 2^n is built straight into a float's exponent
// bits. Relative error ≤ 2e-7 (about 2 ulp) for x in [-87, 88]; x is clamped to that range,
// so exp(-1000) gives ~1e-38 rather than 0, and nothing overflows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tinyformer::detail {

inline float fast_exp(float x) {
    x = std::min(std::max(x, -87.0f), 88.0f);
    const float n = std::nearbyint(x * 1.44269504088896341f);  // x / ln 2
    // r = x - n·ln 2, with ln 2 split in a short head and a tail so the product is exact
    const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t exponent_bits = (static_cast<int32_t>(n) + 127) << 23;  // the float 2^n
    float two_to_n;
    std::memcpy(&two_to_n, &exponent_bits, sizeof two_to_n);
    return p * two_to_n;
}

}  // namespace tinyformer::detail
