// attention.json and heads.json: the measurements, for a program.
#include "tinyformer/data/text.hpp"
#include "tinyformer/inspect/inspect_report.hpp"
#include "tinyformer/support/json_number.hpp"

namespace tinyformer {

nlohmann::json attention_json(const AttentionMaps& maps, const std::string& source) {
    const int64_t T = maps.length();
    nlohmann::json out;
    out["source"] = source;
    out["text"] = encode_utf8(maps.text);
    out["characters"] = nlohmann::json::array();
    out["code_points"] = nlohmann::json::array();
    for (char32_t c : maps.text) {
        out["characters"].push_back(encode_utf8(c));
        out["code_points"].push_back(static_cast<uint32_t>(c));
    }
    out["shape"] = {maps.layers, maps.heads, T, T};
    out["axes"] = {"layer", "head", "query position (row)", "position read (column)"};
    nlohmann::json layers = nlohmann::json::array();
    for (int64_t l = 0; l < maps.layers; ++l) {
        nlohmann::json heads = nlohmann::json::array();
        for (int64_t h = 0; h < maps.heads; ++h) {
            const float* a = maps.map(l, h);
            nlohmann::json rows = nlohmann::json::array();
            for (int64_t i = 0; i < T; ++i) rows.push_back(json_numbers({a + i * T, static_cast<size_t>(T)}));
            heads.push_back(rows);
        }
        layers.push_back(heads);
    }
    out["weights"] = layers;
    return out;
}

const std::vector<std::pair<std::string, std::string>>& measure_definitions() {
    static const std::vector<std::pair<std::string, std::string>> definitions = {
        {"previous", "Share of the head's attention on the character just before the query (TransformerLens previous_token_head, \"mul\" score), averaged over the validation windows."},
        {"self", "Share of its attention on the query's own position."},
        {"first", "Share of its attention on the window's first position."},
        {"duplicate", "Share of its attention on earlier positions that hold the same character as the query (TransformerLens duplicate_token_head)."},
        {"induction", "Share of its attention on positions right after an earlier copy of the query's character (TransformerLens induction_head)."},
        {"mean_distance", "How many characters back the head reads on average, weighting each position by its attention."},
        {"mean_entropy", "How spread out a query's attention is, in nats, averaged over queries (0 = one position only)."},
        {"answer_source", "At the position that predicts an answer character, the share of the head's attention on the earlier positions holding that character, averaged over the probes of one question kind."},
        {"answer_span", "At the same positions, the share of the head's attention on the answer's place in the story (the first place the prompt holds the whole answer, e.g. 小丁 at positions 0-1), whichever of its characters it reads."},
        {"ablation_zero", "Validation loss and probe accuracy with this head's output set to zero at every position."},
        {"ablation_mean", "The same with the head's output replaced by its mean over the validation text, which keeps its average contribution and removes only what depends on where it reads."},
    };
    return definitions;
}

static nlohmann::json tally_json(const ProbeTally& tally) {
    nlohmann::json kinds = nlohmann::json::object();
    for (const auto& [kind, counts] : tally.by_kind) kinds[kind] = tally.accuracy(kind);
    return {{"correct", tally.correct}, {"total", tally.total}, {"accuracy", tally.accuracy()}, {"accuracy_by_kind", kinds}};
}

static nlohmann::json ablation_json(const AblationResult& effect, const InspectResult& result) {
    nlohmann::json out = nlohmann::json::object();
    if (result.has_text) {
        out["val_loss"] = effect.val_loss;
        out["val_loss_delta"] = effect.val_loss - result.val_loss;
    }
    if (result.has_probes) {
        out["probe_accuracy"] = effect.probes.accuracy();
        out["probe_accuracy_delta"] = effect.probes.accuracy() - result.probes.accuracy();
        for (const auto& [kind, counts] : result.probes.by_kind)
            out["by_kind"][kind] = {{"accuracy", effect.probes.accuracy(kind)},
                                    {"delta", effect.probes.accuracy(kind) - result.probes.accuracy(kind)}};
    }
    return out;
}

nlohmann::json heads_json(const InspectResult& result, const ReportContext& context) {
    nlohmann::json out;
    out["checkpoint"] = context.checkpoint;
    out["step"] = context.step;
    out["model"] = {{"d_model", context.model.d_model}, {"n_heads", context.model.n_heads},
                    {"n_layers", context.model.n_layers}, {"context", context.model.context},
                    {"vocab_size", context.model.vocab_size}, {"positions", context.model.positions}};
    out["validation"] = result.has_text ? nlohmann::json{{"text", context.text_name},
                                                         {"characters", result.text_characters},
                                                         {"loss", result.val_loss}}
                                        : nlohmann::json();
    out["probes"] = result.has_probes ? tally_json(result.probes) : nlohmann::json();
    if (result.has_probes) out["probes"]["file"] = context.probes_name;
    for (const auto& [name, sentence] : measure_definitions()) out["definitions"][name] = sentence;
    out["notes"] = context.notes;

    out["heads"] = nlohmann::json::array();
    nlohmann::json by_kind = nlohmann::json::object();
    for (const HeadReport& head : result.heads) {
        const std::string name = "L" + std::to_string(head.layer) + "H" + std::to_string(head.head);
        nlohmann::json h = {{"name", name}, {"layer", head.layer}, {"head", head.head}};
        if (result.has_text) {
            const HeadRoles& r = head.roles;
            h["roles"] = {{"previous", r.previous},   {"self", r.self},           {"first", r.first},
                          {"duplicate", r.duplicate}, {"induction", r.induction}, {"mean_distance", r.distance},
                          {"mean_entropy", r.entropy}};
        }
        if (result.has_probes)
            for (const auto& [kind, source] : head.answer_source)
                h["answer_source"][kind] = {{"share", source.share},
                                            {"by_answer_char", source.by_answer_char},
                                            {"span_share", source.span_share},
                                            {"span_by_answer_char", source.span_by_answer_char},
                                            {"probes", source.probes},
                                            {"probes_stating_the_answer", source.stated}};
        h["ablation"]["zero"] = ablation_json(head.zeroed, result);
        h["ablation"]["mean"] = result.has_text ? ablation_json(head.mean_replaced, result) : nlohmann::json();
        h["finding"] = head.finding;
        out["heads"].push_back(h);

        // The lesson's question, per kind: which head reads the answer, which head is needed.
        if (result.has_probes)
            for (const auto& [kind, counts] : result.probes.by_kind) {
                nlohmann::json& k = by_kind[kind];
                k["accuracy"] = result.probes.accuracy(kind);
                auto it = head.answer_source.find(kind);
                k["heads"][name]["answer_source"] = it == head.answer_source.end() ? 0.0 : it->second.share;
                k["heads"][name]["answer_span"] = it == head.answer_source.end() ? 0.0 : it->second.span_share;
                k["heads"][name]["zero_ablation_accuracy_delta"] =
                    head.zeroed.probes.accuracy(kind) - result.probes.accuracy(kind);
                if (result.has_text)
                    k["heads"][name]["mean_ablation_accuracy_delta"] =
                        head.mean_replaced.probes.accuracy(kind) - result.probes.accuracy(kind);
            }
    }
    out["by_kind"] = by_kind;
    return out;
}

}  // namespace tinyformer
