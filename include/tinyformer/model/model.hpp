// The lesson's transformer: a pre-norm decoder, exactly as docs/model.md writes it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tinyformer/engine/parameters.hpp"
#include "tinyformer/model/attention.hpp"

namespace tinyformer {

struct ModelConfig {
    int64_t vocab_size = 79;
    int64_t d_model = 64;
    int64_t n_heads = 2;
    int64_t n_layers = 2;
    int64_t context = 64;
    std::string positions = "rope";  // "rope" or "learned"

    int64_t head_width() const { return d_model / n_heads; }
    void validate() const;  // throws std::invalid_argument naming the key at fault
};

// One head knocked out: head `head` of layer `layer` outputs `with` [d] at every position
// instead of its weights·v — zeros if it is empty ("zero ablation"), or the head's mean output
// ("mean ablation").
struct HeadAblation {
    int64_t layer = 0, head = 0;
    Tensor with{};
};

// What tinyformer inspect asks of a forward pass; every field is optional.
struct ForwardHooks {
    std::vector<Tensor>* attention_maps = nullptr;  // appended: each layer's weights [B,H,T,T]
    std::vector<Tensor>* head_outputs = nullptr;    // appended: each layer's per-head outputs [B,H,T,d]
    std::vector<HeadAblation> ablations{};          // heads whose output is replaced (inspect's ablation)
    // Every hook point's value by its TransformerLens name, as this forward computed it
    // (docs/python.md lists them): hook_embed [B,T,D], and per block "blocks.{l}." +
    // hook_resid_pre, ln1.hook_normalized [B,T,D]; attn.hook_q, hook_k, hook_v [B,H,T,d]
    // (before rotary positions), attn.hook_rot_q, hook_rot_k [B,H,T,d] (after);
    // attn.hook_pattern [B,H,T,T]; attn.hook_z [B,T,H,d] (TransformerLens's layout, before
    // any ablation); hook_attn_out, hook_resid_mid, ln2.hook_normalized [B,T,D];
    // mlp.hook_pre, mlp.hook_post [B,T,4D]; hook_mlp_out, hook_resid_post [B,T,D]; then
    // ln_final.hook_normalized [B,T,D]. The residual stream, the pattern and z are the
    // forward's own tensors (no copies); q, k, v are split from its fused product and rot_q,
    // rot_k rotated beside it; the branch outputs attn_out and mlp_out are what the stream
    // received (resid_mid − resid_pre, resid_post − resid_mid), since the fused products the
    // stream goes through add them without storing them.
    std::map<std::string, Tensor>* activations = nullptr;
    // With activations: only the hook points named here (every one if null); what no named
    // point needs is not computed.
    const std::set<std::string>* only = nullptr;
    bool wants(const std::string& name) const { return activations && (!only || only->contains(name)); }
};

// The contract's parameter names and shapes, in a fixed order.
std::vector<ParameterSpec> parameter_specs(const ModelConfig& config);

class TorchRng;
// Re-initialises every parameter exactly as scripts/torch_reference.py's Model does
// after torch.manual_seed: the same recipe as Transformer's own, drawn from PyTorch's
// generator in PyTorch's construction order (see model.cpp). For `[train] rng = "torch"`.
void initialise_like_torch(Parameters& params, const ModelConfig& config, TorchRng& rng);

class Transformer {
public:
    // Initialisation (deterministic from `seed`: one random stream, xoshiro256** with
    // Box–Muller normals, over the parameters in contract order; initialise_like_torch
    // draws the same recipe from PyTorch's own stream instead) follows PyTorch's defaults,
    // as the reference model uses them: embeddings ~ N(0, 1); every linear weight [out,in]
    // and bias ~ U(-1/√in, 1/√in); layer-norm weights 1, biases 0.
    Transformer(const ModelConfig& config, uint64_t seed, DType dtype = DType::f32);

    // ids [B,T] (i32, T <= context) → logits [B,T,V]. With `attention_maps`, each layer's
    // per-head weights [B,H,T,T] are appended to it.
    Tensor forward(const Tensor& ids, std::vector<Tensor>* attention_maps = nullptr) const;
    // The same, with inspection hooks: read each layer's attention and head outputs, or
    // knock out one head (its output zeroed or replaced by a fixed vector).
    Tensor forward(const Tensor& ids, const ForwardHooks& hooks) const;
    // Mean cross-entropy of forward(ids) against targets [B,T], the LM head and the loss
    // computed together (linear_cross_entropy) so that the [B,T,V] logits are never held whole.
    Tensor loss(const Tensor& ids, const Tensor& targets, const ForwardHooks& hooks = {}) const;

    const ModelConfig& config() const { return config_; }
    Parameters& parameters() { return params_; }
    const Parameters& parameters() const { return params_; }

private:
    // Everything before the LM head: ids [B,T] → the final layer norm's output [B,T,D].
    Tensor final_hidden(const Tensor& ids, const ForwardHooks& hooks) const;

    struct Block {
        Tensor ln1_weight, ln1_bias;
        MultiHeadAttention attn;
        Tensor ln2_weight, ln2_bias;
        Tensor fc1_weight, fc1_bias, fc2_weight, fc2_bias;
    };
    ModelConfig config_;
    Parameters params_;
    Tensor tok_emb, pos_emb, ln_f_weight, ln_f_bias, lm_head;
    std::vector<Block> blocks_;
};

}  // namespace tinyformer
