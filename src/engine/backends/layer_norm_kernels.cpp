// Layer norm rows in Highway vectors, compiled once per target and dispatched at run time
// (see attention_blocks.cpp for Highway's pattern; layer_norm_kernels.hpp for the formulas).
// Every loop takes whole registers and then its tail in registers of one lane
// (span_loops-inl.hpp), so any C works.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/backends/layer_norm_kernels.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/highway.h>

#include <cmath>

#include "layer_norm_kernels.hpp"
#include "span_loops-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace tinyformer::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
void layer_norm_rows(const float* x, const float* weight, const float* bias, int64_t rows, int64_t C, float eps,
                     float* y, float* mean, float* rstd) {
    const float inv_C = 1.0f / static_cast<float>(C);
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * C;
        float* out = y + r * C;
        const float row_mean = sum_over_span(C, [&](auto d, int64_t i) { return hn::LoadU(d, row + i); }) * inv_C;
        const float variance = sum_over_span(C, [&](auto d, int64_t i) {
                                   const auto centred = hn::Sub(hn::LoadU(d, row + i), hn::Set(d, row_mean));
                                   return hn::Mul(centred, centred);
                               }) * inv_C;
        const float row_rstd = 1.0f / std::sqrt(variance + eps);
        over_span(C, [&](auto d, int64_t i) {
            const auto x_hat = hn::Mul(hn::Sub(hn::LoadU(d, row + i), hn::Set(d, row_mean)), hn::Set(d, row_rstd));
            hn::StoreU(hn::MulAdd(x_hat, hn::LoadU(d, weight + i), hn::LoadU(d, bias + i)), d, out + i);
        });
        if (mean) mean[r] = row_mean;
        if (rstd) rstd[r] = row_rstd;
    }
}

void layer_norm_backward_rows(const float* x, const float* weight, const float* mean, const float* rstd,
                              const float* dy, int64_t rows, int64_t C, float* dx, float* d_weight, float* d_bias) {
    const float inv_C = 1.0f / static_cast<float>(C);
    over_span(C, [&](auto d, int64_t i) {
        hn::StoreU(hn::Zero(d), d, d_weight + i);
        hn::StoreU(hn::Zero(d), d, d_bias + i);
    });
    for (int64_t r = 0; r < rows; ++r) {
        const float *row = x + r * C, *d_row = dy + r * C;
        float* out = dx + r * C;
        auto x_hat = [&](auto d, int64_t i) {
            return hn::Mul(hn::Sub(hn::LoadU(d, row + i), hn::Set(d, mean[r])), hn::Set(d, rstd[r]));
        };
        auto g = [&](auto d, int64_t i) { return hn::Mul(hn::LoadU(d, d_row + i), hn::LoadU(d, weight + i)); };
        const float mean_g = sum_over_span(C, g) * inv_C;
        const float mean_g_x_hat = sum_over_span(C, [&](auto d, int64_t i) { return hn::Mul(g(d, i), x_hat(d, i)); }) * inv_C;
        over_span(C, [&](auto d, int64_t i) {
            // rstd · (g - mean(g) - x̂ · mean(g x̂))
            const auto centred_g = hn::Sub(g(d, i), hn::Set(d, mean_g));
            const auto inner = hn::NegMulAdd(x_hat(d, i), hn::Set(d, mean_g_x_hat), centred_g);
            hn::StoreU(hn::Mul(hn::Set(d, rstd[r]), inner), d, out + i);
            // and this row's terms of the parameters' gradients
            const auto dy_i = hn::LoadU(d, d_row + i);
            hn::StoreU(hn::MulAdd(dy_i, x_hat(d, i), hn::LoadU(d, d_weight + i)), d, d_weight + i);
            hn::StoreU(hn::Add(hn::LoadU(d, d_bias + i), dy_i), d, d_bias + i);
        });
    }
}

}  // namespace tinyformer::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer::detail {

HWY_EXPORT(layer_norm_rows);
HWY_EXPORT(layer_norm_backward_rows);

void layer_norm_rows(const float* x, const float* weight, const float* bias, int64_t rows, int64_t C, float eps,
                     float* y, float* mean, float* rstd) {
    HWY_DYNAMIC_DISPATCH(layer_norm_rows)(x, weight, bias, rows, C, eps, y, mean, rstd);
}
void layer_norm_backward_rows(const float* x, const float* weight, const float* mean, const float* rstd,
                              const float* dy, int64_t rows, int64_t C, float* dx, float* d_weight, float* d_bias) {
    HWY_DYNAMIC_DISPATCH(layer_norm_backward_rows)(x, weight, mean, rstd, dy, rows, C, dx, d_weight, d_bias);
}

}  // namespace tinyformer::detail
#endif  // HWY_ONCE
