// AdamW's update and gradient clipping's loops in Highway vectors, compiled once per target and dispatched at run time (see
// src/engine/backends/attention_blocks.cpp for Highway's pattern). Whole registers, then the
// tail one float at a time in one-lane registers: the same arithmetic for every element.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/optimizer_kernels.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/highway.h>

#include "tinyformer/engine/optimizer_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace tinyformer::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace {
// The update of the lanes of d at element i.
template <class D>
HWY_INLINE void adamw_lanes(D d, const AdamWStep& step, float* p, const float* g, float* m, float* v,
                            const uint8_t* decays, int64_t i) {
    const hn::Rebind<uint8_t, D> bytes;
    const hn::Rebind<int32_t, D> ints;
    // The lanes decay applies to: their byte in `decays` is not 0.
    const auto decays_here = hn::RebindMask(d, hn::Ne(hn::PromoteTo(ints, hn::LoadU(bytes, decays + i)), hn::Zero(ints)));
    const auto one = hn::Set(d, 1.0f), b1 = hn::Set(d, step.beta1), b2 = hn::Set(d, step.beta2);
    const auto grad = hn::LoadU(d, g + i);
    // p · decay where it applies; p · 1 (exactly p) elsewhere. (Decoupled, first, as PyTorch's.)
    auto param = hn::Mul(hn::LoadU(d, p + i), hn::IfThenElse(decays_here, hn::Set(d, step.decay), one));
    const auto moment = hn::MulAdd(b1, hn::LoadU(d, m + i), hn::Mul(hn::Sub(one, b1), grad));
    const auto second = hn::MulAdd(b2, hn::LoadU(d, v + i), hn::Mul(hn::Mul(hn::Sub(one, b2), grad), grad));
    const auto denominator = hn::MulAdd(hn::Sqrt(second), hn::Set(d, step.inv_sqrt_bias2), hn::Set(d, step.eps));
    param = hn::Sub(param, hn::Div(hn::Mul(hn::Set(d, step.step_size), moment), denominator));
    hn::StoreU(moment, d, m + i);
    hn::StoreU(second, d, v + i);
    hn::StoreU(param, d, p + i);
}
}  // namespace

void adamw_update(const AdamWStep& step, float* p, const float* g, float* m, float* v, const uint8_t* decays,
                  int64_t n) {
    const hn::ScalableTag<float> f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    int64_t i = 0;
    for (; i + N <= n; i += N) adamw_lanes(f, step, p, g, m, v, decays, i);
    for (; i < n; ++i) adamw_lanes(hn::CappedTag<float, 1>(), step, p, g, m, v, decays, i);
}

double sum_of_squares(const float* g, int64_t n) {
    // Eight running sums in registers of doubles as wide as this target's (8, 4, 2 or 1 lanes),
    // kVectors of them: lane l of vector r holds the sum for i % 8 = r·L + l.
    const hn::CappedTag<double, 8> d;
    const hn::Rebind<float, decltype(d)> f;
    constexpr size_t kMaxVectors = 8;
    const size_t L = hn::Lanes(d), vectors = 8 / L;
    hn::Vec<decltype(d)> sums[kMaxVectors];
    for (size_t r = 0; r < kMaxVectors; ++r) sums[r] = hn::Zero(d);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t r = 0; r < vectors; ++r) {
            const auto x = hn::PromoteTo(d, hn::LoadU(f, g + i + r * L));
            sums[r] = hn::Add(sums[r], hn::Mul(x, x));
        }
    alignas(64) double lanes[8];
    for (size_t r = 0; r < vectors; ++r) hn::Store(sums[r], d, lanes + r * L);
    for (; i < n; ++i) lanes[0] += static_cast<double>(g[i]) * g[i];  // the tail, into sum 0
    double total = 0;
    for (double lane : lanes) total += lane;
    return total;
}

void scale_in_place(float* g, float factor, int64_t n) {
    const hn::ScalableTag<float> f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    int64_t i = 0;
    for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::Set(f, factor), hn::LoadU(f, g + i)), f, g + i);
    for (; i < n; ++i) g[i] *= factor;
}

}  // namespace tinyformer::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer {

HWY_EXPORT(adamw_update);
HWY_EXPORT(sum_of_squares);
HWY_EXPORT(scale_in_place);

void adamw_update(const AdamWStep& step, float* p, const float* g, float* m, float* v, const uint8_t* decays,
                  int64_t n) {
    HWY_DYNAMIC_DISPATCH(adamw_update)(step, p, g, m, v, decays, n);
}

double sum_of_squares(const float* g, int64_t n) { return HWY_DYNAMIC_DISPATCH(sum_of_squares)(g, n); }

void scale_in_place(float* g, float factor, int64_t n) { HWY_DYNAMIC_DISPATCH(scale_in_place)(g, factor, n); }

}  // namespace tinyformer
#endif  // HWY_ONCE
