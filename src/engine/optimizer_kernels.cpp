// AdamW's update in Highway vectors, compiled once per target and dispatched at run time (see
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

}  // namespace tinyformer::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer {

HWY_EXPORT(adamw_update);

void adamw_update(const AdamWStep& step, float* p, const float* g, float* m, float* v, const uint8_t* decays,
                  int64_t n) {
    HWY_DYNAMIC_DISPATCH(adamw_update)(step, p, g, m, v, decays, n);
}

}  // namespace tinyformer
#endif  // HWY_ONCE
