// Rope's rotation of one row in Highway vectors, for the kernels that rotate (attention_blocks.cpp
// inside attention, elementwise_kernels.cpp for the rope op): one function, so that both round
// the same way. Pairs (2j, 2j+1) turned by theta_j: (u0 c - u1 s, u1 c + u0 s), as the row times
// cos_pairs plus the row with each pair swapped times sign · sin_pairs (per-feature tables: both
// features of pair j hold cos theta_j; sin_pairs holds -sin, +sin). Two products and a sum, each
// rounded on its own, so every target gives the same bits.
//
// A "-inl" header, as fast_exp-inl.hpp: included inside HWY_NAMESPACE once per target.
#if defined(TINYFORMER_ROTATE_ROW_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TINYFORMER_ROTATE_ROW_INL_H_
#undef TINYFORMER_ROTATE_ROW_INL_H_
#else
#define TINYFORMER_ROTATE_ROW_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace tinyformer::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR  // a register of one lane has no pair to swap inside it
// The first `whole` features of a row rotated, `whole` a multiple of the register's lanes
// (which are even: pairs never straddle registers). Only vector code: attention's heads,
// whose width is a multiple of 16, rotate through this alone.
HWY_INLINE void RotateWholeRegisters(const float* from, float* to, const float* cos_pairs, const float* sin_pairs,
                                     int64_t whole, float sign) {
    const hn::ScalableTag<float> f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    const auto signs = hn::Set(f, sign);
    for (int64_t j = 0; j < whole; j += N) {
        const auto u = hn::LoadU(f, from + j);
        const auto s = hn::Mul(signs, hn::LoadU(f, sin_pairs + j));
        hn::StoreU(hn::Add(hn::Mul(u, hn::LoadU(f, cos_pairs + j)), hn::Mul(hn::Reverse2(f, u), s)), f, to + j);
    }
}
#endif

// to [d] = from [d] rotated (d even; sign -1 rotates back). from and to may be the same row.
HWY_INLINE void RotateRow(const float* from, float* to, const float* cos_pairs, const float* sin_pairs, int64_t d,
                          float sign) {
    int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR
    const int64_t N = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>()));
    j = d / N * N;
    RotateWholeRegisters(from, to, cos_pairs, sin_pairs, j, sign);
#endif
    for (; j + 2 <= d; j += 2) {  // the same two products and sum, one pair at a time
        const float u0 = from[j], u1 = from[j + 1];
        to[j] = u0 * cos_pairs[j] + u1 * (sign * sin_pairs[j]);
        to[j + 1] = u1 * cos_pairs[j + 1] + u0 * (sign * sin_pairs[j + 1]);
    }
}

}  // namespace tinyformer::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
