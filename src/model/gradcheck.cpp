#include "tinyformer/model/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/op_list.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/attention.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

static double dot(const Tensor& a, const Tensor& b) {
    const double *pa = a.data<double>(), *pb = b.data<double>();
    double sum = 0;
    for (int64_t i = 0; i < a.numel(); ++i) sum += pa[i] * pb[i];
    return sum;
}

GradCheckResult check_gradients(const std::string& name, const Differentiable& f, const std::vector<Tensor>& inputs,
                                const GradCheckSettings& settings) {
    for (const Tensor& input : inputs)
        if (input.dtype() != DType::f64 || !input.requires_grad())
            throw std::invalid_argument("gradcheck " + name + ": inputs must be f64 and require grad");

    // Analytic: one backward pass of <f, R>.
    for (Tensor input : inputs) input.zero_grad();
    Tensor out = f(inputs);
    Rng rng(settings.seed);
    Tensor projection = Tensor::zeros(out.shape(), DType::f64);  // R
    for (int64_t i = 0; i < projection.numel(); ++i) projection.data<double>()[i] = rng.normal();
    GradCheckResult result;
    result.name = name;
    result.ops = recorded_ops(out);
    out.backward(projection);

    // Numeric: central differences, one element at a time.
    NoGradScope no_grad;
    for (Tensor input : inputs) {
        Tensor grad = input.grad();
        double* x = input.data<double>();
        for (int64_t i = 0; i < input.numel(); ++i) {
            const double saved = x[i];
            x[i] = saved + settings.step;
            const double plus = dot(f(inputs), projection);
            x[i] = saved - settings.step;
            const double minus = dot(f(inputs), projection);
            x[i] = saved;
            const double numeric = (plus - minus) / (2 * settings.step);
            const double analytic = grad.defined() ? grad.at(i) : 0.0;
            const double abs_error = std::abs(analytic - numeric);
            const double rel_error =
                abs_error / std::max({std::abs(analytic), std::abs(numeric), settings.rel_floor});
            result.max_abs_error = std::max(result.max_abs_error, abs_error);
            result.max_rel_error = std::max(result.max_rel_error, rel_error);
            if (std::isnan(abs_error)) result.max_rel_error = INFINITY;
        }
        result.elements += input.numel();
    }
    result.pass = result.max_rel_error <= settings.tolerance;
    return result;
}

// ---- the suite ----

namespace {

Tensor random_input(Rng& rng, const Shape& shape, double std = 1.0) {
    Tensor t = Tensor::zeros(shape, DType::f64);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = rng.normal(0.0, std);
    t.set_requires_grad(true);
    return t;
}

Tensor random_ids(Rng& rng, const Shape& shape, int64_t vocab) {
    std::vector<int32_t> ids(numel_of(shape));
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(vocab));
    return Tensor::ids(ids, shape);
}

}  // namespace

std::vector<GradCheckResult> run_gradcheck_suite(const GradCheckSettings& settings) {
    std::vector<GradCheckResult> results;
    Rng rng(2024);
    // check(op, name, ...): a check named `name` of the op `op` as op_list.hpp names it, or of a
    // composition of ops (op ""): the attention module, the whole model.
    auto check = [&](std::string_view op, const std::string& name, const Differentiable& f,
                     const std::vector<Tensor>& inputs) {
        if (!op.empty() && !find_op(op))
            throw std::logic_error("gradcheck " + name + ": op_list.hpp has no op named " + std::string(op));
        results.push_back(check_gradients(name, f, inputs, settings));
        results.back().op = op;
    };
    auto in = [&](const Shape& shape) { return random_input(rng, shape); };

    // matmul: plain, each transpose, batched, a weight shared over the batch, T = 1.
    check("matmul", "matmul", [](auto& x) { return matmul(x[0], x[1]); }, {in({3, 5}), in({5, 4})});
    check("matmul", "matmul_transpose_a", [](auto& x) { return matmul(x[0], x[1], true, false); },
          {in({5, 3}), in({5, 4})});
    check("matmul", "matmul_transpose_b", [](auto& x) { return matmul(x[0], x[1], false, true); },
          {in({3, 5}), in({4, 5})});
    check("matmul", "matmul_transpose_ab", [](auto& x) { return matmul(x[0], x[1], true, true); },
          {in({5, 3}), in({4, 5})});
    check("matmul", "matmul_batched", [](auto& x) { return matmul(x[0], x[1]); }, {in({2, 3, 5, 4}), in({2, 3, 4, 7})});
    check("matmul", "matmul_weight_broadcast", [](auto& x) { return matmul(x[0], x[1], false, true); },
          {in({2, 3, 5}), in({7, 5})});
    check("matmul", "matmul_weight_broadcast_ta", [](auto& x) { return matmul(x[0], x[1], true, false); },
          {in({2, 5, 3}), in({5, 4})});
    check("matmul", "matmul_t1", [](auto& x) { return matmul(x[0], x[1], false, true); },
          {in({2, 1, 3}), in({2, 1, 3})});
    check("matmul", "matmul_scaled", [](auto& x) { return matmul(x[0], x[1], false, true, 0.375); },
          {in({2, 3, 5}), in({2, 4, 5})});

    // elementwise, with broadcasting both ways
    check("add", "add", [](auto& x) { return add(x[0], x[1]); }, {in({3, 5}), in({3, 5})});
    check("add", "add_broadcast", [](auto& x) { return add(x[0], x[1]); }, {in({2, 3, 5}), in({5})});
    check("add", "add_broadcast_both", [](auto& x) { return add(x[0], x[1]); }, {in({2, 1, 5}), in({3, 1})});
    check("add", "add_same_input", [](auto& x) { return add(x[0], x[0]); }, {in({4, 3})});
    check("mul", "mul", [](auto& x) { return mul(x[0], x[1]); }, {in({3, 5}), in({3, 5})});
    check("mul", "mul_broadcast", [](auto& x) { return mul(x[0], x[1]); }, {in({2, 1, 5}), in({3, 1})});
    check("scale", "scale", [](auto& x) { return scale(x[0], -1.7); }, {in({3, 4})});

    // moving elements
    check("reshape", "reshape", [](auto& x) { return mul(reshape(x[0], {4, 3}), x[1]); }, {in({2, 6}), in({4, 3})});
    check("transpose", "transpose", [](auto& x) { return transpose(x[0], 1, 2); }, {in({2, 3, 5, 4})});
    check("transpose", "transpose_outer", [](auto& x) { return transpose(x[0], 0, 3); }, {in({2, 3, 1, 5})});
    check("split_heads", "split_heads", [](auto& x) { return split_heads(x[0], 3); }, {in({2, 5, 6})});
    check("split_heads", "split_heads_t1", [](auto& x) { return split_heads(x[0], 2); }, {in({3, 1, 4})});
    check("merge_heads", "merge_heads", [](auto& x) { return merge_heads(x[0]); }, {in({2, 3, 5, 2})});
    check("select", "select", [](auto& x) { return mul(select(x[0], 1), x[1]); }, {in({3, 2, 4}), in({2, 4})});
    check("select", "select_twice", [](auto& x) { return add(select(x[0], 0), scale(select(x[0], 2), 3.0)); },
          {in({3, 5})});
    check("residual_linear", "residual_linear", [](auto& x) { return residual_linear(x[0], x[1], x[2], x[3]); },
          {in({2, 3, 4}), in({2, 3, 5}), in({4, 5}), in({4})});
    check("residual_linear", "residual_linear_no_bias", [](auto& x) { return residual_linear(x[0], x[1], x[2]); },
          {in({2, 3, 4}), in({2, 3, 5}), in({4, 5})});
    check("linear", "linear_bias", [](auto& x) { return linear(x[0], x[1], x[2]); },
          {in({2, 3, 5}), in({4, 5}), in({4})});

    // embedding, with repeated ids
    Tensor ids = Tensor::ids({1, 3, 1, 0, 3, 3, 2}, {7});
    check("embedding", "embedding", [ids](auto& x) { return embedding(x[0], ids); }, {in({5, 3})});

    check("layer_norm", "layer_norm", [](auto& x) { return layer_norm(x[0], x[1], x[2]); },
          {in({2, 3, 7}), in({7}), in({7})});
    check("layer_norm", "layer_norm_t1", [](auto& x) { return layer_norm(x[0], x[1], x[2]); },
          {in({1, 1, 5}), in({5}), in({5})});
    check("gelu", "gelu", [](auto& x) { return gelu(x[0]); }, {random_input(rng, {3, 7}, 2.0)});
    check("softmax", "softmax", [](auto& x) { return softmax(x[0]); }, {in({2, 3, 7})});
    check("softmax", "softmax_causal", [](auto& x) { return softmax(x[0], true); }, {in({2, 2, 5, 5})});
    check("softmax", "softmax_causal_offset", [](auto& x) { return softmax(x[0], true); }, {in({1, 2, 3, 5})});
    check("scaled_dot_product_attention", "attention_causal",
          [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.4, true).heads; },
          {in({2, 2, 5, 3}), in({2, 2, 5, 3}), in({2, 2, 5, 3})});
    check("scaled_dot_product_attention", "attention_causal_offset",
          [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.6, true).heads; },
          {in({1, 2, 3, 4}), in({1, 2, 6, 4}), in({1, 2, 6, 4})});
    check("scaled_dot_product_attention", "attention_unmasked",
          [](auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], 0.5, false).heads; },
          {in({2, 4, 3}), in({2, 5, 3}), in({2, 5, 3})});
    check("self_attention", "self_attention_causal_rope",
          [](auto& x) { return self_attention(x[0], 2, true, 3, 0.4, true).heads; },
          {in({2, 5, 12})});
    check("self_attention", "self_attention_unmasked",
          [](auto& x) { return self_attention(x[0], 3, false, 0, 0.5, false).heads; },
          {in({2, 4, 18})});
    check("rope", "rope", [](auto& x) { return rope(x[0]); }, {in({2, 2, 5, 6})});
    check("rope", "rope_start", [](auto& x) { return rope(x[0], 7); }, {in({1, 3, 1, 4})});
    Tensor targets = random_ids(rng, {2, 3}, 7);
    check("cross_entropy", "cross_entropy", [targets](auto& x) { return cross_entropy(x[0], targets); },
          {in({2, 3, 7})});
    // The LM head and loss in blocks of 2 rows: d_hidden and d_W from each block.
    check("linear_cross_entropy", "linear_cross_entropy",
          [targets](auto& x) { return linear_cross_entropy(x[0], x[1], targets, 11); },
          {in({2, 3, 5}), in({7, 5})});

    // multi-head attention: self-attention with mask and rope, and cross-attention
    {
        auto [mha, params] = MultiHeadAttention::create(6, 3, 7, DType::f64);
        std::vector<Tensor> inputs = {in({2, 5, 6}), mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj};
        check("", "attention",
              [mha = mha](auto& x) {
                  return mha.forward(x[0], x[0], x[0], {.causal = true, .rope = true}).output;
              },
              inputs);
        std::vector<Tensor> cross = {in({2, 4, 6}), in({2, 7, 6}), mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj};
        check("", "attention_cross", [mha = mha](auto& x) { return mha.forward(x[0], x[1], x[1]).output; }, cross);
    }

    // the whole model, every parameter
    for (const std::string positions : {"rope", "learned"}) {
        ModelConfig config{.vocab_size = 11, .d_model = 8, .n_heads = 2, .n_layers = 2, .context = 5,
                           .positions = positions};
        Transformer model(config, 99, DType::f64);
        // A larger init than training uses, so that every path carries a real gradient.
        for (const auto& [name, p] : model.parameters().named()) {
            Tensor param = p;
            for (int64_t i = 0; i < param.numel(); ++i) param.data<double>()[i] += rng.normal(0.0, 0.3);
        }
        Tensor x = random_ids(rng, {2, 5}, 11), y = random_ids(rng, {2, 5}, 11);
        std::vector<Tensor> params;
        for (const auto& [name, p] : model.parameters().named()) params.push_back(p);
        check("", "model_" + positions, [&model, x, y](auto&) { return model.loss(x, y); }, params);
    }
    return results;
}

}  // namespace tinyformer
