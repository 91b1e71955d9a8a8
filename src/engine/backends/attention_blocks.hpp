// Causal attention for one (batch, head), float32, with every block in cache: the oneDNN
// backend's attention_forward/backward and self_attention_forward/backward run these on each
// thread's share of the (batch, head) pairs. For T a multiple of 16 and d a multiple of 16.
//
// Why by hand: a head's q, k, v [T,d] and its weights [T,T] are a few kilobytes. Done as
// batched products, attention writes its T×T scores out to memory, reads them back for the
// softmax and again for the product with v, and computes the masked upper triangle only to
// throw it away; self-attention also first copied each head out of the q/k/v projection (and
// rotated it), and back for the gradient. Here a head is read where it lies, and each product
// walks rows in blocks of 4 or 8 that stop at the last key their rows may read (rounded up to
// 16 columns): about 5/8 of the full products. The softmax runs on rows just written.
#pragma once

#include <cstdint>

namespace tinyformer::detail {

// One (batch, head)'s inputs: q, k and v [T,d], row t of each `stride` floats after row t-1
// (d for separate [T,d] blocks; 3D for a head inside self-attention's qkv [T,3D]). With
// rope's tables, q and k are rotated first. The tables are [T,d], one entry per feature so
// that a row rotates sixteen features at a time: for pair j of position t, both of its
// features hold cos theta, and sin_pairs holds -sin theta, +sin theta (see rotate_rows).
struct HeadInputs {
    const float *q, *k, *v;
    int64_t stride;
    const float* cos_pairs = nullptr;  // null: no rotation
    const float* sin_pairs = nullptr;
};

// Floats attention_forward_block / attention_backward_block need as scratch for one (T, d).
int64_t attention_scratch_floats(int64_t T, int64_t d);

// → weights = softmax(alpha · q kᵀ, causal) [T,T] (exact zeros above the diagonal) and
// heads = weights v [T,d], written with rows heads_stride apart.
void attention_forward_block(const HeadInputs& in, int64_t T, int64_t d, float alpha, float* heads,
                             int64_t heads_stride, float* weights, float* scratch);

// The backward from the forward's weights P and d_heads [T,d] (rows d_heads_stride apart):
// dv = Pᵀ d_heads, dS = alpha · P ∘ (dP - rowsum(P ∘ dP)) with dP = d_heads vᵀ, dq = dS k,
// dk = dSᵀ q (rotated back when `in` has rope's tables). dq, dk and dv [T,d], rows
// grads_stride apart, are overwritten.
void attention_backward_block(const HeadInputs& in, const float* weights, const float* d_heads,
                              int64_t d_heads_stride, int64_t T, int64_t d, float alpha, float* dq, float* dk,
                              float* dv, int64_t grads_stride, float* scratch);

}  // namespace tinyformer::detail
