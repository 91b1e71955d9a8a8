// How the roles formed, recorded: the fixed probe subset and the "roles" object of a metrics
// row (the report's side is src/inspect/roles_over_training.cpp).
#include "tinyformer/inspect/training_roles.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include "tinyformer/inspect/circuits_report.hpp"
#include "tinyformer/inspect/inspect.hpp"

namespace tinyformer {

std::vector<Probe> role_probes(const std::vector<Probe>& probes) {
    std::map<std::string, std::vector<size_t>> by_kind;  // kind → its probes' places in the file
    for (size_t i = 0; i < probes.size(); ++i) by_kind[probes[i].kind].push_back(i);
    if (by_kind.empty()) return {};
    const size_t per_kind = std::max<size_t>(1, kRoleProbes / by_kind.size());

    std::vector<size_t> chosen;
    for (const auto& [kind, places] : by_kind) {
        const size_t n = places.size(), m = std::min(n, per_kind);
        for (size_t i = 0; i < m; ++i) chosen.push_back(places[i * n / m]);  // evenly over the kind's probes
    }
    std::sort(chosen.begin(), chosen.end());  // file order
    std::vector<Probe> subset;
    for (size_t place : chosen) subset.push_back(probes[place]);
    return subset;
}

std::string role_probes_rule() {
    return "at most " + std::to_string(kRoleProbes) + " probes: per question kind, max(1, " +
           std::to_string(kRoleProbes) +
           " / number of kinds), spread evenly over that kind's probes in file order (the i-th of m chosen from "
           "the kind's n is its probe floor(i*n/m), counting from 0)";
}

nlohmann::json training_roles(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& subset) {
    const int64_t H = model.config().n_heads;
    const ProbeTally tally = probe_accuracy(model, vocab, subset);
    const std::vector<std::map<std::string, AnswerSource>> sources = answer_sources(model, vocab, subset);  // [L*H]

    nlohmann::json roles = {{"probes", subset.size()}, {"rule", role_probes_rule()}};
    for (const auto& [kind, counts] : tally.by_kind) {
        roles["probes_by_kind"][kind] = counts.second;
        roles["accuracy"][kind] = tally.accuracy(kind);
    }
    for (size_t i = 0; i < sources.size(); ++i) {
        nlohmann::json& head = roles["span_share"][head_label(static_cast<int64_t>(i) / H, static_cast<int64_t>(i) % H)];
        for (const auto& [kind, counts] : tally.by_kind) {
            // null when no probe of the kind fits the context and states its answer in the prompt
            auto source = sources[i].find(kind);
            head[kind] = source != sources[i].end() && source->second.stated > 0
                             ? nlohmann::json(source->second.span_share)
                             : nlohmann::json(nullptr);
        }
    }
    return roles;
}

nlohmann::json training_roles_of_probes(const Transformer& model, const Vocabulary& vocab,
                                        const std::vector<Probe>& probes) {
    const std::vector<Probe> subset = role_probes(probes);
    if (subset.empty()) return nullptr;
    return training_roles(model, vocab, subset);
}

std::vector<nlohmann::json> read_metrics_rows(const std::string& path) {
    std::vector<nlohmann::json> rows;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
        if (!row.is_discarded() && row.is_object()) rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace tinyformer
