// Layer norm over rows of C floats, float32, in Highway vectors: compiled once per target
// (SSE4, AVX2, AVX-512, ...) and run on the best one this CPU has (kernel_targets.hpp), as
// attention_blocks.cpp is. The oneDNN backend splits rows over threads around these calls; the decoder calls the forward on one
// row at a time, so sampling and training normalise with the same arithmetic.
//
// With x̂ = (x - mean) · rstd, mean and the biased variance over the row (as PyTorch), and
// rstd = 1 / sqrt(variance + eps):
//   forward:  y = x̂ · weight + bias
//   backward: g = dy · weight;  dx = rstd · (g - mean(g) - x̂ · mean(g · x̂))
//             d_weight = Σ over rows of dy · x̂;  d_bias = Σ over rows of dy
#pragma once

#include <cstdint>

namespace tinyformer::detail {

// y [rows, C] from x [rows, C]; each row's mean and rstd into mean[r] and rstd[r] when those
// are not null (the backward's inputs).
void layer_norm_rows(const float* x, const float* weight, const float* bias, int64_t rows, int64_t C, float eps,
                     float* y, float* mean, float* rstd);

// dx [rows, C] from the forward's x, mean and rstd and the gradient dy, row by row; and these
// rows' share of the parameters' gradients, d_weight [C] and d_bias [C] (overwritten), summed
// in row order. The caller adds the shares of its blocks of rows in a fixed order, so a split
// of the blocks over threads does not change a bit.
void layer_norm_backward_rows(const float* x, const float* weight, const float* mean, const float* rstd,
                              const float* dy, int64_t rows, int64_t C, float* dx, float* d_weight, float* d_bias);

}  // namespace tinyformer::detail
