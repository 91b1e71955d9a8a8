// Loops over a span of n floats for the Highway kernels (activation_kernels.cpp,
// layer_norm_kernels.cpp): whole registers, then the tail in registers of one lane
// (hn::CappedTag<float, 1>), the same arithmetic, so a float's result does not depend on
// where the span starts or ends.
//
// A "-inl" header, as fast_exp-inl.hpp: included inside HWY_NAMESPACE once per target.
#if defined(TINYFORMER_SPAN_LOOPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TINYFORMER_SPAN_LOOPS_INL_H_
#undef TINYFORMER_SPAN_LOOPS_INL_H_
#else
#define TINYFORMER_SPAN_LOOPS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace tinyformer::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using Floats = hn::ScalableTag<float>;  // a register of floats: 4 (SSE4), 8 (AVX2) or 16 (AVX-512)
using OneFloat = hn::CappedTag<float, 1>;

// step(d, i) for i = 0, N, 2N, ... over n floats in registers of d, then one by one.
template <class Step>
HWY_INLINE void over_span(int64_t n, Step&& step) {
    const Floats f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    int64_t i = 0;
    for (; i + N <= n; i += N) step(f, i);
    for (; i < n; ++i) step(OneFloat(), i);
}

// Σ over i < n of terms(d, i), a register of terms per step: whole registers into one sum
// of lanes, the tail into a one-lane sum, added at the end.
template <class Terms>
HWY_INLINE float sum_over_span(int64_t n, Terms&& terms) {
    auto sum = hn::Zero(Floats());
    auto sum_one = hn::Zero(OneFloat());
    over_span(n, [&](auto d, int64_t i) {
        if constexpr (hn::MaxLanes(d) == 1) sum_one = hn::Add(sum_one, terms(d, i));
        else sum = hn::Add(sum, terms(d, i));
    });
    return hn::GetLane(hn::SumOfLanes(Floats(), sum)) + hn::GetLane(sum_one);
}

}  // namespace tinyformer::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TINYFORMER_SPAN_LOOPS_INL_H_
