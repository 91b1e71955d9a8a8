// Generation, one character at a time, in plain loops — llama2.c's run.c for our model.
//
// For one new position the model's work is a handful of matrix-vector products (about
// 100k multiply-adds for the lesson model) plus attention over the cached keys. At that
// size, the per-op costs of the training path — a tensor and a graph node per op, a kernel
// dispatched through a library — would be most of the time, so the decoder keeps its own
// buffers and the key/value cache and computes the contract's formulas directly. The tests
// hold it to the model's full forward pass.
#pragma once

#include <cstdint>
#include <vector>

#include "tinyformer/model/model.hpp"

namespace tinyformer {

class Decoder {
public:
    explicit Decoder(const Transformer& model);  // float32 models; keeps views of the weights

    // Forgets every cached position; the next character is position 0.
    void reset();
    // Feeds the next character and returns the logits [V] for the one after it. With rope,
    // a full cache drops its oldest position first (attention then reads the last `context`
    // positions); learned positions end at the context, so the caller must reset() and feed
    // the last characters again (throws otherwise).
    const std::vector<float>& step(int32_t id);

    // Forgets every cached position and feeds ids[0..n) at positions 0..n-1 (1 <= n <=
    // context) in one pass: each layer's products for all n positions at once (several rows
    // per loaded weight), bit for bit the logits and cache that n step() calls give. Returns
    // the logits [V] after the last one.
    const std::vector<float>& prefill(const int32_t* ids, int64_t n);
    // prefill(), also writing every position's logits into `logits` [n, V]: row p is what
    // the logits would be had the text ended at position p (each row step()'s bits).
    void prefill(const int32_t* ids, int64_t n, float* logits);

    const ModelConfig& config() const { return config_; }
    int64_t length() const { return length_; }            // positions cached
    int64_t next_position() const { return position_; }   // absolute position of the next character

    // What the last step() (or prefill()'s last position) read: layer `layer`, head `head`'s
    // attention weights over the cached slots [length()] (position p sits in slot p mod
    // context).
    const float* attention_weights(int64_t layer, int64_t head) const;

    // Head ablation, as inspect's (ForwardHooks): from the next step() on, head `head` of
    // layer `layer` outputs `replacement` [d] instead of its weights·v — zeros if it is
    // empty ("zero ablation"), or the head's mean output ("mean ablation"). Its attention
    // weights are still computed and kept.
    void ablate(int64_t layer, int64_t head, const std::vector<float>& replacement = {});
    // Every head as trained again, from the next step() on.
    void clear_ablations();

private:
    // The weights of one block. Matrices are copies, transposed to [in, out] (see linear()
    // in decoder.cpp); vectors point into the model.
    struct Layer {
        const float *ln1_weight, *ln1_bias, *ln2_weight, *ln2_bias, *fc1_bias, *fc2_bias;
        std::vector<float> q_proj_t, k_proj_t, v_proj_t, out_proj_t, fc1_t, fc2_t;
        // The cache, a ring: position p sits in slot p mod context.
        std::vector<float> keys_t;  // [H, d, context]: keys transposed (and scaled by 1/sqrt(d)), rows padded
        std::vector<float> values;  // [H, context, d], rows padded
        std::vector<float> weights;  // [H, context]: the last position's attention weights
        std::vector<float> ablated_output;  // [H, d]: an ablated head's replacement output
        std::vector<bool> ablated;          // [H]
    };
    void attention(Layer& layer, const float* h, float* out);  // h [D] → out [D]
    // One head's query at cache slot `slot` reads slots 0..cached-1: its weights into
    // layer.weights, its output [d] into `out`.
    void attend(Layer& layer, int64_t head, const float* q, int64_t cached, float* out);
    void feed_rows(const int32_t* ids, int64_t n);             // prefill()'s layers: rows_x_ [n, D]
    void set_angles(int64_t position);                         // rope_cos_, rope_sin_ at `position`
    void rotate(float* u) const;                               // rope on one head's [d], at those angles

    ModelConfig config_;
    bool rope_;
    const float *tok_emb_, *pos_emb_, *ln_f_weight_, *ln_f_bias_;
    std::vector<float> lm_head_t_;  // [D, V]
    std::vector<Layer> layers_;
    std::vector<double> inverse_frequency_;  // [d/2]: 10000^(-2j/d)
    std::vector<float> rope_cos_, rope_sin_;  // [d/2]: the current position's angles
    std::vector<float> window_cos_, window_sin_;  // [T, d/2]: those of positions 0..T-1
    int64_t length_ = 0, position_ = 0;
    // Scratch for one position.
    std::vector<float> x_, h_, q_, k_, v_, heads_, attn_out_, hidden_, logits_;
    // Scratch for prefill(): [context, D] each, hidden [context, 4D].
    std::vector<float> rows_x_, rows_h_, rows_q_, rows_k_, rows_v_, rows_heads_, rows_out_, rows_hidden_;
};

}  // namespace tinyformer
