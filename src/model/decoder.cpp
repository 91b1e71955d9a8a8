#include "tinyformer/model/decoder.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <omp.h>

#include "tinyformer/engine/vector_kernels.hpp"

namespace tinyformer {

namespace {

// Weight rows are padded to whole blocks of the matrix-vector kernel's outputs.
int64_t padded(int64_t n) { return (n + kMatvecBlock - 1) / kMatvecBlock * kMatvecBlock; }

// A product with at least this many weights (n_in · n_out) is split across the threads
// (set_num_threads) by blocks of kMatvecBlock outputs. Each output is still summed whole by
// one thread, in the same order, so the bits do not depend on the thread count; and each
// thread gets the same blocks every time (a static schedule), so it keeps reading the same
// columns of each weight. At the Shakespeare shape (D=128, 4 layers) one character reads
// 3.2 MB of weights, 2 MB of them in the MLP's two 128 × 512 products: one core streams
// them from L3 at every step; two cores each read their half of them. Smaller products (the
// attention's 128 × 128, the lesson's 64 × 256) are over before a second thread would have
// started: splitting them too made sampling slower (docs/performance.md).
constexpr int64_t kWeightsWorthThreads = 32768;

// Runs product(first, count) for the outputs first..first+count-1 of an n_in × n_out product:
// once for all of them, or, for a product worth it, once per block of kMatvecBlock outputs,
// the blocks split across the threads. (A template, not a std::function: the lesson model's
// products take a fraction of a microsecond, and a std::function holding the callers' lambdas
// was a heap allocation per product, 3-6 % of sampling.)
template <typename Product>
void over_outputs(int64_t n_in, int64_t n_out, const Product& product) {
    if (n_in * n_out < kWeightsWorthThreads || omp_in_parallel()) return product(0, n_out);
    const int64_t blocks = (n_out + kMatvecBlock - 1) / kMatvecBlock;
    const int threads = static_cast<int>(std::min<int64_t>(blocks, omp_get_max_threads()));
    if (threads < 2) return product(0, n_out);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t block = 0; block < blocks; ++block)
        product(block * kMatvecBlock, std::min(kMatvecBlock, n_out - block * kMatvecBlock));
}

// out = W x (+ bias) for one vector x [n_in], with W given transposed, W^T [n_in, padded(n_out)]:
// engine/vector_kernels, in whatever registers this CPU has. Outputs first.. are computed from
// W^T's columns first.. .
void linear(const float* W_t, int64_t stride, const float* bias, const float* x, int64_t n_in, int64_t n_out,
            float* out) {
    over_outputs(n_in, n_out, [&](int64_t first, int64_t count) {
        matvec_transposed(W_t + first, stride, bias ? bias + first : nullptr, x, n_in, count, out + first);
    });
}

// The same for `rows` vectors X [rows, n_in] at once (the prefill), into out [rows, n_out]:
// each row's outputs have linear()'s bits (vector_kernels.hpp).
void linear_rows(const float* W_t, int64_t stride, const float* bias, const float* X, int64_t rows, int64_t n_in,
                 int64_t n_out, float* out) {
    over_outputs(n_in, n_out, [&](int64_t first, int64_t count) {
        matmul_transposed(W_t + first, stride, bias ? bias + first : nullptr, X, n_in, rows, n_in, count,
                          out + first, n_out);
    });
}

// A weight [out, in] of the model, copied transposed to [in, padded(out)] for linear() above.
std::vector<float> transposed(const Transformer& model, const std::string& name) {
    const Tensor& w = model.parameters().get(name);
    const int64_t n_out = w.dim(0), n_in = w.dim(1), stride = padded(n_out);
    const float* pw = w.data<float>();
    std::vector<float> w_t(n_in * stride, 0.0f);
    for (int64_t o = 0; o < n_out; ++o)
        for (int64_t i = 0; i < n_in; ++i) w_t[i * stride + o] = pw[o * n_in + i];
    return w_t;
}

// The model's layer norm (eps 1e-5, as training's) on one position: engine/vector_kernels.
void layer_norm(const float* x, const float* weight, const float* bias, int64_t D, float* out) {
    layer_norm_row(x, weight, bias, D, 1e-5f, out);
}

const float* weights(const Transformer& model, const std::string& name) {
    return model.parameters().get(name).data<float>();
}

}  // namespace

Decoder::Decoder(const Transformer& model) : config_(model.config()), rope_(model.config().positions == "rope") {
    if (model.parameters().dtype() != DType::f32) throw std::invalid_argument("decoder: the model must be float32");
    const int64_t D = config_.d_model, H = config_.n_heads, T = config_.context, d = config_.head_width();
    tok_emb_ = weights(model, "tok_emb.weight");
    pos_emb_ = rope_ ? nullptr : weights(model, "pos_emb.weight");
    ln_f_weight_ = weights(model, "ln_f.weight");
    ln_f_bias_ = weights(model, "ln_f.bias");
    lm_head_t_ = transposed(model, "lm_head.weight");
    for (int64_t i = 0; i < config_.n_layers; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        layers_.push_back(Layer{weights(model, b + "ln1.weight"), weights(model, b + "ln1.bias"),
                                weights(model, b + "ln2.weight"), weights(model, b + "ln2.bias"),
                                weights(model, b + "mlp.fc1.bias"), weights(model, b + "mlp.fc2.bias"),
                                transposed(model, b + "attn.q_proj.weight"), transposed(model, b + "attn.k_proj.weight"),
                                transposed(model, b + "attn.v_proj.weight"), transposed(model, b + "attn.out_proj.weight"),
                                transposed(model, b + "mlp.fc1.weight"), transposed(model, b + "mlp.fc2.weight"),
                                std::vector<float>(H * d * padded(T)), std::vector<float>(H * T * padded(d)),
                                std::vector<float>(H * T), std::vector<float>(H * d), std::vector<bool>(H, false)});
    }
    x_.resize(D), h_.resize(D), q_.resize(D), k_.resize(D), v_.resize(D), heads_.resize(D), attn_out_.resize(D);
    hidden_.resize(4 * D), logits_.resize(config_.vocab_size);
    for (int64_t j = 0; j < d / 2; ++j) inverse_frequency_.push_back(std::pow(10000.0, -2.0 * j / d));
    rope_cos_.resize(d / 2), rope_sin_.resize(d / 2);
    if (rope_) {
        std::vector<float> window_cos, window_sin;  // set_angles reads the tables once they are whole
        for (int64_t position = 0; position < T; ++position) {
            set_angles(position);
            window_cos.insert(window_cos.end(), rope_cos_.begin(), rope_cos_.end());
            window_sin.insert(window_sin.end(), rope_sin_.begin(), rope_sin_.end());
        }
        window_cos_ = std::move(window_cos), window_sin_ = std::move(window_sin);
    }
}

void Decoder::reset() { length_ = 0, position_ = 0; }

// Rotates pairs (2j, 2j+1) of one head's [d] by this position's angles (see step()).
void Decoder::rotate(float* u) const {
    const int64_t half = config_.head_width() / 2;
    for (int64_t j = 0; j < half; ++j) {
        const float c = rope_cos_[j], s = rope_sin_[j];
        const float u0 = u[2 * j], u1 = u[2 * j + 1];
        u[2 * j] = u0 * c - u1 * s;
        u[2 * j + 1] = u0 * s + u1 * c;
    }
}

// This position's angles theta_j = position · 10000^(-2j/d), in double as the training path's
// rope; those of positions 0..T-1 computed once, in the constructor.
void Decoder::set_angles(int64_t position) {
    const size_t half = rope_cos_.size();
    if (position < config_.context && !window_cos_.empty()) {
        std::copy_n(window_cos_.data() + position * half, half, rope_cos_.data());
        std::copy_n(window_sin_.data() + position * half, half, rope_sin_.data());
        return;
    }
    for (size_t j = 0; j < half; ++j) {
        const double theta = static_cast<double>(position) * inverse_frequency_[j];
        rope_cos_[j] = static_cast<float>(std::cos(theta));
        rope_sin_[j] = static_cast<float>(std::sin(theta));
    }
}

// softmax(q·k / sqrt(d)) over the cached keys, then the weighted sum of their values.
void Decoder::attend(Layer& layer, int64_t head, const float* q, int64_t cached, float* out) {
    const int64_t T = config_.context, d = config_.head_width();
    const float* keys_t = layer.keys_t.data() + head * d * padded(T);  // [d, padded(T)]
    const float* values = layer.values.data() + head * T * padded(d);  // [T, padded(d)]
    // scores[p] = q · key_p / sqrt(d) for every cached slot: a product with the keys' matrix.
    float* scores = layer.weights.data() + head * T;  // [cached], softmaxed in place
    linear(keys_t, padded(T), nullptr, q, d, cached, scores);
    softmax_in_place(scores, cached);  // the attention weights
    // The head's output: the values weighted by them, a product with the values' matrix.
    linear(values, padded(d), nullptr, scores, cached, d, out);
    if (layer.ablated[head])  // ablation: the head's output replaced, its weights kept
        std::copy_n(layer.ablated_output.data() + head * d, d, out);
}

// q, k, v = h W^T; this position's k and v join the cache; each head's query reads every
// cached position: softmax(q·k / sqrt(d)) weighted sum of v; the heads, side by side, go
// through out_proj.
void Decoder::attention(Layer& layer, const float* h, float* out) {
    const int64_t D = config_.d_model, H = config_.n_heads, T = config_.context, d = config_.head_width();
    linear(layer.q_proj_t.data(), padded(D), nullptr, h, D, D, q_.data());  // [D] = H heads of [d]
    linear(layer.k_proj_t.data(), padded(D), nullptr, h, D, D, k_.data());
    linear(layer.v_proj_t.data(), padded(D), nullptr, h, D, D, v_.data());
    // Attention sums over the cached positions in any order, so once the ring is full the
    // new position simply takes the oldest one's slot.
    const int64_t slot = position_ % T, cached = length_ + 1;  // slots to read, this one included
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (int64_t head = 0; head < H; ++head) {
        float* q = q_.data() + head * d;
        float* k = k_.data() + head * d;
        if (rope_) {
            rotate(q);
            rotate(k);
        }
        float* keys_t = layer.keys_t.data() + head * d * padded(T);  // [d, padded(T)]
        float* values = layer.values.data() + head * T * padded(d);  // [T, padded(d)]
        for (int64_t i = 0; i < d; ++i) keys_t[i * padded(T) + slot] = k[i] * scale;  // stored pre-scaled
        std::copy_n(v_.data() + head * d, d, values + slot * padded(d));
        attend(layer, head, q, cached, heads_.data() + head * d);
    }
    linear(layer.out_proj_t.data(), padded(D), nullptr, heads_.data(), D, D, out);
}

const float* Decoder::attention_weights(int64_t layer, int64_t head) const {
    if (layer < 0 || layer >= config_.n_layers || head < 0 || head >= config_.n_heads)
        throw std::out_of_range("decoder: no layer " + std::to_string(layer) + " head " + std::to_string(head));
    return layers_[layer].weights.data() + head * config_.context;
}

void Decoder::ablate(int64_t layer, int64_t head, const std::vector<float>& replacement) {
    const int64_t d = config_.head_width();
    attention_weights(layer, head);  // checks the indices
    if (!replacement.empty() && static_cast<int64_t>(replacement.size()) != d)
        throw std::invalid_argument("decoder: an ablated head's replacement has " + std::to_string(replacement.size()) +
                                    " values, expected d = " + std::to_string(d));
    Layer& block = layers_[layer];
    block.ablated[head] = true;
    float* output = block.ablated_output.data() + head * d;
    if (replacement.empty()) std::fill_n(output, d, 0.0f);
    else std::copy(replacement.begin(), replacement.end(), output);
}

void Decoder::clear_ablations() {
    for (Layer& layer : layers_) std::fill(layer.ablated.begin(), layer.ablated.end(), false);
}

const std::vector<float>& Decoder::step(int32_t id) {
    const int64_t D = config_.d_model, T = config_.context;
    if (id < 0 || id >= config_.vocab_size)
        throw std::out_of_range("decoder: id " + std::to_string(id) + " outside the vocabulary");
    if (length_ == T) {  // full: with rope, this position overwrites the oldest one's slot
        if (!rope_) throw std::logic_error("decoder: learned positions end at the context; reset() and refeed");
        --length_;
    }

    if (rope_) set_angles(position_);
    std::copy_n(tok_emb_ + id * D, D, x_.data());  // x = tok_emb[id] (+ pos_emb[position])
    if (!rope_)
        for (int64_t i = 0; i < D; ++i) x_[i] += pos_emb_[position_ * D + i];
    for (Layer& layer : layers_) {
        layer_norm(x_.data(), layer.ln1_weight, layer.ln1_bias, D, h_.data());
        attention(layer, h_.data(), attn_out_.data());
        for (int64_t i = 0; i < D; ++i) x_[i] += attn_out_[i];  // residual
        layer_norm(x_.data(), layer.ln2_weight, layer.ln2_bias, D, h_.data());
        linear(layer.fc1_t.data(), padded(4 * D), layer.fc1_bias, h_.data(), D, 4 * D, hidden_.data());
        gelu_tanh_in_place(hidden_.data(), 4 * D);
        linear(layer.fc2_t.data(), padded(D), layer.fc2_bias, hidden_.data(), 4 * D, D, attn_out_.data());
        for (int64_t i = 0; i < D; ++i) x_[i] += attn_out_[i];  // residual
    }
    layer_norm(x_.data(), ln_f_weight_, ln_f_bias_, D, h_.data());
    linear(lm_head_t_.data(), padded(config_.vocab_size), nullptr, h_.data(), D, config_.vocab_size, logits_.data());
    ++length_, ++position_;
    return logits_;
}

const std::vector<float>& Decoder::prefill(const int32_t* ids, int64_t n) {
    feed_rows(ids, n);
    // The logits of the last position only: the one the caller draws from.
    const int64_t D = config_.d_model;
    layer_norm(rows_x_.data() + (n - 1) * D, ln_f_weight_, ln_f_bias_, D, h_.data());
    linear(lm_head_t_.data(), padded(config_.vocab_size), nullptr, h_.data(), D, config_.vocab_size, logits_.data());
    return logits_;
}

void Decoder::prefill(const int32_t* ids, int64_t n, float* logits) {
    feed_rows(ids, n);
    const int64_t D = config_.d_model, V = config_.vocab_size;
    for (int64_t p = 0; p < n; ++p)  // the final layer norm of every position   [n, D]
        layer_norm(rows_x_.data() + p * D, ln_f_weight_, ln_f_bias_, D, rows_h_.data() + p * D);
    linear_rows(lm_head_t_.data(), padded(V), nullptr, rows_h_.data(), n, D, V, logits);  // [n, V]
    std::copy_n(logits + (n - 1) * V, V, logits_.data());
}

// The same layers as step(), for n positions at once: every matrix product over all n rows
// (matmul_transposed gives each row matvec_transposed's bits), then each position's
// attention over the positions up to it, in the cache slots step() would have used.
void Decoder::feed_rows(const int32_t* ids, int64_t n) {
    const int64_t D = config_.d_model, H = config_.n_heads, T = config_.context, d = config_.head_width();
    if (n < 1 || n > T)
        throw std::out_of_range("decoder: prefill of " + std::to_string(n) + " positions, expected 1 to " +
                                std::to_string(T));
    for (int64_t p = 0; p < n; ++p)
        if (ids[p] < 0 || ids[p] >= config_.vocab_size)
            throw std::out_of_range("decoder: id " + std::to_string(ids[p]) + " outside the vocabulary");
    reset();
    for (std::vector<float>* rows : {&rows_x_, &rows_h_, &rows_q_, &rows_k_, &rows_v_, &rows_heads_, &rows_out_})
        rows->resize(T * D);
    rows_hidden_.resize(T * 4 * D);

    for (int64_t p = 0; p < n; ++p) {  // x = tok_emb[id] (+ pos_emb[p])   [n, D]
        float* x = rows_x_.data() + p * D;
        std::copy_n(tok_emb_ + ids[p] * D, D, x);
        if (!rope_)
            for (int64_t i = 0; i < D; ++i) x[i] += pos_emb_[p * D + i];
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (Layer& layer : layers_) {
        for (int64_t p = 0; p < n; ++p)
            layer_norm(rows_x_.data() + p * D, layer.ln1_weight, layer.ln1_bias, D, rows_h_.data() + p * D);
        linear_rows(layer.q_proj_t.data(), padded(D), nullptr, rows_h_.data(), n, D, D, rows_q_.data());
        linear_rows(layer.k_proj_t.data(), padded(D), nullptr, rows_h_.data(), n, D, D, rows_k_.data());
        linear_rows(layer.v_proj_t.data(), padded(D), nullptr, rows_h_.data(), n, D, D, rows_v_.data());
        for (int64_t p = 0; p < n; ++p) {  // rope, and every position's key and value into its slot p
            if (rope_) set_angles(p);
            for (int64_t head = 0; head < H; ++head) {
                float* q = rows_q_.data() + p * D + head * d;
                float* k = rows_k_.data() + p * D + head * d;
                if (rope_) {
                    rotate(q);
                    rotate(k);
                }
                float* keys_t = layer.keys_t.data() + head * d * padded(T);  // [d, padded(T)]
                float* values = layer.values.data() + head * T * padded(d);  // [T, padded(d)]
                for (int64_t i = 0; i < d; ++i) keys_t[i * padded(T) + p] = k[i] * scale;
                std::copy_n(rows_v_.data() + p * D + head * d, d, values + p * padded(d));
            }
        }
        for (int64_t p = 0; p < n; ++p)  // position p reads slots 0..p (the last p's weights stay in layer.weights)
            for (int64_t head = 0; head < H; ++head)
                attend(layer, head, rows_q_.data() + p * D + head * d, p + 1, rows_heads_.data() + p * D + head * d);
        linear_rows(layer.out_proj_t.data(), padded(D), nullptr, rows_heads_.data(), n, D, D, rows_out_.data());
        for (int64_t i = 0; i < n * D; ++i) rows_x_[i] += rows_out_[i];  // residual
        for (int64_t p = 0; p < n; ++p)
            layer_norm(rows_x_.data() + p * D, layer.ln2_weight, layer.ln2_bias, D, rows_h_.data() + p * D);
        linear_rows(layer.fc1_t.data(), padded(4 * D), layer.fc1_bias, rows_h_.data(), n, D, 4 * D, rows_hidden_.data());
        gelu_tanh_in_place(rows_hidden_.data(), n * 4 * D);
        linear_rows(layer.fc2_t.data(), padded(D), layer.fc2_bias, rows_hidden_.data(), n, 4 * D, D, rows_out_.data());
        for (int64_t i = 0; i < n * D; ++i) rows_x_[i] += rows_out_[i];  // residual
    }
    length_ = n, position_ = n;
}

}  // namespace tinyformer
