// exp(x) for float32 in plain arithmetic that the compiler vectorises (libm's expf is a
// call it cannot), for the backend's own softmax, GELU and attention loops: one float at a
// time, or sixteen lanes of a Vec16 at once with the same steps and constants.
//
// No function here or in its users takes or returns a Vec16 by value: they take one by
// reference and work in place, and read and write memory through lanes_at. A 64-byte vector
// by value is passed in one AVX-512 register when the file is built with AVX-512 and in
// memory when not (GCC's -Wpsabi note), so two files built for different instruction sets
// (kernels dispatched at run time) would disagree on the call. The march check
// (tests/CMakeLists.txt, ctest build.march_*) compiles the kernel files for x86-64-v2, v3
// and v4 with -Werror, and fails if such a function appears.
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

// Sixteen floats: GCC's vector extension, where +, *, <, and ?: act lane by lane. With
// -march=native on an AVX-512 machine it is one register (two or four elsewhere).
typedef float Vec16 __attribute__((vector_size(64)));
typedef int32_t Int16 __attribute__((vector_size(64)));

// The sixteen floats at p, aligned or not, as a Vec16 in memory: `Vec16 v = lanes_at(p)`
// loads them, `lanes_at(p) = v` stores v. (may_alias lets a float's memory be read as the
// vector, as GCC's own _mm512_loadu_ps does; a reference, so no vector is passed by value.)
typedef float Vec16InMemory __attribute__((vector_size(64), aligned(alignof(float)), may_alias));
inline const Vec16InMemory& lanes_at(const float* p) { return *reinterpret_cast<const Vec16InMemory*>(p); }
inline Vec16InMemory& lanes_at(float* p) { return *reinterpret_cast<Vec16InMemory*>(p); }

namespace exp_constants {
constexpr float lowest = -87.0f, highest = 88.0f;
constexpr float log2e = 1.44269504088896341f;
constexpr float ln2_head = 0.693359375f, ln2_tail = 2.12194440e-4f;  // ln 2 = head - tail; head·n is exact
constexpr float c6 = 1.9875691500e-4f, c5 = 1.3981999507e-3f, c4 = 8.3334519073e-3f, c3 = 4.1665795894e-2f,
                c2 = 1.6666665459e-1f, c1 = 5.0000001201e-1f;
}  // namespace exp_constants

// r ← exp(r) for r in [-ln2/2, ln2/2]: Cephes' polynomial, for one float or sixteen lanes.
template <class F>
inline void exp_of_remainder_in_place(F& r) {
    using namespace exp_constants;
    F p = r * c6 + c5;
    p = p * r + c4;
    p = p * r + c3;
    p = p * r + c2;
    p = p * r + c1;
    r = p * r * r + r + 1.0f;
}

inline float fast_exp(float x) {
    using namespace exp_constants;
    x = std::min(std::max(x, lowest), highest);
    const float n = std::nearbyint(x * log2e);  // x / ln 2
    // r = x - n·ln 2, with ln 2 split in a short head and a tail so the product is exact
    float p = x - n * ln2_head + n * ln2_tail;
    exp_of_remainder_in_place(p);  // exp(r)
    const int32_t exponent_bits = (static_cast<int32_t>(n) + 127) << 23;  // the float 2^n
    float two_to_n;
    std::memcpy(&two_to_n, &exponent_bits, sizeof two_to_n);
    return p * two_to_n;
}

// The same, lane by lane and in place: x ← exp(x). n is rounded by adding and taking away
// 1.5·2^23 (to nearest, ties to even, as nearbyint does), exact for |x / ln 2| < 2^22, which
// the clamp ensures.
inline void fast_exp_in_place(Vec16& x) {
    using namespace exp_constants;
    const Vec16 low = Vec16{} + lowest, high = Vec16{} + highest;
    x = x < low ? low : x;
    x = x > high ? high : x;
    constexpr float round_to_integer = 12582912.0f;  // 1.5·2^23
    const Vec16 n = (x * log2e + round_to_integer) - round_to_integer;
    Vec16 p = x - n * ln2_head + n * ln2_tail;
    exp_of_remainder_in_place(p);  // exp(r)
    const Int16 exponent_bits = (__builtin_convertvector(n, Int16) + 127) << 23;  // 2^n in each lane
    Vec16 two_to_n;
    std::memcpy(&two_to_n, &exponent_bits, sizeof two_to_n);
    x = p * two_to_n;
}

}  // namespace tinyformer::detail
