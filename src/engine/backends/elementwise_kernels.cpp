// The backend's elementwise loops in Highway vectors, compiled once per target and dispatched
// at run time (see attention_blocks.cpp for Highway's pattern). Whole registers, then the tail
// in registers of one lane (span_loops-inl.hpp): the same arithmetic for every element.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/backends/elementwise_kernels.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/highway.h>

#include "elementwise_kernels.hpp"
#include "rotate_row-inl.hpp"
#include "span_loops-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace tinyformer::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void add_span(const float* a, const float* b, float* out, int64_t n) {
    over_span(n, [&](auto d, int64_t i) { hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i); });
}

void mul_span(const float* a, const float* b, float* out, int64_t n) {
    over_span(n, [&](auto d, int64_t i) { hn::StoreU(hn::Mul(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i); });
}

void scale_span(const float* x, float factor, float* out, int64_t n) {
    over_span(n, [&](auto d, int64_t i) { hn::StoreU(hn::Mul(hn::Set(d, factor), hn::LoadU(d, x + i)), d, out + i); });
}

void add_into_span(float* dst, const float* src, int64_t n) {
    over_span(n, [&](auto d, int64_t i) { hn::StoreU(hn::Add(hn::LoadU(d, dst + i), hn::LoadU(d, src + i)), d, dst + i); });
}

// The bits of x plus 0x7fff, plus 1 more when the kept half is odd, then the top 16 bits: to
// nearest, ties to even. A NaN keeps its top bits with the quiet bit set (0x40 of the half).
void to_bf16_span(const float* from, uint16_t* to, int64_t n) {
    over_span(n, [&](auto d, int64_t i) {
        const hn::RebindToUnsigned<decltype(d)> du;
        const hn::Rebind<int32_t, decltype(d)> di;
        const hn::Rebind<uint16_t, decltype(d)> d16;
        const auto x = hn::LoadU(d, from + i);
        const auto bits = hn::BitCast(du, x);
        const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
        const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7fffu), odd)));
        const auto quiet_nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
        const auto half = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(x)), quiet_nan, rounded);  // < 2^16
        hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, half)), d16, to + i);
    });
}

void rotate_row(const float* from, float* to, const float* cos_pairs, const float* sin_pairs, int64_t d, float sign) {
    RotateRow(from, to, cos_pairs, sin_pairs, d, sign);
}

}  // namespace tinyformer::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer::detail {

HWY_EXPORT(add_span);
HWY_EXPORT(mul_span);
HWY_EXPORT(scale_span);
HWY_EXPORT(add_into_span);
HWY_EXPORT(to_bf16_span);
HWY_EXPORT(rotate_row);

void add_span(const float* a, const float* b, float* out, int64_t n) { HWY_DYNAMIC_DISPATCH(add_span)(a, b, out, n); }
void mul_span(const float* a, const float* b, float* out, int64_t n) { HWY_DYNAMIC_DISPATCH(mul_span)(a, b, out, n); }
void scale_span(const float* x, float factor, float* out, int64_t n) {
    HWY_DYNAMIC_DISPATCH(scale_span)(x, factor, out, n);
}
void add_into_span(float* dst, const float* src, int64_t n) { HWY_DYNAMIC_DISPATCH(add_into_span)(dst, src, n); }
void to_bf16_span(const float* from, uint16_t* to, int64_t n) { HWY_DYNAMIC_DISPATCH(to_bf16_span)(from, to, n); }
void rotate_row(const float* from, float* to, const float* cos_pairs, const float* sin_pairs, int64_t d, float sign) {
    HWY_DYNAMIC_DISPATCH(rotate_row)(from, to, cos_pairs, sin_pairs, d, sign);
}

}  // namespace tinyformer::detail
#endif  // HWY_ONCE
