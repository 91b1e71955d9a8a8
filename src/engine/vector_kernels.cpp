// The decoder's matrix-vector product in Highway vectors, compiled once per target and
// dispatched at run time (see src/engine/backends/attention_blocks.cpp for Highway's pattern).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/vector_kernels.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/highway.h>

#include "tinyformer/engine/vector_kernels.hpp"

#include "engine/backends/activation_kernels.hpp"
#include "engine/backends/layer_norm_kernels.hpp"

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

// kRows rows of X at once, through blocks of kColumns registers of outputs: each loaded
// register of W_t serves every row of the block.
template <int kRows, int kColumns>
void rows_block(const float* W_t, int64_t stride, const float* bias, const float* X, int64_t x_stride, int64_t n_in,
                int64_t n_out, float* out, int64_t out_stride) {
    const hn::ScalableTag<float> f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    const int64_t block = kColumns * N;  // divides kMatvecBlock
    alignas(64) float sums_out[kColumns * hn::MaxLanes(f)];
    for (int64_t first = 0; first < n_out; first += block) {
        hn::Vec<decltype(f)> sums[kRows][kColumns];
        for (int r = 0; r < kRows; ++r)
            for (int c = 0; c < kColumns; ++c) sums[r][c] = hn::Zero(f);
        for (int64_t i = 0; i < n_in; ++i) {
            const float* w_row = W_t + i * stride + first;
            hn::Vec<decltype(f)> w[kColumns];
            for (int c = 0; c < kColumns; ++c) w[c] = hn::LoadU(f, w_row + c * N);
            for (int r = 0; r < kRows; ++r) {
                const auto xi = hn::Set(f, X[r * x_stride + i]);
                for (int c = 0; c < kColumns; ++c) sums[r][c] = hn::MulAdd(xi, w[c], sums[r][c]);
            }
        }
        for (int r = 0; r < kRows; ++r) {
            for (int c = 0; c < kColumns; ++c) hn::Store(sums[r][c], f, sums_out + c * N);
            float* out_row = out + r * out_stride;
            for (int64_t o = 0; o < block && first + o < n_out; ++o)
                out_row[first + o] = bias ? sums_out[o] + bias[first + o] : sums_out[o];
        }
    }
}

void matmul_transposed(const float* W_t, int64_t stride, const float* bias, const float* X, int64_t x_stride,
                       int64_t rows, int64_t n_in, int64_t n_out, float* out, int64_t out_stride) {
    // Sums in registers: 4 rows × 4 of AVX-512's 32; 2 rows × 4 of the 16 that AVX2 and SSE4 have.
#if HWY_TARGET <= HWY_AVX3
    constexpr int kRows = 4;
#else
    constexpr int kRows = 2;
#endif
    int64_t r = 0;
    for (; r + kRows <= rows; r += kRows)
        rows_block<kRows, 4>(W_t, stride, bias, X + r * x_stride, x_stride, n_in, n_out, out + r * out_stride,
                             out_stride);
    for (; r < rows; ++r)
        rows_block<1, 4>(W_t, stride, bias, X + r * x_stride, x_stride, n_in, n_out, out + r * out_stride, out_stride);
}

}  // namespace tinyformer::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer {

HWY_EXPORT(matvec_transposed);
HWY_EXPORT(matmul_transposed);

void matvec_transposed(const float* W_t, int64_t stride, const float* bias, const float* x, int64_t n_in,
                       int64_t n_out, float* out) {
    HWY_DYNAMIC_DISPATCH(matvec_transposed)(W_t, stride, bias, x, n_in, n_out, out);
}

void matmul_transposed(const float* W_t, int64_t stride, const float* bias, const float* X, int64_t x_stride,
                       int64_t rows, int64_t n_in, int64_t n_out, float* out, int64_t out_stride) {
    HWY_DYNAMIC_DISPATCH(matmul_transposed)(W_t, stride, bias, X, x_stride, rows, n_in, n_out, out, out_stride);
}

void gelu_tanh_in_place(float* x, int64_t n) { detail::gelu_forward_span(x, x, n); }

void layer_norm_row(const float* x, const float* weight, const float* bias, int64_t n, float eps, float* out) {
    detail::layer_norm_rows(x, weight, bias, 1, n, eps, out, nullptr, nullptr);
}

void softmax_in_place(float* x, int64_t n) { detail::softmax_row(x, x, n, n); }

}  // namespace tinyformer
#endif  // HWY_ONCE
