// The model, written as the lesson writes it. The math is in docs/model.md.
#include "tinyformer/model/model.hpp"

#include <cmath>
#include <functional>
#include <stdexcept>

#include "tinyformer/engine/autograd.hpp"

#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/engine/torch_rng.hpp"

namespace tinyformer {

void ModelConfig::validate() const {
    auto fail = [](const std::string& key, const std::string& what) {
        throw std::invalid_argument("model." + key + ": " + what);
    };
    if (vocab_size < 1) fail("vocab_size", "must be at least 1, got " + std::to_string(vocab_size));
    if (d_model < 1) fail("d_model", "must be at least 1, got " + std::to_string(d_model));
    if (n_heads < 1) fail("n_heads", "must be at least 1, got " + std::to_string(n_heads));
    if (d_model % n_heads != 0)
        fail("n_heads", "d_model " + std::to_string(d_model) + " is not divisible by n_heads " +
                            std::to_string(n_heads) + " (each head needs a whole width d = D/H)");
    if (n_layers < 1) fail("n_layers", "must be at least 1, got " + std::to_string(n_layers));
    if (context < 1) fail("context", "must be at least 1, got " + std::to_string(context));
    if (positions != "rope" && positions != "learned")
        fail("positions", "expected \"rope\" or \"learned\", got \"" + positions + "\"");
    if (positions == "rope" && head_width() % 2 != 0)
        fail("n_heads", "rope rotates feature pairs, so the head width d_model/n_heads = " +
                            std::to_string(head_width()) + " must be even");
}

std::vector<ParameterSpec> parameter_specs(const ModelConfig& c) {
    const int64_t V = c.vocab_size, D = c.d_model;
    std::vector<ParameterSpec> specs = {{"tok_emb.weight", {V, D}}};
    if (c.positions == "learned") specs.push_back({"pos_emb.weight", {c.context, D}});
    for (int64_t i = 0; i < c.n_layers; ++i) {
        const std::string block = "blocks." + std::to_string(i) + ".";
        specs.push_back({block + "ln1.weight", {D}});
        specs.push_back({block + "ln1.bias", {D}});
        for (const ParameterSpec& spec : MultiHeadAttention::parameter_specs(D, block + "attn."))
            specs.push_back(spec);
        specs.push_back({block + "ln2.weight", {D}});
        specs.push_back({block + "ln2.bias", {D}});
        specs.push_back({block + "mlp.fc1.weight", {4 * D, D}});
        specs.push_back({block + "mlp.fc1.bias", {4 * D}});
        specs.push_back({block + "mlp.fc2.weight", {D, 4 * D}});
        specs.push_back({block + "mlp.fc2.bias", {D}});
    }
    specs.push_back({"ln_f.weight", {D}});
    specs.push_back({"ln_f.bias", {D}});
    specs.push_back({"lm_head.weight", {V, D}});
    return specs;
}

// blocks.<i>.ln1.*, blocks.<i>.ln2.* and ln_f.*: weight 1, bias 0, nothing drawn.
static bool is_layer_norm(const std::string& name) {
    return name.find(".ln") != std::string::npos || name.rfind("ln_f.", 0) == 0;
}

// PyTorch's default initialisation, so that a run matches the reference's recipe:
// nn.Embedding ~ N(0, 1); nn.Linear weight [out,in] and bias ~ U(-1/√in, 1/√in);
// nn.LayerNorm weight 1, bias 0.
static void initialise(Parameters& params, uint64_t seed) {
    Rng rng(seed);
    auto fill = [](Tensor p, const std::function<double()>& draw) {
        for (int64_t i = 0; i < p.numel(); ++i) {
            const double value = draw();
            if (p.dtype() == DType::f32) p.data<float>()[i] = static_cast<float>(value);
            else p.data<double>()[i] = value;
        }
    };
    for (const auto& [name, param] : params.named()) {
        Tensor p = param;
        if (is_layer_norm(name)) {
            p.fill(name.ends_with(".weight") ? 1.0 : 0.0);
        } else if (name == "tok_emb.weight" || name == "pos_emb.weight") {
            fill(p, [&] { return rng.normal(0.0, 1.0); });
        } else {  // a linear layer's weight [out,in], or its bias [out]
            const std::string weight_name = name.ends_with(".bias") ? name.substr(0, name.size() - 4) + "weight" : name;
            const double bound = 1.0 / std::sqrt(static_cast<double>(params.get(weight_name).dim(1)));
            fill(p, [&] { return (2.0 * rng.uniform() - 1.0) * bound; });
        }
    }
}

// The same recipe drawn from PyTorch's generator, in the order torch_reference.py's Model
// constructs its modules: tok_emb (normal_), pos_emb, then per block q/k/v/out_proj
// (kaiming_uniform_ with a = √5, whose bound is √3·√(2/(1+a²))/√in = 1/√in, computed as torch
// does), fc1 weight then bias, fc2 weight then bias; last lm_head. Layer norms draw nothing.
void initialise_like_torch(Parameters& params, const ModelConfig& config, TorchRng& rng) {
    for (const auto& [name, param] : params.named()) {
        if (is_layer_norm(name)) {
            Tensor p = param;
            p.fill(name.ends_with(".weight") ? 1.0 : 0.0);
        }
    }
    auto draw = [&](const std::string& name, auto&& fill) {
        Tensor p = params.get(name);
        if (p.dtype() == DType::f32) {
            fill(p.data<float>(), p.numel());
        } else {  // a float64 model (gradcheck): the same float32 draws, widened
            std::vector<float> values(static_cast<size_t>(p.numel()));
            fill(values.data(), p.numel());
            std::copy(values.begin(), values.end(), p.data<double>());
        }
    };
    auto embedding = [&](const std::string& name) {
        draw(name, [&](float* values, int64_t n) { rng.normal(values, n, 0.0, 1.0); });
    };
    auto linear = [&](const std::string& prefix, bool has_bias) {
        const double fan_in = static_cast<double>(params.get(prefix + "weight").dim(1));
        const double a = std::sqrt(5.0), gain = std::sqrt(2.0 / (1.0 + a * a));
        const double weight_bound = std::sqrt(3.0) * (gain / std::sqrt(fan_in));
        draw(prefix + "weight", [&](float* values, int64_t n) { rng.uniform(values, n, -weight_bound, weight_bound); });
        if (has_bias) {
            const double bias_bound = 1.0 / std::sqrt(fan_in);
            draw(prefix + "bias", [&](float* values, int64_t n) { rng.uniform(values, n, -bias_bound, bias_bound); });
        }
    };
    embedding("tok_emb.weight");
    if (config.positions == "learned") embedding("pos_emb.weight");
    for (int64_t i = 0; i < config.n_layers; ++i) {
        const std::string block = "blocks." + std::to_string(i) + ".";
        for (const char* projection : {"q_proj.", "k_proj.", "v_proj.", "out_proj."})
            linear(block + "attn." + projection, /*has_bias=*/false);
        linear(block + "mlp.fc1.", /*has_bias=*/true);
        linear(block + "mlp.fc2.", /*has_bias=*/true);
    }
    linear("lm_head.", /*has_bias=*/false);
}

Transformer::Transformer(const ModelConfig& config, uint64_t seed, DType dtype) : config_(config) {
    config_.validate();
    params_ = Parameters(parameter_specs(config_), dtype);
    initialise(params_, seed);

    tok_emb = params_.get("tok_emb.weight");
    if (config_.positions == "learned") pos_emb = params_.get("pos_emb.weight");
    for (int64_t i = 0; i < config_.n_layers; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        blocks_.push_back(Block{params_.get(b + "ln1.weight"), params_.get(b + "ln1.bias"),
                                MultiHeadAttention(params_, b + "attn.", config_.n_heads),
                                params_.get(b + "ln2.weight"), params_.get(b + "ln2.bias"),
                                params_.get(b + "mlp.fc1.weight"), params_.get(b + "mlp.fc1.bias"),
                                params_.get(b + "mlp.fc2.weight"), params_.get(b + "mlp.fc2.bias")});
    }
    ln_f_weight = params_.get("ln_f.weight");
    ln_f_bias = params_.get("ln_f.bias");
    lm_head = params_.get("lm_head.weight");
}

// The attention hook points of one block (those `hooks` wants), from what the attention
// computed: q, k and v are the heads of its fused product h·qkv_projᵀ, z is its heads side by
// side (a view), the pattern its own. q and k are rotated here as the attention rotates them
// inside its kernel, and attn_out is out_proj of the heads (after any ablation) that the
// stream received.
static void record_attention(const MultiHeadAttention& attention, const AttentionResult& result,
                             const std::string& at, bool rope_positions, const ForwardHooks& hooks) {
    std::map<std::string, Tensor>& activations = *hooks.activations;
    const Tensor& qkv = result.qkv;  // [B,T,3D]
    const int64_t B = qkv.dim(0), T = qkv.dim(1), D = qkv.dim(2) / 3, H = attention.n_heads(), d = D / H;
    const char* names[] = {"q", "k", "v"};
    const bool rotated = rope_positions && (hooks.wants(at + "attn.hook_rot_q") || hooks.wants(at + "attn.hook_rot_k"));
    if (rotated || hooks.wants(at + "attn.hook_q") || hooks.wants(at + "attn.hook_k") || hooks.wants(at + "attn.hook_v")) {
        Tensor heads = split_heads(qkv, 3 * H);  // [B,3H,T,d]: q's heads, k's, v's
        if (B > 1) heads = transpose(reshape(heads, {B, 3, H * T * d}), 0, 1);  // [3,B,H·T·d]
        // Now q, k and v are each a block of B·H·T·d numbers, one after another: parts[first..first+count).
        auto parts = [&](int64_t first, int64_t count) {
            return Tensor::view_of(heads.storage(), heads.offset_bytes() + first * B * D * T * dtype_size(heads.dtype()),
                                   {count * B, H, T, d}, heads.dtype());
        };
        for (int64_t part = 0; part < 3; ++part)
            if (hooks.wants(at + "attn.hook_" + names[part]))
                activations[at + "attn.hook_" + names[part]] = parts(part, 1);  // [B,H,T,d]
        if (rotated) {  // q and k in one op
            const Tensor rotated_heads = rope(parts(0, 2));  // [2B,H,T,d]
            for (int64_t part = 0; part < 2; ++part)
                if (hooks.wants(at + "attn.hook_rot_" + names[part]))
                    activations[at + "attn.hook_rot_" + names[part]] = Tensor::view_of(
                        rotated_heads.storage(), rotated_heads.offset_bytes() + part * B * D * T * dtype_size(heads.dtype()),
                        {B, H, T, d}, heads.dtype());
        }
    }
    if (hooks.wants(at + "attn.hook_pattern")) activations[at + "attn.hook_pattern"] = result.weights;  // [B,H,T,T]
    if (hooks.wants(at + "attn.hook_z")) activations[at + "attn.hook_z"] = reshape(result.attended, {B, T, H, d});
}

// after − before, element by element: what a branch added to the residual stream, as the stream
// received it. (The forward adds each branch inside its fused product, residual_linear, so the
// branch's own output is never stored; this difference is that output rounded as the sum
// rounded it, and before + it gives `after` back, to the bit wherever the subtraction is exact.)
static Tensor increment(const Tensor& after, const Tensor& before) {
    if (after.dtype() != DType::f32 && after.dtype() != DType::f64) return add(after, scale(before, -1.0));
    Tensor difference = Tensor::empty(after.shape(), after.dtype());
    const int64_t n = after.numel();
    auto subtract = [&](auto zero) {  // in the tensors' own type, float or double
        using Real = decltype(zero);
        const Real *a = after.data<Real>(), *b = before.data<Real>();
        Real* out = difference.data<Real>();
        for (int64_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
    };
    if (after.dtype() == DType::f32) subtract(0.0f);
    else subtract(0.0);
    return difference;
}

Tensor Transformer::forward(const Tensor& ids, std::vector<Tensor>* attention_maps) const {
    return forward(ids, ForwardHooks{.attention_maps = attention_maps});
}

Tensor Transformer::forward(const Tensor& ids, const ForwardHooks& hooks) const {
    return linear(final_hidden(ids, hooks), lm_head);  // [B,T,V]
}

Tensor Transformer::loss(const Tensor& ids, const Tensor& targets, const ForwardHooks& hooks) const {
    return linear_cross_entropy(final_hidden(ids, hooks), lm_head, targets);  // cross_entropy(forward(ids), targets)
}

Tensor Transformer::final_hidden(const Tensor& ids, const ForwardHooks& hooks) const {
    if (ids.rank() != 2 || ids.dtype() != DType::i32)
        throw ShapeError("model: ids must be i32 [B,T], got " + shape_str(ids.shape()));
    const int64_t T = ids.dim(1);
    if (T < 1 || T > config_.context)
        throw ShapeError("model: sequence length " + std::to_string(T) + " outside 1.." +
                         std::to_string(config_.context) + " (the context)");
    const bool use_rope = config_.positions == "rope";
    for (const HeadAblation& ablation : hooks.ablations)
        if (ablation.layer < 0 || ablation.layer >= config_.n_layers)
            throw ShapeError("model: cannot ablate a head of layer " + std::to_string(ablation.layer) + " of " +
                             std::to_string(config_.n_layers));

    // The hook points (ForwardHooks::activations): each value stored under its name.
    auto record = [&](const std::string& name, const Tensor& value) {
        if (hooks.wants(name)) (*hooks.activations)[name] = value;
    };
    Tensor x = embedding(tok_emb, ids);  // [B,T,D]
    record("hook_embed", x);
    if (!use_rope) {                     // learned absolute positions: row t of pos_emb
        std::vector<int32_t> positions(T);
        for (int64_t t = 0; t < T; ++t) positions[t] = static_cast<int32_t>(t);
        const Tensor position_embedding = embedding(pos_emb, Tensor::ids(positions, {T}));  // [T,D]
        record("hook_pos_embed", position_embedding);
        x = add(x, position_embedding);  // [B,T,D] + [T,D]
    }
    for (size_t i = 0; i < blocks_.size(); ++i) {
        const Block& block = blocks_[i];
        const std::string at = "blocks." + std::to_string(i) + ".";
        record(at + "hook_resid_pre", x);
        Tensor h = layer_norm(x, block.ln1_weight, block.ln1_bias);                     // [B,T,D]
        record(at + "ln1.hook_normalized", h);
        AttentionOptions options{.causal = true, .rope = use_rope, .keep_heads = hooks.head_outputs != nullptr,
                                 .keep_inside = hooks.activations != nullptr, .residual = x};
        for (const HeadAblation& ablation : hooks.ablations)
            if (ablation.layer == static_cast<int64_t>(i)) options.ablate.push_back({ablation.head, ablation.with});
        AttentionResult attn = block.attn.forward(h, h, h, options);
        if (hooks.attention_maps) hooks.attention_maps->push_back(attn.weights);        // [B,H,T,T]
        if (hooks.head_outputs) hooks.head_outputs->push_back(attn.heads);              // [B,H,T,d]
        if (hooks.activations) record_attention(block.attn, attn, at, use_rope, hooks);
        if (hooks.wants(at + "hook_attn_out")) record(at + "hook_attn_out", increment(attn.output, x));  // [B,T,D]
        record(at + "hook_resid_mid", attn.output);
        x = attn.output;                                                                // x + attention(h)
        h = layer_norm(x, block.ln2_weight, block.ln2_bias);                            // [B,T,D]
        record(at + "ln2.hook_normalized", h);
        const Tensor pre = linear(h, block.fc1_weight, block.fc1_bias);                 // [B,T,4D]
        Tensor hidden = gelu(pre);                                                      // [B,T,4D]
        record(at + "mlp.hook_pre", pre);
        record(at + "mlp.hook_post", hidden);
        const Tensor resid_mid = x;
        x = residual_linear(x, hidden, block.fc2_weight, block.fc2_bias);               // x + fc2(hidden)
        if (hooks.wants(at + "hook_mlp_out")) record(at + "hook_mlp_out", increment(x, resid_mid));  // [B,T,D]
        record(at + "hook_resid_post", x);
    }
    const Tensor normalized = layer_norm(x, ln_f_weight, ln_f_bias);  // [B,T,D]
    record("ln_final.hook_normalized", normalized);
    return normalized;
}

}  // namespace tinyformer
