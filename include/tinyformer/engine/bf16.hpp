// bfloat16: float32 with the low 16 bits of its mantissa dropped. The same sign and 8-bit
// exponent (so the same range, no overflow where float32 has none), and 8 bits of precision
// (7 stored + the implicit one) instead of 24: a rounded value is within 2^-8 of the original,
// relatively. Converting is taking the top half of the float32's bits, rounded to nearest
// even, as the CPU's VCVTNEPS2BF16 does (and oneDNN, and torch.bfloat16).
#pragma once

#include <cstdint>
#include <cstring>

namespace tinyformer {

// The bfloat16 bits of x, rounded to nearest, ties to even. NaN stays a (quiet) NaN.
inline uint16_t to_bf16_bits(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
    bits += 0x7fffu + ((bits >> 16) & 1u);  // round the dropped half: to nearest, ties to the even result
    return static_cast<uint16_t>(bits >> 16);
}

inline float from_bf16_bits(uint16_t half) {
    const uint32_t bits = static_cast<uint32_t>(half) << 16;
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// x rounded to the nearest bfloat16, as a float32.
inline float round_to_bf16(float x) { return from_bf16_bits(to_bf16_bits(x)); }

// The unit roundoff of bfloat16, 2^-8 (half the gap 2^-7 between 1 and the next bfloat16):
// |round_to_bf16(x) - x| <= kBf16Roundoff · |x|.
constexpr double kBf16Roundoff = 1.0 / 256;

}  // namespace tinyformer
