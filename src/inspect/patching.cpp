// Activation patching and path patching over the probes' corrupted twins (patching.hpp).
#include "tinyformer/inspect/patching.hpp"

#include <algorithm>

namespace tinyformer {

// ---- the probes' twins ----

const char* corruption_rule() {
    return "each probe's answer replaced, everywhere the prompt holds it, by the next answer of the same kind "
           "(in the order the probes first give them) with as many characters and another first character that "
           "the prompt does not already hold";
}

std::vector<ProbeTwin> corrupted_twins(const Vocabulary& vocab, const std::vector<Probe>& probes, int64_t context) {
    std::map<std::string, std::vector<std::u32string>> answers_of_kind;  // in order of first appearance
    for (const Probe& probe : probes) {
        auto& answers = answers_of_kind[probe.kind];
        if (std::find(answers.begin(), answers.end(), probe.answer) == answers.end()) answers.push_back(probe.answer);
    }
    std::vector<ProbeTwin> twins;
    for (size_t i = 0; i < probes.size(); ++i) {
        const Probe& probe = probes[i];
        const std::u32string& answer = probe.answer;
        if (answer.empty() || probe.prompt.find(answer) == std::u32string::npos) continue;
        if (static_cast<int64_t>(probe.prompt.size()) > context) continue;
        const auto& answers = answers_of_kind[probe.kind];
        const size_t own = static_cast<size_t>(std::find(answers.begin(), answers.end(), answer) - answers.begin());
        for (size_t step = 1; step < answers.size(); ++step) {
            const std::u32string& other = answers[(own + step) % answers.size()];
            if (other.size() != answer.size() || other[0] == answer[0]) continue;
            if (probe.prompt.find(other) != std::u32string::npos) continue;
            std::u32string corrupted = probe.prompt;
            for (size_t at = corrupted.find(answer); at != std::u32string::npos;
                 at = corrupted.find(answer, at + other.size()))
                corrupted.replace(at, answer.size(), other);
            ProbeTwin twin;
            twin.probe = i;
            twin.kind = probe.kind;
            twin.clean = vocab.encode(probe.prompt, "probe " + std::to_string(i + 1));
            twin.corrupted = vocab.encode(corrupted, "probe " + std::to_string(i + 1) + " (corrupted)");
            twin.corrupted_answer = other;
            twin.clean_answer = vocab.id(answer[0]);
            twin.corrupted_answer_id = vocab.id(other[0]);
            twins.push_back(std::move(twin));
            break;
        }
    }
    return twins;
}

double logit_difference(const Trace& run, const ProbeTwin& twin) {
    const Eigen::Index last = run.logits.rows() - 1;  // the position that predicts the answer's first character
    return run.logits(last, twin.clean_answer) - run.logits(last, twin.corrupted_answer_id);
}

double recovered_fraction(double patched, double clean, double corrupted) {
    return clean == corrupted ? 0.0 : (patched - corrupted) / (clean - corrupted);
}

// ---- the measurements ----

Eigen::MatrixXd path_delta(const DenseModel& model, int64_t sender_layer, int64_t sender_head, const Trace& clean,
                           const Trace& corrupted) {
    const int64_t d = model.config.head_width();
    // What the head adds to the residual stream: z · W_O^h.   [T,d]·[d,D] = [T,D]
    const Eigen::MatrixXd W_O = model.layers[sender_layer].out_proj.middleCols(sender_head * d, d).transpose();
    return (clean.z[sender_layer][sender_head] - corrupted.z[sender_layer][sender_head]) * W_O;
}

namespace {

// One twin's logit differences: unpatched, and under each patch.
struct TwinDifferences {
    double clean = 0, corrupted = 0;
    std::vector<double> every_position, answer_position;  // [L*H]
    std::vector<double> paths;                            // [edge][q, k, v], edges as sender_receiver_pairs orders them
};

// Every (earlier head, later head) pair, as Circuits::composition orders them.
std::vector<PathEdge> sender_receiver_pairs(int64_t L, int64_t H) {
    std::vector<PathEdge> pairs;
    for (int64_t l1 = 0; l1 < L; ++l1)
        for (int64_t l2 = l1 + 1; l2 < L; ++l2)
            for (int64_t h1 = 0; h1 < H; ++h1)
                for (int64_t h2 = 0; h2 < H; ++h2) pairs.push_back({l1, h1, l2, h2, 0, 0, 0});
    return pairs;
}

TwinDifferences measure_twin(const DenseModel& model, const ProbeTwin& twin, const std::vector<PathEdge>& pairs) {
    const int64_t L = model.config.n_layers, H = model.config.n_heads;
    const int64_t answer_position = static_cast<int64_t>(twin.clean.size()) - 1;
    const Trace clean = traced_forward(model, twin.clean);
    const Trace corrupted = traced_forward(model, twin.corrupted);
    auto corrupted_with = [&](const Interventions& patch) {
        return logit_difference(traced_forward(model, twin.corrupted, patch, &corrupted), twin);
    };
    TwinDifferences out;
    out.clean = logit_difference(clean, twin);
    out.corrupted = logit_difference(corrupted, twin);
    // Activation patching: one head's clean output in the corrupted run.
    for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < H; ++h) {
            out.every_position.push_back(corrupted_with(patch_output(l, h, -1, clean.z[l][h])));
            out.answer_position.push_back(corrupted_with(patch_output(l, h, answer_position, clean.z[l][h])));
        }
    // Path patching: the sender's clean contribution, in place of its corrupted one, seen by
    // one input of the receiver only.
    for (const PathEdge& pair : pairs) {
        const Eigen::MatrixXd delta = path_delta(model, pair.sender_layer, pair.sender_head, clean, corrupted);
        for (char input : {'q', 'k', 'v'})
            out.paths.push_back(corrupted_with(patch_input(pair.receiver_layer, pair.receiver_head, input, delta)));
    }
    return out;
}

}  // namespace

Patching activation_patching(const Transformer& transformer, const Vocabulary& vocab, const std::vector<Probe>& probes) {
    const DenseModel model = dense_model(transformer);
    const int64_t L = model.config.n_layers, H = model.config.n_heads;
    const std::vector<ProbeTwin> twins = corrupted_twins(vocab, probes, model.config.context);
    const std::vector<PathEdge> pairs = sender_receiver_pairs(L, H);

    // Every twin on its own (in parallel: each writes only its own slot), then summed in order,
    // so that the result does not depend on the thread count.
    std::vector<TwinDifferences> measured(twins.size());
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < twins.size(); ++i) measured[i] = measure_twin(model, twins[i], pairs);

    Patching result;
    result.probes = static_cast<int64_t>(probes.size());
    result.skipped = result.probes - static_cast<int64_t>(twins.size());
    std::map<std::string, TwinDifferences> sums;  // by kind
    for (size_t i = 0; i < twins.size(); ++i) {
        const TwinDifferences& one = measured[i];
        KindPatching& kind = result.kinds[twins[i].kind];
        TwinDifferences& sum = sums[twins[i].kind];
        if (kind.twins++ == 0) {
            sum = one;
            kind.example = twins[i];
            kind.example_clean = one.clean;
            kind.example_corrupted = one.corrupted;
            continue;
        }
        sum.clean += one.clean;
        sum.corrupted += one.corrupted;
        for (size_t j = 0; j < sum.every_position.size(); ++j) sum.every_position[j] += one.every_position[j];
        for (size_t j = 0; j < sum.answer_position.size(); ++j) sum.answer_position[j] += one.answer_position[j];
        for (size_t j = 0; j < sum.paths.size(); ++j) sum.paths[j] += one.paths[j];
    }

    for (auto& entry : result.kinds) {  // (not a structured binding: clang 14 cannot capture one)
        KindPatching& kind = entry.second;
        const TwinDifferences& sum = sums[entry.first];
        const double n = static_cast<double>(kind.twins);
        kind.clean = sum.clean / n;
        kind.corrupted = sum.corrupted / n;
        auto recovered = [&](double patched_sum) { return recovered_fraction(patched_sum / n, kind.clean, kind.corrupted); };
        for (double patched : sum.every_position) kind.every_position.push_back(recovered(patched));
        for (double patched : sum.answer_position) kind.answer_position.push_back(recovered(patched));
        for (size_t e = 0; e < pairs.size(); ++e) {
            PathEdge edge = pairs[e];
            edge.q = recovered(sum.paths[3 * e]);
            edge.k = recovered(sum.paths[3 * e + 1]);
            edge.v = recovered(sum.paths[3 * e + 2]);
            kind.paths.push_back(edge);
        }

        // The kind's first twin, position by position.
        const ProbeTwin& twin = kind.example;
        const int64_t T = static_cast<int64_t>(twin.clean.size());
        const Trace clean = traced_forward(model, twin.clean), corrupted = traced_forward(model, twin.corrupted);
        kind.example_by_position.assign(L * H, std::vector<double>(T, 0.0));
#pragma omp parallel for collapse(2) schedule(dynamic)
        for (int64_t lh = 0; lh < L * H; ++lh)
            for (int64_t t = 0; t < T; ++t) {
                const Trace patched = traced_forward(model, twin.corrupted, patch_output(lh / H, lh % H, t, clean.z[lh / H][lh % H]), &corrupted);
                kind.example_by_position[lh][t] =
                    recovered_fraction(logit_difference(patched, twin), kind.example_clean, kind.example_corrupted);
            }
    }
    return result;
}

}  // namespace tinyformer
