// The profiling backend (`bench --profile`) passes every call through unchanged and counts
// what the model really runs.
#include "catch.hpp"

#include "tinyformer/engine/profiling.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/model.hpp"

using namespace tinyformer;

namespace {

const Profile::Entry* find(const Profile& profile, const std::string& kernel) {
    for (const Profile::Entry& e : profile.entries)
        if (e.kernel == kernel) return &e;
    return nullptr;
}

int64_t calls_starting_with(const Profile& profile, const std::string& prefix) {
    int64_t calls = 0;
    for (const Profile::Entry& e : profile.entries)
        if (e.kernel.rfind(prefix, 0) == 0) calls += e.calls;
    return calls;
}

}  // namespace

TEST_CASE("a profile counts each kernel of a training step and changes no result", "[profile]") {
    const ModelConfig config{.vocab_size = 11, .d_model = 16, .n_heads = 2, .n_layers = 3, .context = 8};
    Transformer model(config, 5);
    Rng rng(9);
    std::vector<int32_t> ids(2 * 8), targets(2 * 8);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(11));
    for (int32_t& id : targets) id = static_cast<int32_t>(rng.below(11));
    const Tensor inputs = Tensor::ids(ids, {2, 8}), next = Tensor::ids(targets, {2, 8});

    model.parameters().zero_grad();
    Tensor plain_loss = model.loss(inputs, next);
    plain_loss.backward();
    const Tensor plain_grad = model.parameters().get("blocks.0.attn.q_proj.weight").grad().clone();

    Profile profile;
    const std::string backend_name = backend().name();
    {
        ProfileScope scope(profile);
        model.parameters().zero_grad();
        Tensor loss = model.loss(inputs, next);
        loss.backward();
        CHECK(loss.item() == plain_loss.item());
        const Tensor grad = model.parameters().get("blocks.0.attn.q_proj.weight").grad();
        for (int64_t i = 0; i < grad.numel(); ++i) REQUIRE(grad.at(i) == plain_grad.at(i));
    }
    CHECK(backend().name() == backend_name);  // the wrapped backend is back in place

    const int64_t L = config.n_layers;
    REQUIRE(find(profile, "layer_norm_forward [2,8,16]"));
    CHECK(find(profile, "layer_norm_forward [2,8,16]")->calls == 2 * L + 1);  // ln1, ln2 per block, ln_f
    CHECK(find(profile, "layer_norm_backward [2,8,16]")->calls == 2 * L + 1);
    CHECK(calls_starting_with(profile, "self_attention_forward causal") == L);
    CHECK(calls_starting_with(profile, "self_attention_backward causal") == L);
    CHECK(calls_starting_with(profile, "gelu_forward") == L);
    CHECK(calls_starting_with(profile, "cross_entropy_forward") == 1);
    for (const Profile::Entry& e : profile.entries) CHECK(e.seconds >= 0);
    // Bytes: each argument once. GELU reads x and writes y, [2,8,4D] floats each, per block.
    REQUIRE(find(profile, "gelu_forward [2,8,64]"));
    CHECK(find(profile, "gelu_forward [2,8,64]")->bytes == static_cast<double>(L * 2 * (2 * 8 * 64) * 4));
    // The MLP's second product: x [2,8,64] @ W [16,64]ᵀ, its bias [16], the residual [2,8,16]
    // it adds and the result [2,8,16], float32: one product of the batch's 16 rows.
    CHECK(!find(profile, "gemm 2× 8×64 @ 64×16ᵀ + bias + residual"));  // not named as a batch of two
    const Profile::Entry* fc2 = find(profile, "gemm 16×64 @ 64×16ᵀ + bias + residual");
    REQUIRE(fc2);
    CHECK(fc2->bytes == static_cast<double>(fc2->calls * (2 * 8 * 64 + 16 * 64 + 16 + 2 * 2 * 8 * 16) * 4));
    // A weight's gradient added into its [16,16] buffer: dY and X [2,8,16] read, the gradient
    // read and written; one sum over the batch's 16 rows.
    const Profile::Entry* d_weight = find(profile, "gemm 16×16ᵀ @ 16×16 +=");
    REQUIRE(d_weight);
    CHECK(d_weight->bytes == static_cast<double>(d_weight->calls * (2 * 2 * 8 * 16 + 2 * 16 * 16) * 4));
    const int64_t before = calls_starting_with(profile, "layer_norm_forward");
    model.loss(inputs, next);  // after the scope: nothing more is counted
    CHECK(calls_starting_with(profile, "layer_norm_forward") == before);
}
