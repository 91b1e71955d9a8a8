// The decoder's matrix-vector product in Highway vectors, compiled once per target and
// dispatched at run time (see src/engine/backends/attention_blocks.cpp for Highway's pattern).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/vector_kernels.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/highway.h>

#include "tinyformer/engine/vector_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace tinyformer::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void matvec_transposed(const float* W_t, int64_t stride, const float* bias, const float* x, int64_t n_in,
                       int64_t n_out, float* out) {
    const hn::ScalableTag<float> f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    // Registers of sums per block: 4 of AVX-512's 32 (64 outputs); 8 of the 16 that AVX2 and
    // SSE4 have (64 and 32 outputs), which leaves room for the row being read.
#if HWY_TARGET <= HWY_AVX3
    constexpr int kRegisters = 4;
#else
    constexpr int kRegisters = 8;
#endif
    const int64_t block = kRegisters * N;  // divides kMatvecBlock
    alignas(64) float sums_out[kRegisters * hn::MaxLanes(f)];
    for (int64_t first = 0; first < n_out; first += block) {
        hn::Vec<decltype(f)> sums[kRegisters];
        for (int r = 0; r < kRegisters; ++r) sums[r] = hn::Zero(f);
        for (int64_t i = 0; i < n_in; ++i) {
            const auto xi = hn::Set(f, x[i]);
            const float* row = W_t + i * stride + first;
            for (int r = 0; r < kRegisters; ++r) sums[r] = hn::MulAdd(xi, hn::LoadU(f, row + r * N), sums[r]);
        }
        for (int r = 0; r < kRegisters; ++r) hn::Store(sums[r], f, sums_out + r * N);
        for (int64_t o = 0; o < block && first + o < n_out; ++o)
            out[first + o] = bias ? sums_out[o] + bias[first + o] : sums_out[o];
    }
}

}  // namespace tinyformer::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer {

HWY_EXPORT(matvec_transposed);

void matvec_transposed(const float* W_t, int64_t stride, const float* bias, const float* x, int64_t n_in,
                       int64_t n_out, float* out) {
    HWY_DYNAMIC_DISPATCH(matvec_transposed)(W_t, stride, bias, x, n_in, n_out, out);
}

}  // namespace tinyformer
#endif  // HWY_ONCE
