// Matrix-vector products and activations for one position at a time (the decoder's KV-cached sampling):
// compiled once per target and dispatched at run time like the backend's own kernels
// (kernel_targets.hpp), so the portable build runs them in AVX2 or AVX-512 registers too.
#pragma once

#include <cstdint>

namespace tinyformer {

// Outputs are computed in blocks of up to this many (the sums stay in registers while the loop
// runs over the inputs); a transposed weight's rows are padded to a multiple of it.
constexpr int64_t kMatvecBlock = 64;

// out [n_out] = W x (+ bias, unless null) for one vector x [n_in], with W given transposed:
// W_t [n_in, stride], stride a multiple of kMatvecBlock, columns past n_out ignored. Each step
// is out += x[i] · (row i of W_t), a whole-register multiply-add over a block of outputs; the
// row-by-row form (a dot product per output) would end every output with a sum across a register.
void matvec_transposed(const float* W_t, int64_t stride, const float* bias, const float* x, int64_t n_in,
                       int64_t n_out, float* out);

// The same product for `rows` vectors at once: out[r] = W X[r] (+ bias) for r < rows, X [rows,
// n_in] and out [rows, n_out] with rows `x_stride` and `out_stride` floats apart. Several rows
// share each loaded row of W_t (the registers hold a block of outputs of several rows), and
// every output is summed in the same order as matvec_transposed's, so each row's result is
// bit for bit matvec_transposed's.
void matmul_transposed(const float* W_t, int64_t stride, const float* bias, const float* X, int64_t x_stride,
                       int64_t rows, int64_t n_in, int64_t n_out, float* out, int64_t out_stride);

// x = GELU(x), the tanh form, for n floats in place: the backend's own kernel
// (activation_kernels), so sampling and training compute the same function.
void gelu_tanh_in_place(float* x, int64_t n);

// out [n] = layer norm of x [n] with weight and bias (eps inside the square root): the
// backend's own kernel (layer_norm_kernels), so sampling normalises as training does.
void layer_norm_row(const float* x, const float* weight, const float* bias, int64_t n, float eps, float* out);

// x = softmax(x) over n >= 1 floats in place (the largest subtracted first).
void softmax_in_place(float* x, int64_t n);

}  // namespace tinyformer
