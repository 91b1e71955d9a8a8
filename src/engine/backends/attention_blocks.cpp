// Causal attention for one (batch, head), float32, in Highway vectors: compiled once for every
// x86-64 target (SSE4, AVX2, AVX-512, AVX-512 with BF16) and chosen at run time for the CPU it
// runs on (kernel_targets.hpp). See attention_blocks.hpp for what it computes and why.
//
// Highway's pattern: foreach_target.h includes this file again once per target, each time
// with HWY_NAMESPACE naming the target (N_AVX2, N_AVX3, ...) and the code between
// HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE compiled for that target's instructions; the
// part under HWY_ONCE is compiled once and calls the best one (HWY_DYNAMIC_DISPATCH).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/backends/attention_blocks.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention_blocks.hpp"
#include "rotate_row-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace tinyformer::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {

using Floats = hn::ScalableTag<float>;  // a register of floats: 4 (SSE4), 8 (AVX2) or 16 (AVX-512)
using Vec = hn::Vec<Floats>;

constexpr int64_t kColumnStep = 16;  // products and softmax rows go in whole 16s of columns

// The product's inner loop, for R rows and V registers of columns (V·N columns), in R·V
// registers of sums:
//   c[r][j] = Σ_{i<K} a(r, i) · b[i][j],  a(r, i) = a[r·a_row + i·a_step],  b's rows ldb apart.
// a is read one element at a time (broadcast to every lane), so a may be a matrix's rows
// (a_row = its width, a_step = 1) or its columns, i.e. its transpose (a_row = 1, a_step = its width).
template <int R, int V>
void block_of_rows(const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t ldb, int64_t K, float* c,
                   int64_t ldc) {
    const Floats f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    Vec sum[R][V];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < V; ++j) sum[r][j] = hn::Zero(f);
    for (int64_t i = 0; i < K; ++i) {
        Vec b_row[V];
        for (int j = 0; j < V; ++j) b_row[j] = hn::LoadU(f, b + i * ldb + j * N);
        for (int r = 0; r < R; ++r) {
            const Vec a_ri = hn::Set(f, a[r * a_row + i * a_step]);
            for (int j = 0; j < V; ++j) sum[r][j] = hn::MulAdd(a_ri, b_row[j], sum[r][j]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < V; ++j) hn::StoreU(sum[r][j], f, c + r * ldc + j * N);
}

// The block shapes, per target. AVX-512 has 32 registers of 16 floats: 8 rows of one or two
// registers (results up to 32 columns wide), else 4 rows of up to 4 registers, 16 sums that
// share each load of b. AVX2 and SSE4 have 16 registers (of 8 and 4 floats): 4 rows of two
// registers, 8 sums plus two rows of b and the broadcast a, with room to spare; more sums
// than that spill.
#if HWY_TARGET <= HWY_AVX3
constexpr bool kWideRegisters = true;
#else
constexpr bool kWideRegisters = false;
#endif
constexpr int kNarrowRows = 4, kNarrowRegisters = 2;

// Rows a product computes together for results up to `width` columns wide: 8 when they are
// at most 32 columns wide, else 4. (Every shape below divides them.)
int64_t rows_per_block(int64_t width) { return width <= 2 * kColumnStep ? 8 : 4; }

// c [rows, width] = a(rows, K) @ b [K, width], rows 4 or 8 (8 only for width <= 32), width a
// multiple of 16. Every element is the same sum in the same order whatever the blocks, so
// the result does not depend on them.
void product_of_rows(int64_t rows, const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t ldb,
                     int64_t K, int64_t width, float* c, int64_t ldc) {
    const int64_t N = static_cast<int64_t>(hn::Lanes(Floats()));
    if (!kWideRegisters || N != kColumnStep) {
        const int64_t block_width = kNarrowRegisters * N;  // divides 16
        for (int64_t r = 0; r < rows; r += kNarrowRows)
            for (int64_t column = 0; column < width; column += block_width)
                block_of_rows<kNarrowRows, kNarrowRegisters>(a + r * a_row, a_row, a_step, b + column, ldb, K,
                                                             c + r * ldc + column, ldc);
        return;
    }
    if (rows == 8) {
        if (width == N) block_of_rows<8, 1>(a, a_row, a_step, b, ldb, K, c, ldc);
        else block_of_rows<8, 2>(a, a_row, a_step, b, ldb, K, c, ldc);
        return;
    }
    for (int64_t column = 0; column < width; column += 4 * N) {  // strips of up to 64 columns
        const float* b_strip = b + column;
        float* c_strip = c + column;
        switch (std::min<int64_t>(4, (width - column) / N)) {
            case 1: block_of_rows<4, 1>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
            case 2: block_of_rows<4, 2>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
            case 3: block_of_rows<4, 3>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
            default: block_of_rows<4, 4>(a, a_row, a_step, b_strip, ldb, K, c_strip, ldc); break;
        }
    }
}

// Columns a row block may touch: its rows read keys up to its last row, in whole 16s.
int64_t visible_width(int64_t last_row, int64_t T) {
    return std::min(T, (last_row / kColumnStep + 1) * kColumnStep);
}

// out [d,T] = in [T,d]ᵀ (in's rows `stride` apart), so that a product can read a key's or
// value's features as a row. T and d are multiples of 16, so of 4: every vector target moves
// 4×4 tiles through four 4-float registers, which all of them have. (AVX-512 could move
// 16×16 tiles in whole registers; the 4×4 tiles already took the transposes from about 9 %
// of attention's time to about 4 %.)
void transpose_into(const float* in, int64_t stride, int64_t T, int64_t d, float* out) {
#if HWY_TARGET == HWY_SCALAR
    for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < d; ++c) out[c * T + t] = in[t * stride + c];
#else
    const hn::FixedTag<float, 4> f4;
    for (int64_t t = 0; t < T; t += 4)
        for (int64_t c = 0; c < d; c += 4) {
            const float* tile = in + t * stride + c;  // rows t..t+3: a b c d, features c..c+3
            const auto a = hn::LoadU(f4, tile), b = hn::LoadU(f4, tile + stride);
            const auto c_ = hn::LoadU(f4, tile + 2 * stride), d_ = hn::LoadU(f4, tile + 3 * stride);
            const auto ab_low = hn::InterleaveLower(f4, a, b), cd_low = hn::InterleaveLower(f4, c_, d_);    // a0 b0 a1 b1
            const auto ab_high = hn::InterleaveUpper(f4, a, b), cd_high = hn::InterleaveUpper(f4, c_, d_);  // a2 b2 a3 b3
            float* column = out + c * T + t;  // feature c's row of out, from position t
            hn::StoreU(hn::ConcatLowerLower(f4, cd_low, ab_low), f4, column);            // a0 b0 c0 d0
            hn::StoreU(hn::ConcatUpperUpper(f4, cd_low, ab_low), f4, column + T);        // a1 b1 c1 d1
            hn::StoreU(hn::ConcatLowerLower(f4, cd_high, ab_high), f4, column + 2 * T);  // a2 b2 c2 d2
            hn::StoreU(hn::ConcatUpperUpper(f4, cd_high, ab_high), f4, column + 3 * T);  // a3 b3 c3 d3
        }
#endif
}

// x's rows [T,d] (x_stride apart) rotated by rope's angles into out's (out_stride apart);
// sign -1 rotates back (rotate_row-inl.hpp, the rope op's rotation too). d is a multiple of
// 16, so of every target's lanes: each row is whole registers, with no tail to look for.
void rotate_rows(const float* x, int64_t x_stride, const HeadInputs& in, int64_t T, int64_t d, float sign, float* out,
                 int64_t out_stride) {
    const float *cos_pairs = in.cos_pairs, *sin_pairs = in.sin_pairs;
    for (int64_t t = 0; t < T; ++t)
#if HWY_TARGET == HWY_SCALAR
        RotateRow(x + t * x_stride, out + t * out_stride, cos_pairs + t * d, sin_pairs + t * d, d, sign);
#else
        RotateWholeRegisters(x + t * x_stride, out + t * out_stride, cos_pairs + t * d, sin_pairs + t * d, d, sign);
#endif
}

// Row i of the weights, in place: softmax(alpha · scores) over keys 0..i, exactly 0 after.
// Lanes past key i are masked to -inf before the maximum and to 0 after the exp.
void causal_softmax_row(float* row, int64_t i, int64_t T, float alpha) {
    const Floats f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    const int64_t width = visible_width(i, T);
    const Vec lane = hn::Iota(f, 0.0f), last_key = hn::Set(f, static_cast<float>(i)), scale = hn::Set(f, alpha);
    const Vec minus_infinity = hn::Set(f, -std::numeric_limits<float>::infinity()), zero = hn::Zero(f);
    Vec largest = minus_infinity;
    for (int64_t j = 0; j < width; j += N) {
        const auto past_last_key = hn::Gt(hn::Add(lane, hn::Set(f, static_cast<float>(j))), last_key);
        const Vec scaled = hn::Mul(scale, hn::LoadU(f, row + j));
        largest = hn::Max(largest, hn::IfThenElse(past_last_key, minus_infinity, scaled));
    }
    const Vec max = hn::MaxOfLanes(f, largest);  // in every lane
    Vec sum = zero;
    for (int64_t j = 0; j < width; j += N) {
        const auto past_last_key = hn::Gt(hn::Add(lane, hn::Set(f, static_cast<float>(j))), last_key);
        const Vec e = hn::Exp(f, hn::Sub(hn::Mul(scale, hn::LoadU(f, row + j)), max));
        const Vec masked = hn::IfThenElse(past_last_key, zero, e);
        hn::StoreU(masked, f, row + j);
        sum = hn::Add(sum, masked);
    }
    const Vec inv_sum = hn::Div(hn::Set(f, 1.0f), hn::SumOfLanes(f, sum));
    for (int64_t j = 0; j < width; j += N) hn::StoreU(hn::Mul(hn::LoadU(f, row + j), inv_sum), f, row + j);
    std::fill(row + width, row + T, 0.0f);
}

// Row i of dS, in place over dP: alpha · P ∘ (dP - Σ_j P ∘ dP), over the row's visible
// width (P is 0 past key i, and so is dS).
void causal_softmax_backward_row(const float* p, float* d_row, int64_t i, int64_t T, float alpha) {
    const Floats f;
    const int64_t N = static_cast<int64_t>(hn::Lanes(f));
    const int64_t width = visible_width(i, T);
    Vec dot = hn::Zero(f);
    for (int64_t j = 0; j < width; j += N) dot = hn::MulAdd(hn::LoadU(f, p + j), hn::LoadU(f, d_row + j), dot);
    const Vec p_dot_dp = hn::SumOfLanes(f, dot), scale = hn::Set(f, alpha);
    for (int64_t j = 0; j < width; j += N) {
        const Vec dp = hn::LoadU(f, d_row + j);
        hn::StoreU(hn::Mul(hn::Mul(scale, hn::LoadU(f, p + j)), hn::Sub(dp, p_dot_dp)), f, d_row + j);
    }
}

}  // namespace

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
    float* v_t = scratch;                 // [d,T]
    float* d_scores = scratch + T * d;    // [T,T]: dP, then dS in place
    float* d_rotated = d_scores + T * T;  // [T,d]: dq or dk before rotating back
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

}  // namespace tinyformer::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tinyformer::detail {

// The backward's, the larger: v_t [d,T], d_scores [T,T], d_rotated, q and k rotated [T,d] each.
// (The forward's k_t, q and k rotated fit in its first 3·T·d.)
int64_t attention_scratch_floats(int64_t T, int64_t d) { return 4 * T * d + T * T; }

HWY_EXPORT(attention_forward_block);
HWY_EXPORT(attention_backward_block);

void attention_forward_block(const HeadInputs& in, int64_t T, int64_t d, float alpha, float* heads,
                             int64_t heads_stride, float* weights, float* scratch) {
    HWY_DYNAMIC_DISPATCH(attention_forward_block)(in, T, d, alpha, heads, heads_stride, weights, scratch);
}

void attention_backward_block(const HeadInputs& in, const float* weights, const float* d_heads,
                              int64_t d_heads_stride, int64_t T, int64_t d, float alpha, float* dq, float* dk,
                              float* dv, int64_t grads_stride, float* scratch) {
    HWY_DYNAMIC_DISPATCH(attention_backward_block)(in, weights, d_heads, d_heads_stride, T, d, alpha, dq, dk, dv,
                                                   grads_stride, scratch);
}

}  // namespace tinyformer::detail
#endif  // HWY_ONCE
