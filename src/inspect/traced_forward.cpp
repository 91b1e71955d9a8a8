// The model's forward pass (docs/model.md) for one story, in float64,
// head by head, so that activation patching can replace one head's output and path patching
// one head's queries, keys or values. Slow and plain on purpose: every line is the formula.
#include <algorithm>
#include <cmath>

#include "tinyformer/engine/ops.hpp"
#include "tinyformer/inspect/circuits.hpp"
#include "tinyformer/inspect/patching.hpp"

namespace tinyformer {

namespace {

// Each row normalised to mean 0 and (biased) variance 1, then scaled and shifted.   [T,D]
Eigen::MatrixXd layer_norm(const Eigen::MatrixXd& x, const Eigen::VectorXd& weight, const Eigen::VectorXd& bias) {
    Eigen::MatrixXd y(x.rows(), x.cols());
    for (Eigen::Index t = 0; t < x.rows(); ++t) {
        const double mean = x.row(t).mean();
        const double variance = (x.row(t).array() - mean).square().mean();
        const double inv_std = 1.0 / std::sqrt(variance + 1e-5);
        y.row(t) = ((x.row(t).array() - mean) * inv_std).matrix().cwiseProduct(weight.transpose()) + bias.transpose();
    }
    return y;
}

double gelu_tanh(double u) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * u * (1.0 + std::tanh(k * (u + 0.044715 * u * u * u)));
}

// Rotary positions: at position t, pair (2j, 2j+1) of a query or key turns by t·10000^(−2j/d),
// whose cos and sin are the tables' [t, j].
void rotate(Eigen::MatrixXd& u, const Eigen::MatrixXd& cos, const Eigen::MatrixXd& sin) {  // u [T,d]
    for (Eigen::Index t = 0; t < u.rows(); ++t)
        for (Eigen::Index j = 0; j < u.cols() / 2; ++j) {
            const double c = cos(t, j), s = sin(t, j);
            const double u0 = u(t, 2 * j), u1 = u(t, 2 * j + 1);
            u(t, 2 * j) = u0 * c - u1 * s;
            u(t, 2 * j + 1) = u0 * s + u1 * c;
        }
}

// One head: softmax(q kᵀ/√d + causal mask) v.   q, k, v [T,d] → [T,d]
Eigen::MatrixXd attend(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v) {
    const Eigen::Index T = q.rows();
    Eigen::MatrixXd weights = q * k.transpose() / std::sqrt(static_cast<double>(q.cols()));  // [T,T]
    for (Eigen::Index i = 0; i < T; ++i) {
        const double largest = weights.row(i).head(i + 1).maxCoeff();
        double sum = 0;
        for (Eigen::Index j = 0; j <= i; ++j) sum += weights(i, j) = std::exp(weights(i, j) - largest);
        for (Eigen::Index j = 0; j < T; ++j) weights(i, j) = j <= i ? weights(i, j) / sum : 0.0;  // the future: 0
    }
    return weights * v;
}

}  // namespace

DenseModel dense_model(const Transformer& model) {
    DenseModel dense;
    dense.config = model.config();
    dense.tok_emb = parameter_matrix(model, "tok_emb.weight");
    if (dense.config.positions != "rope") dense.pos_emb = parameter_matrix(model, "pos_emb.weight");
    for (int64_t i = 0; i < dense.config.n_layers; ++i) {
        const std::string block = "blocks." + std::to_string(i) + ".";
        DenseLayer layer;
        layer.ln1_weight = parameter_vector(model, block + "ln1.weight");
        layer.ln1_bias = parameter_vector(model, block + "ln1.bias");
        layer.q_proj = parameter_matrix(model, block + "attn.q_proj.weight");
        layer.k_proj = parameter_matrix(model, block + "attn.k_proj.weight");
        layer.v_proj = parameter_matrix(model, block + "attn.v_proj.weight");
        layer.out_proj = parameter_matrix(model, block + "attn.out_proj.weight");
        layer.ln2_weight = parameter_vector(model, block + "ln2.weight");
        layer.ln2_bias = parameter_vector(model, block + "ln2.bias");
        layer.fc1_weight = parameter_matrix(model, block + "mlp.fc1.weight");
        layer.fc1_bias = parameter_vector(model, block + "mlp.fc1.bias");
        layer.fc2_weight = parameter_matrix(model, block + "mlp.fc2.weight");
        layer.fc2_bias = parameter_vector(model, block + "mlp.fc2.bias");
        dense.layers.push_back(std::move(layer));
    }
    dense.ln_f_weight = parameter_vector(model, "ln_f.weight");
    dense.ln_f_bias = parameter_vector(model, "ln_f.bias");
    dense.lm_head = parameter_matrix(model, "lm_head.weight");
    if (dense.config.positions == "rope") {
        const int64_t d = dense.config.head_width();
        dense.rope_cos.resize(dense.config.context, d / 2);
        dense.rope_sin.resize(dense.config.context, d / 2);
        for (int64_t t = 0; t < dense.config.context; ++t)
            for (int64_t j = 0; j < d / 2; ++j) {
                const double theta = static_cast<double>(t) * std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(d));
                dense.rope_cos(t, j) = std::cos(theta);
                dense.rope_sin(t, j) = std::sin(theta);
            }
    }
    return dense;
}

Trace traced_forward(const DenseModel& model, const std::vector<int32_t>& ids, const Interventions& interventions,
                     const Trace* unpatched) {
    const ModelConfig& config = model.config;
    const int64_t T = static_cast<int64_t>(ids.size()), D = config.d_model, H = config.n_heads, d = config.head_width();
    if (T < 1 || T > config.context)
        throw ShapeError("traced_forward: length " + std::to_string(T) + " outside 1.." + std::to_string(config.context));
    for (const HeadPatch& patch : interventions.heads)
        if (!patch.source || patch.source->rows() != T || patch.source->cols() != d)
            throw ShapeError("traced_forward: a head patch's source must be [T,d]");
    for (const InputPatch& patch : interventions.inputs)
        if (patch.delta.rows() != T || patch.delta.cols() != D)
            throw ShapeError("traced_forward: an input patch's delta must be [T,D]");

    // The first layer an intervention touches: before it, the unpatched run holds the answer.
    int64_t first = config.n_layers;
    for (const HeadPatch& patch : interventions.heads) first = std::min(first, patch.layer);
    for (const InputPatch& patch : interventions.inputs) first = std::min(first, patch.layer);
    if (!unpatched) first = 0;

    if (first == config.n_layers) return *unpatched;  // nothing to change

    Trace run;
    Eigen::MatrixXd x(T, D);  // the residual stream
    if (first == 0) {
        for (int64_t t = 0; t < T; ++t) {
            x.row(t) = model.tok_emb.row(ids[t]);
            if (config.positions != "rope") x.row(t) += model.pos_emb.row(t);
        }
    } else {
        run.residual.assign(unpatched->residual.begin(), unpatched->residual.begin() + first);
        run.z.assign(unpatched->z.begin(), unpatched->z.begin() + first);
        x = unpatched->residual[first];
    }
    for (int64_t l = first; l < config.n_layers; ++l) {
        const DenseLayer& layer = model.layers[l];
        run.residual.push_back(x);
        const Eigen::MatrixXd h = layer_norm(x, layer.ln1_weight, layer.ln1_bias);  // [T,D]
        Eigen::MatrixXd attention_out = Eigen::MatrixXd::Zero(T, D);               // merge_heads(a v) W_oᵀ
        run.z.emplace_back();
        for (int64_t head = 0; head < H; ++head) {
            // What this head's queries, keys and values read: ln1(x), unless path patching
            // shifted the stream one of them reads.
            Eigen::MatrixXd reads_q = h, reads_k = h, reads_v = h;
            for (const InputPatch& patch : interventions.inputs) {
                if (patch.layer != l || patch.head != head) continue;
                Eigen::MatrixXd& reads = patch.input == 'q' ? reads_q : patch.input == 'k' ? reads_k : reads_v;
                reads = layer_norm(x + patch.delta, layer.ln1_weight, layer.ln1_bias);
            }
            // The head's rows of each projection: features head·d .. head·d+d−1.
            Eigen::MatrixXd q = reads_q * layer.q_proj.middleRows(head * d, d).transpose();  // [T,d]
            Eigen::MatrixXd k = reads_k * layer.k_proj.middleRows(head * d, d).transpose();  // [T,d]
            const Eigen::MatrixXd v = reads_v * layer.v_proj.middleRows(head * d, d).transpose();  // [T,d]
            if (config.positions == "rope") rotate(q, model.rope_cos, model.rope_sin), rotate(k, model.rope_cos, model.rope_sin);
            Eigen::MatrixXd z = attend(q, k, v);  // [T,d]
            for (const HeadPatch& patch : interventions.heads) {
                if (patch.layer != l || patch.head != head) continue;
                if (patch.position < 0) z = *patch.source;
                else z.row(patch.position) = patch.source->row(patch.position);
            }
            attention_out += z * layer.out_proj.middleCols(head * d, d).transpose();  // [T,d]·[d,D]
            run.z.back().push_back(std::move(z));
        }
        x += attention_out;
        const Eigen::MatrixXd h2 = layer_norm(x, layer.ln2_weight, layer.ln2_bias);                    // [T,D]
        Eigen::MatrixXd hidden = (h2 * layer.fc1_weight.transpose()).rowwise() + layer.fc1_bias.transpose();  // [T,4D]
        hidden = hidden.unaryExpr([](double u) { return gelu_tanh(u); });
        x += (hidden * layer.fc2_weight.transpose()).rowwise() + layer.fc2_bias.transpose();            // [T,D]
    }
    run.logits = layer_norm(x, model.ln_f_weight, model.ln_f_bias) * model.lm_head.transpose();  // [T,V]
    return run;
}

}  // namespace tinyformer
