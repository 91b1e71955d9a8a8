// GELU and softmax rows, float32, for the oneDNN backend's loops: compiled once per target
// (SSE4, AVX2, AVX-512, ...) and run on the best one this CPU has (kernel_targets.hpp), as
// attention_blocks.cpp is. Each call works on one span; the backend splits the work over
// threads around it.
#pragma once

#include <cstdint>

namespace tinyformer::detail {

// y = GELU(x), the tanh form, for n floats: 0.5 u (1 + tanh z) = u / (1 + exp(-2z)) with
// z = sqrt(2/pi) (u + 0.044715 u³): one exp and no cancellation for negative u.
void gelu_forward_span(const float* x, float* y, int64_t n);

// dx = dy · GELU'(x) for n floats, from the forward's output y: the forward's tanh is in it,
// t = 2y/u - 1 (0 at u = 0), so no exp is needed.
void gelu_backward_span(const float* x, const float* y, const float* dy, float* dx, int64_t n);

// One softmax row of `width` floats: out[j] = exp(in[j] - max) / sum over the first
// `visible` (the keys a query may read), and exactly 0 for the rest. visible >= 1.
void softmax_row(const float* in, float* out, int64_t visible, int64_t width);

// y = exp(x) for n floats: the kernels' own exp (fast_exp-inl.hpp), clamped to [-87, 88].
void exp_span(const float* x, float* y, int64_t n);

}  // namespace tinyformer::detail
