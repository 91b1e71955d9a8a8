// Every measurement, for every head, in one result: what heads.json and report.html state.
#include "tinyformer/inspect/inspect.hpp"

namespace tinyformer {

InspectResult inspect_heads(const Transformer& model, const Vocabulary& vocab, const std::vector<int32_t>& val_ids,
                            const std::vector<Probe>& probes) {
    const int64_t L = model.config().n_layers, H = model.config().n_heads;
    InspectResult result;
    result.has_text = val_ids.size() >= 2;
    result.has_probes = !probes.empty();
    result.text_characters = static_cast<int64_t>(val_ids.size());

    std::vector<HeadRoles> roles;
    std::vector<Tensor> means;
    std::vector<std::map<std::string, AnswerSource>> sources;
    if (result.has_text) {
        result.val_loss = text_loss(model, val_ids);
        roles = text_head_roles(model, val_ids);
        means = mean_head_outputs(model, val_ids);
    }
    if (result.has_probes) {
        result.probes = probe_accuracy(model, vocab, probes);
        sources = answer_sources(model, vocab, probes);
    }
    for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < H; ++h) {
            HeadReport head;
            head.layer = l, head.head = h;
            if (result.has_text) head.roles = roles[l * H + h];
            if (result.has_probes) head.answer_source = sources[l * H + h];
            ForwardHooks zero{.ablations = {{.layer = l, .head = h}}};
            ForwardHooks mean = zero;
            if (result.has_text) mean.ablations[0].with = means[l * H + h];
            // Without a validation text there is no mean to put in the head's place: only zeroing.
            for (auto [hooks, effect] : {std::pair{&zero, &head.zeroed}, std::pair{&mean, &head.mean_replaced}}) {
                if (result.has_text) effect->val_loss = text_loss(model, val_ids, *hooks);
                if (result.has_probes && (result.has_text || hooks == &zero))
                    effect->probes = probe_accuracy(model, vocab, probes, *hooks);
            }
            result.heads.push_back(head);
        }
    for (HeadReport& head : result.heads) head.finding = describe_head(head, result);
    return result;
}

}  // namespace tinyformer
