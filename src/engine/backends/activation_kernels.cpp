// GELU and softmax rows in Highway vectors, compiled once per target and dispatched at run
// time (see attention_blocks.cpp for Highway's pattern). Every loop takes whole registers and
// then its tail in registers of one lane (span_loops-inl.hpp): the same arithmetic, so a
// float's result does not depend on where the span starts or ends.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/backends/activation_kernels.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/highway.h>

#include <algorithm>
#include <limits>

#include "activation_kernels.hpp"
#include "fast_exp-inl.hpp"
#include "span_loops-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace tinyformer::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr float kSqrtTwoOverPi = 0.7978845608028654f;

void gelu_forward_span(const float* x, float* y, int64_t n) {
    over_span(n, [&](auto d, int64_t i) {
        const auto u = hn::LoadU(d, x + i);
        const auto z = hn::Mul(hn::Set(d, kSqrtTwoOverPi), hn::MulAdd(hn::Mul(hn::Set(d, 0.044715f), u), hn::Mul(u, u), u));
        const auto e = FastExp(d, hn::Mul(hn::Set(d, -2.0f), z));  // clamped: 1 + e never overflows
        hn::StoreU(hn::Div(u, hn::Add(hn::Set(d, 1.0f), e)), d, y + i);
    });
}

void gelu_backward_span(const float* x, const float* y, const float* dy, float* dx, int64_t n) {
    over_span(n, [&](auto d, int64_t i) {
        const auto u = hn::LoadU(d, x + i), one = hn::Set(d, 1.0f), half = hn::Set(d, 0.5f);
        // t = 2y/u - 1, and 0 where u = 0 (the division's NaN there is masked away)
        const auto t = hn::IfThenZeroElse(hn::Eq(u, hn::Zero(d)),
                                          hn::Sub(hn::Div(hn::Mul(hn::Set(d, 2.0f), hn::LoadU(d, y + i)), u), one));
        // dt/du = (1 - t²) · sqrt(2/pi) · (1 + 3·0.044715 u²)
        const auto dt = hn::Mul(hn::NegMulAdd(t, t, one),
                                hn::Mul(hn::Set(d, kSqrtTwoOverPi), hn::MulAdd(hn::Set(d, 3.0f * 0.044715f), hn::Mul(u, u), one)));
        // GELU' = 0.5 (1 + t) + 0.5 u dt
        const auto derivative = hn::Mul(half, hn::MulAdd(u, dt, hn::Add(one, t)));
        hn::StoreU(hn::Mul(hn::LoadU(d, dy + i), derivative), d, dx + i);
    });
}

void exp_span(const float* x, float* y, int64_t n) {
    over_span(n, [&](auto d, int64_t i) { hn::StoreU(FastExp(d, hn::LoadU(d, x + i)), d, y + i); });
}

void softmax_row(const float* in, float* out, int64_t visible, int64_t width) {
    float max = -std::numeric_limits<float>::infinity();
    {
        auto largest = hn::Set(Floats(), max);
        auto largest_one = hn::Set(OneFloat(), max);
        over_span(visible, [&](auto d, int64_t j) {
            if constexpr (hn::MaxLanes(d) == 1) largest_one = hn::Max(largest_one, hn::LoadU(d, in + j));
            else largest = hn::Max(largest, hn::LoadU(d, in + j));
        });
        max = std::max(hn::GetLane(hn::MaxOfLanes(Floats(), largest)), hn::GetLane(largest_one));
    }
    const float sum = sum_over_span(visible, [&](auto d, int64_t j) {
        const auto e = FastExp(d, hn::Sub(hn::LoadU(d, in + j), hn::Set(d, max)));
        hn::StoreU(e, d, out + j);
        return e;
    });
    const float inv_sum = 1.0f / sum;
    over_span(visible, [&](auto d, int64_t j) {
        hn::StoreU(hn::Mul(hn::LoadU(d, out + j), hn::Set(d, inv_sum)), d, out + j);
    });
    std::fill(out + visible, out + width, 0.0f);
}

}  // namespace tinyformer::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer::detail {

HWY_EXPORT(gelu_forward_span);
HWY_EXPORT(gelu_backward_span);
HWY_EXPORT(softmax_row);
HWY_EXPORT(exp_span);

void gelu_forward_span(const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(gelu_forward_span)(x, y, n); }
void gelu_backward_span(const float* x, const float* y, const float* dy, float* dx, int64_t n) {
    HWY_DYNAMIC_DISPATCH(gelu_backward_span)(x, y, dy, dx, n);
}
void softmax_row(const float* in, float* out, int64_t visible, int64_t width) {
    HWY_DYNAMIC_DISPATCH(softmax_row)(in, out, visible, width);
}
void exp_span(const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(exp_span)(x, y, n); }

}  // namespace tinyformer::detail
#endif  // HWY_ONCE
