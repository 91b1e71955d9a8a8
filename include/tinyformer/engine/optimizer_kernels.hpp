// The optimizer's inner loops as kernels (AdamW's update, and the sum of squares and the scaling
// of gradient clipping): compiled once per target and dispatched at run time
// like the backend's own kernels (kernel_targets.hpp), so the portable build runs it in AVX2
// or AVX-512 registers too. train/optim.cpp holds the algorithm and splits the work over threads.
#pragma once

#include <cstdint>

namespace tinyformer {

// One AdamW step's numbers, the same for every element.
struct AdamWStep {
    float decay;           // 1 - lr · weight_decay, for the elements decay applies to
    float beta1, beta2;    // the moments' averaging
    float step_size;       // lr / (1 - beta1^t)
    float inv_sqrt_bias2;  // 1 / sqrt(1 - beta2^t)
    float eps;
};

// For i < n, in place:
//   p ← p · decay (where decays[i] is not 0),  m ← β1 m + (1-β1) g,  v ← β2 v + (1-β2) g²,
//   p ← p - step_size · m / (sqrt(v) · inv_sqrt_bias2 + eps).
// Each element on its own, so any split of [0, n) gives the same numbers.
void adamw_update(const AdamWStep& step, float* p, const float* g, float* m, float* v, const uint8_t* decays,
                  int64_t n);

// Σ g[i]² over i < n, in double: element i goes to running sum i % 8, each in order, and the
// eight sums are added 0 to 7. The order depends on the data alone, so the result is the same
// to the bit on every target (each product of two floats is exact in double).
double sum_of_squares(const float* g, int64_t n);

// g[i] ← factor · g[i], for i < n.
void scale_in_place(float* g, float factor, int64_t n);

}  // namespace tinyformer
