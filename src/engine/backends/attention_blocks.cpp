#include "attention_blocks.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "fast_exp.hpp"

namespace tinyformer::detail {
namespace {

constexpr int64_t kLanes = 16;  // floats in a Vec16

// v's lanes in the order the indices give (GCC and clang spell this builtin differently).
#if defined(__clang__)
#define LANES_IN_ORDER(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
#define LANES_IN_ORDER(v, ...) __builtin_shuffle(v, Int16{__VA_ARGS__})
#endif

// The sum and the largest of a Vec16's lanes: the upper half folded onto the lower, four times.
float lane_sum(const Vec16& lanes) {
    Vec16 v = lanes;
    v += LANES_IN_ORDER(v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    v += LANES_IN_ORDER(v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    v += LANES_IN_ORDER(v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    v += LANES_IN_ORDER(v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    return v[0];
}
float lane_max(const Vec16& lanes) {
    Vec16 v = lanes;
    Vec16 other = LANES_IN_ORDER(v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    v = v > other ? v : other;
    other = LANES_IN_ORDER(v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    v = v > other ? v : other;
    other = LANES_IN_ORDER(v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    v = v > other ? v : other;
    other = LANES_IN_ORDER(v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    v = v > other ? v : other;
    return v[0];
}

// The product's inner loop, for R rows and 16·V columns held in R·V registers (R·V <= 16):
//   c[r][j] = Σ_{i<K} a(r, i) · b[i][j],  a(r, i) = a[r·a_row + i·a_step],  b's rows ldb apart.
// a is read one element at a time (broadcast to every lane), so a may be a matrix's rows
// (a_row = its width, a_step = 1) or its columns, i.e. its transpose (a_row = 1, a_step = its width).
template <int R, int V>
void block_of_rows(const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t ldb, int64_t K, float* c,
                   int64_t ldc) {
    Vec16 sum[R][V];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < V; ++j) sum[r][j] = Vec16{};  // in registers: an `= {}` here became a memset
    for (int64_t i = 0; i < K; ++i) {
        Vec16 b_row[V];
        for (int j = 0; j < V; ++j) b_row[j] = lanes_at(b + i * ldb + j * kLanes);
        for (int r = 0; r < R; ++r) {
            const float a_ri = a[r * a_row + i * a_step];
            for (int j = 0; j < V; ++j) sum[r][j] += a_ri * b_row[j];
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < V; ++j) lanes_at(c + r * ldc + j * kLanes) = sum[r][j];
}

// Rows a product computes together for results up to `width` columns wide: 8 when they are
// at most two registers wide, else 4, so that 8 to 16 registers of sums share each load of b.
int64_t rows_per_block(int64_t width) { return width <= 2 * kLanes ? 8 : 4; }

// The block shapes above fill AVX-512's 32 registers, one Vec16 each. Where a Vec16 takes
// two registers (AVX2's 16) or four (SSE's 16: a build without -march=native), 16 sums would
// not fit and every step would spill them to memory (the portable build's attention took 18×
// AVX-512's time). There a block keeps two Vec16 sums, two rows of one Vec16: at most 8 of
// the 16 registers. (One shape for both, so the portable build's tests cover it.)
#if defined(__AVX512F__)
constexpr bool kWideRegisters = true;
#else
constexpr bool kWideRegisters = false;
#endif
constexpr int kNarrowRows = 2;

// c [rows, width] = a(rows, K) @ b [K, width], rows 4 or 8 (8 only for width <= 32), width a
// multiple of 16, in strips of up to 64 columns. Every element is the same sum in the same
// order whatever the blocks, so the result does not depend on them.
void product_of_rows(int64_t rows, const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t ldb,
                     int64_t K, int64_t width, float* c, int64_t ldc) {
    if (!kWideRegisters) {
        for (int64_t r = 0; r < rows; r += kNarrowRows)
            for (int64_t column = 0; column < width; column += kLanes)
                block_of_rows<kNarrowRows, 1>(a + r * a_row, a_row, a_step, b + column, ldb, K, c + r * ldc + column, ldc);
        return;
    }
    if (rows == 8) {
        if (width == kLanes) block_of_rows<8, 1>(a, a_row, a_step, b, ldb, K, c, ldc);
        else block_of_rows<8, 2>(a, a_row, a_step, b, ldb, K, c, ldc);
        return;
    }
    for (int64_t column = 0; column < width; column += 4 * kLanes) {
        const float* b_strip = b + column;
        float* c_strip = c + column;
        switch (std::min<int64_t>(4, (width - column) / kLanes)) {
            case 1: block_of_rows<4, 1>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
            case 2: block_of_rows<4, 2>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
            case 3: block_of_rows<4, 3>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
            default: block_of_rows<4, 4>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
        }
    }
}

// Columns a row block may touch: its rows read keys up to its last row, in whole 16s.
int64_t visible_width(int64_t last_row, int64_t T) { return std::min(T, (last_row / kLanes + 1) * kLanes); }

// out [d,T] = in [T,d]ᵀ (in's rows `stride` apart), so that a product can read a key's or
// value's features as a row.
void transpose_into(const float* in, int64_t stride, int64_t T, int64_t d, float* out) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < d; ++c) out[c * T + t] = in[t * stride + c];
}

// x's rows [T,d] (x_stride apart) rotated by rope's angles into out's (out_stride apart);
// sign -1 rotates back. Pair (u0, u1) turned by theta is (u0 c - u1 s, u1 c + u0 s): the row
// times cos_pairs, plus the row with each pair swapped times sin_pairs (-s, +s).
void rotate_rows(const float* x, int64_t x_stride, const HeadInputs& in, int64_t T, int64_t d, float sign, float* out,
                 int64_t out_stride) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < d; j += kLanes) {
            const Vec16 u = lanes_at(x + t * x_stride + j);
            const Vec16 c = lanes_at(in.cos_pairs + t * d + j), s = sign * lanes_at(in.sin_pairs + t * d + j);
            const Vec16 pairs_swapped = LANES_IN_ORDER(u, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
            lanes_at(out + t * out_stride + j) = u * c + pairs_swapped * s;
        }
}

// Row i of the weights, in place: softmax(alpha · scores) over keys 0..i, exactly 0 after.
// Lanes past key i are masked to -inf before the maximum and to 0 after the exp.
void causal_softmax_row(float* row, int64_t i, int64_t T, float alpha) {
    const int64_t width = visible_width(i, T);
    const Vec16 lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const Vec16 minus_infinity = Vec16{} - std::numeric_limits<float>::infinity(), zero = {};
    Vec16 largest = minus_infinity;
    for (int64_t j = 0; j < width; j += kLanes) {
        const Vec16 scaled = alpha * lanes_at(row + j);
        const Vec16 masked = lane + static_cast<float>(j) > static_cast<float>(i) ? minus_infinity : scaled;
        largest = largest > masked ? largest : masked;
    }
    const float max = lane_max(largest);
    Vec16 sum = {};
    for (int64_t j = 0; j < width; j += kLanes) {
        Vec16 e = alpha * lanes_at(row + j) - max;
        fast_exp_in_place(e);
        const Vec16 masked = lane + static_cast<float>(j) > static_cast<float>(i) ? zero : e;
        lanes_at(row + j) = masked;
        sum += masked;
    }
    const float inv_sum = 1.0f / lane_sum(sum);
    for (int64_t j = 0; j < width; j += kLanes) lanes_at(row + j) *= inv_sum;
    std::fill(row + width, row + T, 0.0f);
}

// Row i of dS, in place over dP: alpha · P ∘ (dP - Σ_j P ∘ dP), over the row's visible
// width (P is 0 past key i, and so is dS).
void causal_softmax_backward_row(const float* p, float* d_row, int64_t i, int64_t T, float alpha) {
    const int64_t width = visible_width(i, T);
    Vec16 dot = {};
    for (int64_t j = 0; j < width; j += kLanes) dot += lanes_at(p + j) * lanes_at(d_row + j);
    const float p_dot_dp = lane_sum(dot);
    for (int64_t j = 0; j < width; j += kLanes)
        lanes_at(d_row + j) = alpha * lanes_at(p + j) * (lanes_at(d_row + j) - p_dot_dp);
}

}  // namespace

// The backward's, the larger: v_t [d,T], d_scores [T,T], d_rotated, q and k rotated [T,d] each.
// (The forward's k_t, q and k rotated fit in its first 3·T·d.)
int64_t attention_scratch_floats(int64_t T, int64_t d) { return 4 * T * d + T * T; }

// Rows of a block (R = rows_per_block of the result's width) read keys up to the block's last
// row, so a product over keys stops there: on the scores it stops at visible_width, on the
// weights' rows at key i + R - 1, and down the weights' columns j.. it starts at row j.
void attention_forward_block(const HeadInputs& in, int64_t T, int64_t d, float alpha, float* heads,
                             int64_t heads_stride, float* weights, float* scratch) {
    const bool rope = in.cos_pairs != nullptr;
    const float *q = in.q, *k = in.k;
    int64_t qk_stride = in.stride;
    if (rope) {  // q and k rotated, [T,d] each
        float *q_rotated = scratch + T * d, *k_rotated = scratch + 2 * T * d;
        rotate_rows(in.q, in.stride, in, T, d, 1.0f, q_rotated, d);
        rotate_rows(in.k, in.stride, in, T, d, 1.0f, k_rotated, d);
        q = q_rotated, k = k_rotated, qk_stride = d;
    }
    float* k_t = scratch;  // [d,T]
    transpose_into(k, qk_stride, T, d, k_t);
    const int64_t score_rows = rows_per_block(T), head_rows = rows_per_block(d);
    for (int64_t i = 0; i < T; i += score_rows) {  // scores q kᵀ, into the weights' rows [T,T]
        const int64_t width = visible_width(i + score_rows - 1, T);
        product_of_rows(score_rows, q + i * qk_stride, qk_stride, 1, k_t, T, d, width, weights + i * T, T);
    }
    for (int64_t i = 0; i < T; ++i) causal_softmax_row(weights + i * T, i, T, alpha);
    for (int64_t i = 0; i < T; i += head_rows)  // heads = weights v
        product_of_rows(head_rows, weights + i * T, T, 1, in.v, in.stride, i + head_rows, d, heads + i * heads_stride,
                        heads_stride);
}

void attention_backward_block(const HeadInputs& in, const float* weights, const float* d_heads,
                              int64_t d_heads_stride, int64_t T, int64_t d, float alpha, float* dq, float* dk,
                              float* dv, int64_t grads_stride, float* scratch) {
    const bool rope = in.cos_pairs != nullptr;
    float* v_t = scratch;                   // [d,T]
    float* d_scores = scratch + T * d;      // [T,T]: dP, then dS in place
    float* d_rotated = d_scores + T * T;    // [T,d]: dq or dk before rotating back
    const float *q = in.q, *k = in.k;
    int64_t qk_stride = in.stride;
    if (rope) {  // the forward's rotated q and k, again
        float *q_rotated = d_rotated + T * d, *k_rotated = d_rotated + 2 * T * d;
        rotate_rows(in.q, in.stride, in, T, d, 1.0f, q_rotated, d);
        rotate_rows(in.k, in.stride, in, T, d, 1.0f, k_rotated, d);
        q = q_rotated, k = k_rotated, qk_stride = d;
    }
    transpose_into(in.v, in.stride, T, d, v_t);
    const int64_t score_rows = rows_per_block(T), head_rows = rows_per_block(d);
    for (int64_t i = 0; i < T; i += score_rows) {  // dP = d_heads vᵀ
        const int64_t width = visible_width(i + score_rows - 1, T);
        product_of_rows(score_rows, d_heads + i * d_heads_stride, d_heads_stride, 1, v_t, T, d, width,
                        d_scores + i * T, T);
    }
    for (int64_t i = 0; i < T; ++i) causal_softmax_backward_row(weights + i * T, d_scores + i * T, i, T, alpha);
    // dq = dS k and dk = dSᵀ q; with rope each lands in d_rotated first, to be rotated back.
    const int64_t work_stride = rope ? d : grads_stride;
    float* dq_work = rope ? d_rotated : dq;
    for (int64_t i = 0; i < T; i += head_rows)
        product_of_rows(head_rows, d_scores + i * T, T, 1, k, qk_stride, i + head_rows, d, dq_work + i * work_stride,
                        work_stride);
    if (rope) rotate_rows(d_rotated, d, in, T, d, -1.0f, dq, grads_stride);
    float* dk_work = rope ? d_rotated : dk;
    for (int64_t j = 0; j < T; j += head_rows)
        // Rows j.. of dk: columns j.. of dS, read down from row j (above it they are 0).
        product_of_rows(head_rows, d_scores + j * T + j, 1, T, q + j * qk_stride, qk_stride, T - j, d,
                        dk_work + j * work_stride, work_stride);
    if (rope) rotate_rows(d_rotated, d, in, T, d, -1.0f, dk, grads_stride);
    for (int64_t j = 0; j < T; j += head_rows)  // dv = Pᵀ d_heads, the same way down P's columns
        product_of_rows(head_rows, weights + j * T + j, 1, T, d_heads + j * d_heads_stride, d_heads_stride, T - j, d,
                        dv + j * grads_stride, grads_stride);
}

}  // namespace tinyformer::detail
