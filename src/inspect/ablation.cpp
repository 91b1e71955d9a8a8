// Ablation: what does the model lose without one head? Its output (weights v, [B,H,T,d]) is
// replaced before the heads are merged — by zeros ("zero ablation"), or by its mean over the
// validation text ("mean ablation", which keeps the head's average contribution and removes
// only what depends on where it reads) — and the validation loss and probes are scored again.
#include "text_windows.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/inspect/inspect.hpp"

namespace tinyformer {

double ProbeTally::accuracy(const std::string& kind) const {
    auto it = by_kind.find(kind);
    return it == by_kind.end() || it->second.second == 0
               ? 0.0
               : static_cast<double>(it->second.first) / static_cast<double>(it->second.second);
}

double text_loss(const Transformer& model, const std::vector<int32_t>& ids, const ForwardHooks& hooks) {
    NoGradScope no_grad;
    double total = 0;
    int64_t predicted = 0;
    for (const WindowBatch& batch : window_batches(ids, model.config().context)) {
        const double n = static_cast<double>(batch.targets.numel());
        total += model.loss(batch.inputs, batch.targets, hooks).item() * n;
        predicted += batch.targets.numel();
    }
    return predicted ? total / static_cast<double>(predicted) : 0.0;
}

ProbeTally probe_accuracy(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& probes,
                          const ForwardHooks& hooks) {
    NoGradScope no_grad;
    const int64_t context = model.config().context, V = model.config().vocab_size;
    std::map<std::pair<size_t, size_t>, std::vector<const Probe*>> groups;  // (prompt, answer) lengths
    for (const Probe& probe : probes) groups[{probe.prompt.size(), probe.answer.size()}].push_back(&probe);

    ProbeTally tally;
    for (const auto& [lengths, group] : groups) {
        const int64_t B = static_cast<int64_t>(group.size());
        std::vector<std::vector<int32_t>> sequences;
        for (const Probe* probe : group) sequences.push_back(vocab.encode(probe->prompt, "probe"));
        for (size_t step = 0; step < lengths.second; ++step) {
            // The last `context` characters, as generation's window would hold them.
            const int64_t S = std::min<int64_t>(static_cast<int64_t>(sequences[0].size()), context);
            std::vector<int32_t> inputs;
            for (const auto& sequence : sequences) inputs.insert(inputs.end(), sequence.end() - S, sequence.end());
            const Tensor logits = model.forward(Tensor::ids(inputs, {B, S}), hooks).to(DType::f32);  // [B,S,V]
            for (int64_t b = 0; b < B; ++b) {
                const float* last = logits.data<float>() + (b * S + S - 1) * V;
                int32_t best = 0;
                for (int32_t v = 1; v < V; ++v)
                    if (last[v] > last[best]) best = v;  // greedy: the first of equal maxima, as argmax
                sequences[b].push_back(best);
            }
        }
        for (int64_t b = 0; b < B; ++b) {
            const Probe& probe = *group[b];
            const std::vector<int32_t> answer(sequences[b].end() - static_cast<int64_t>(lengths.second),
                                              sequences[b].end());
            const bool correct = vocab.decode(answer) == probe.answer;
            auto& [kind_correct, kind_total] = tally.by_kind[probe.kind];
            ++kind_total, ++tally.total;
            if (correct) ++kind_correct, ++tally.correct;
        }
    }
    return tally;
}

std::vector<Tensor> mean_head_outputs(const Transformer& model, const std::vector<int32_t>& ids) {
    NoGradScope no_grad;
    const int64_t L = model.config().n_layers, H = model.config().n_heads, d = model.config().head_width();
    std::vector<std::vector<double>> sums(L * H, std::vector<double>(d, 0.0));
    int64_t positions = 0;
    for (const WindowBatch& batch : window_batches(ids, model.config().context)) {
        std::vector<Tensor> outputs;  // per layer [B,H,T,d]
        model.forward(batch.inputs, ForwardHooks{.head_outputs = &outputs});
        const int64_t B = batch.inputs.dim(0), T = batch.inputs.dim(1);
        for (int64_t l = 0; l < L; ++l) {
            const Tensor layer = outputs[l].to(DType::f64);
            const double* x = layer.data<double>();
            for (int64_t b = 0; b < B; ++b)
                for (int64_t h = 0; h < H; ++h)
                    for (int64_t t = 0; t < T; ++t)
                        for (int64_t i = 0; i < d; ++i) sums[l * H + h][i] += x[((b * H + h) * T + t) * d + i];
        }
        positions += B * T;
    }
    std::vector<Tensor> means;
    for (auto& sum : sums) {
        for (double& value : sum) value /= static_cast<double>(positions ? positions : 1);
        means.push_back(Tensor::from(sum, {d}, model.parameters().dtype()));
    }
    return means;
}

}  // namespace tinyformer
