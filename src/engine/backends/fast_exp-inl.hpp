// exp(x) for float32, a register of lanes at a time in Highway vectors, for the kernels that
// are compiled once per target (attention_blocks.cpp, activation_kernels.cpp): plain
// arithmetic the vector units do, where libm's expf is a call per float.
//
// exp(x) = 2^n · exp(r) with n = round(x / ln 2) and r = x - n·ln 2 in [-ln2/2, ln2/2];
// exp(r) is Cephes' degree-6 polynomial, and 2^n is built straight into a float's exponent
// bits. Relative error ≤ 2e-7 (about 2 ulp) for x in [-87, 88]; x is clamped to that range,
// so exp(-1000) gives ~1e-38 rather than 0, nothing overflows, and a NaN stays a NaN.
// (Highway's own contrib Exp returns 0 below -104 and for NaN, and is not clamped above.)
//
// A "-inl" header: included inside HWY_NAMESPACE once per target, so it has no #pragma once
// but Highway's per-target guard (the toggle flips at each target of foreach_target.h).
#if defined(TINYFORMER_FAST_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TINYFORMER_FAST_EXP_INL_H_
#undef TINYFORMER_FAST_EXP_INL_H_
#else
#define TINYFORMER_FAST_EXP_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tinyformer::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace exp_constants {
constexpr float lowest = -87.0f, highest = 88.0f;
constexpr float log2e = 1.44269504088896341f;
constexpr float ln2_head = 0.693359375f, ln2_tail = 2.12194440e-4f;  // ln 2 = head - tail; head·n is exact
constexpr float c6 = 1.9875691500e-4f, c5 = 1.3981999507e-3f, c4 = 8.3334519073e-3f, c3 = 4.1665795894e-2f,
                c2 = 1.6666665459e-1f, c1 = 5.0000001201e-1f;  // Cephes' expf
}  // namespace exp_constants

// exp of every lane of x. (By value: inside one target's code the vectors stay in registers.)
template <class D, class V>
HWY_INLINE V FastExp(D d, V x) {
    using namespace exp_constants;
    // Clamped by comparisons, which are false for a NaN: it passes through (Min and Max
    // would not promise that on every target).
    const V low = hn::Set(d, lowest), high = hn::Set(d, highest);
    x = hn::IfThenElse(hn::Lt(x, low), low, x);
    x = hn::IfThenElse(hn::Gt(x, high), high, x);
    const V n = hn::Round(hn::Mul(x, hn::Set(d, log2e)));  // to nearest, ties to even
    // r = x - n·ln 2, with ln 2 split in a short head and a tail so the product is exact
    V r = hn::Add(hn::NegMulAdd(n, hn::Set(d, ln2_head), x), hn::Mul(n, hn::Set(d, ln2_tail)));
    V p = hn::MulAdd(r, hn::Set(d, c6), hn::Set(d, c5));  // Cephes' polynomial in r
    p = hn::MulAdd(p, r, hn::Set(d, c4));
    p = hn::MulAdd(p, r, hn::Set(d, c3));
    p = hn::MulAdd(p, r, hn::Set(d, c2));
    p = hn::MulAdd(p, r, hn::Set(d, c1));
    p = hn::Add(hn::MulAdd(hn::Mul(p, r), r, r), hn::Set(d, 1.0f));  // p·r² + r + 1
    const hn::RebindToSigned<D> di;
    // A NaN lane's n is taken as 0 for the conversion to an integer, which a NaN would make
    // undefined (UBSan caught it in the emulated target); its p is NaN already.
    const V whole_n = hn::IfThenZeroElse(hn::IsNaN(n), n);
    const auto exponent_bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, whole_n), hn::Set(di, 127)));  // 2^n
    return hn::Mul(p, hn::BitCast(d, exponent_bits));
}

}  // namespace tinyformer::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
