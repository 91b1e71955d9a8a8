// The oneDNN backend's elementwise loops, float32: adds, products, scaling, the rounding to
// bfloat16 and rope's rotation, compiled once per target (SSE4, AVX2, AVX-512, ...) and run on
// the best one this CPU has (kernel_targets.hpp), as activation_kernels.cpp is. Each call works
// on one span; the backend splits the work over threads around it.
//
// Every element is computed on its own, with the same roundings in any register width
// (-ffp-contract=off), so its bits do not depend on the target, the split or the build.
#pragma once

#include <cstdint>

namespace tinyformer::detail {

// out[i] = a[i] + b[i], for i < n.
void add_span(const float* a, const float* b, float* out, int64_t n);

// out[i] = a[i] · b[i].
void mul_span(const float* a, const float* b, float* out, int64_t n);

// out[i] = factor · x[i] (out may be x).
void scale_span(const float* x, float factor, float* out, int64_t n);

// dst[i] += src[i].
void add_into_span(float* dst, const float* src, int64_t n);

// to[i] = from[i] rounded to bfloat16, to nearest even: bf16.hpp's to_bf16_bits.
void to_bf16_span(const float* from, uint16_t* to, int64_t n);

// One row of d features (d even), pairs (2j, 2j+1) turned by rope's angles: to = from · cos +
// from with each pair swapped · sign · sin, i.e. (u0 c - u1 s, u1 c + u0 s), from the per-feature
// tables of one position (both features of pair j hold cos theta_j; sin_pairs holds -sin, +sin).
// sign -1 rotates back. from and to may be the same row.
void rotate_row(const float* from, float* to, const float* cos_pairs, const float* sin_pairs, int64_t d, float sign);

}  // namespace tinyformer::detail
