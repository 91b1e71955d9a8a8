// The own kernels' half of the oneDNN backend: OpenMP loops that split the float32 work over
// threads and run the own kernels (Google Highway's vectors: activation_kernels.cpp,
// layer_norm_kernels.cpp, elementwise_kernels.cpp, attention_blocks.cpp) on each thread's
// share — the elementwise and data-movement ops, GELU, layer norm, the causal softmax, rope,
// the embedding, cross-entropy's backward, and causal attention one (batch, head) at a time
// with its blocks in cache — each measured faster here than oneDNN's own. Declared here,
// defined in own_kernels_backend.cpp. The matrix products, the softmax backward and
// cross-entropy's forward are oneDNN's: OneDnnBackend (onednn.cpp) derives from this class and
// adds them. float64 calls (the gradient checks) go to the reference backend untouched, so
// they stay exact.
//
// Threads: oneDNN is built on OpenMP, and so are these loops, so the OpenMP thread count
// (threads.hpp's running threads) sets both. The loops split their work with static schedules
// and never add up partial results from different threads, so the same inputs give the same
// bits on any number of threads (onednn.cpp says how its products keep to that).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "tinyformer/engine/backend.hpp"
#include "attention_blocks.hpp"

namespace tinyformer {

namespace detail {

// A loop over fewer elements than this runs on one thread: waking the pool would cost more.
inline constexpr int64_t kParallelWork = 1 << 15;

// task(begin, n) over [0, total) in spans of whole cache lines, one run of spans per thread
// (static), or the whole on one thread when it is small.
template <class SpanTask>
void for_each_span(int64_t total, SpanTask&& task) {
    constexpr int64_t span = 4096;  // floats: 16 KiB, a few microseconds of work
    const int64_t spans = (total + span - 1) / span;
#pragma omp parallel for schedule(static) if (total > kParallelWork)
    for (int64_t s = 0; s < spans; ++s) task(s * span, std::min(span, total - s * span));
}

}  // namespace detail

// Every kernel of Backend but the products (gemm), softmax_backward and cross_entropy_forward,
// which a subclass supplies, with name().
class OwnKernelsBackend : public Backend {
public:
    void to_bf16(const Tensor& x, Tensor& out) override;

    void add(const Tensor& a, const Tensor& b, Tensor& out) override;
    void mul(const Tensor& a, const Tensor& b, Tensor& out) override;
    void sum_to(const Tensor& in, Tensor& out) override;
    void scale(const Tensor& x, double factor, Tensor& out) override;
    void add_inplace(Tensor& dst, const Tensor& src) override;
    void transpose(const Tensor& x, int dim0, int dim1, Tensor& out) override;

    void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out) override;
    void embedding_backward(const Tensor& ids, const Tensor& d_out, Tensor& d_table) override;

    void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) override;
    void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                             const Tensor& dy, Tensor& dx, Tensor& d_weight, Tensor& d_bias) override;

    void gelu_forward(const Tensor& x, Tensor& y) override;
    void gelu_backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) override;

    void softmax_forward(const Tensor& x, bool causal, Tensor& y) override;

    void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal,
                           Tensor& heads, Tensor& weights) override;
    void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                            const Tensor& d_heads, double alpha, bool causal, Tensor& dq, Tensor& dk,
                            Tensor& dv) override;
    void self_attention_forward(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, double alpha,
                                bool causal, Tensor& merged, Tensor& weights) override;
    void self_attention_backward(const Tensor& qkv, const Tensor& weights, const Tensor& d_merged, int64_t n_heads,
                                 bool rope, int64_t start, double alpha, bool causal, Tensor& d_qkv) override;

    void rope(const Tensor& x, int64_t start, bool inverse, Tensor& out) override;
    void qkv_to_heads(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, Tensor& heads) override;
    void heads_to_qkv(const Tensor& d_heads, bool rope, int64_t start, Tensor& d_qkv) override;

    void cross_entropy_backward(const Tensor& probs, const Tensor& targets, double d_loss, Tensor& d_logits) override;

protected:
    std::unique_ptr<Backend> reference_ = make_reference_backend();  // takes every call not in float32

private:
    // cos and sin of every angle rope needs for one (start, T, d), [T, d] each, one entry per
    // feature so that a row rotates a register at a time (rotate_row, HeadInputs): for pair j of
    // position t, both of its features hold cos theta, and sin_pairs holds -sin theta, +sin theta.
    struct RopeTable {
        int64_t start = -1, T = 0, d = 0;
        std::vector<float> cos_pairs, sin_pairs;
    };

    template <class Task>
    void for_each_head(int64_t pairs, int64_t T, int64_t d, Task&& task);
    static detail::HeadInputs head_of(const float* q, int64_t D, const RopeTable* table);
    const RopeTable& rope_table(int64_t start, int64_t T, int64_t d);
    void move_qkv(float* qkv, float* heads, int64_t B, int64_t T, int64_t D, int64_t H, bool rope, int64_t start,
                  bool to_heads);

    std::vector<float> parameter_shares_;   // layer_norm_backward's, [blocks of rows, 2, C]
    std::vector<float> row_sums_;           // sum_to's, [blocks of rows, inner]
    RopeTable rope_table_;  // the last one made: training asks for the same one every time
    std::vector<float> attention_scratch_;  // for_each_head's, for every thread
};

}  // namespace tinyformer
