// Activation patching and path patching over the probes' corrupted twins (patching.hpp).
#include "tinyformer/patching.hpp"

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

// Sums of logit differences over one kind's twins; normalised once all are in.
struct KindSums {
    int64_t twins = 0;
    double clean = 0, corrupted = 0;
    std::vector<double> every_position, answer_position;  // [L*H]
    std::vector<PathEdge> paths;                          // q, k, v hold sums
};

}  // namespace

Patching activation_patching(const Transformer& transformer, const Vocabulary& vocab, const std::vector<Probe>& probes) {
    const DenseModel model = dense_model(transformer);
    const int64_t L = model.config.n_layers, H = model.config.n_heads;
    const std::vector<ProbeTwin> twins = corrupted_twins(vocab, probes, model.config.context);

    Patching result;
    result.probes = static_cast<int64_t>(probes.size());
    result.skipped = result.probes - static_cast<int64_t>(twins.size());
    std::map<std::string, KindSums> sums;

    for (const ProbeTwin& twin : twins) {
        const Trace clean = traced_forward(model, twin.clean);
        const Trace corrupted = traced_forward(model, twin.corrupted);
        const int64_t T = static_cast<int64_t>(twin.clean.size());
        KindSums& kind = sums[twin.kind];
        const bool first_of_kind = kind.twins == 0;
        if (first_of_kind) {
            kind.every_position.assign(L * H, 0.0);
            kind.answer_position.assign(L * H, 0.0);
            for (int64_t l1 = 0; l1 < L; ++l1)
                for (int64_t l2 = l1 + 1; l2 < L; ++l2)
                    for (int64_t h1 = 0; h1 < H; ++h1)
                        for (int64_t h2 = 0; h2 < H; ++h2) kind.paths.push_back({l1, h1, l2, h2, 0, 0, 0});
        }
        ++kind.twins;
        const double clean_difference = logit_difference(clean, twin);
        const double corrupted_difference = logit_difference(corrupted, twin);
        kind.clean += clean_difference;
        kind.corrupted += corrupted_difference;

        // Activation patching: one head's clean output in the corrupted run.
        for (int64_t l = 0; l < L; ++l)
            for (int64_t h = 0; h < H; ++h) {
                const Eigen::MatrixXd* source = &clean.z[l][h];
                kind.every_position[l * H + h] +=
                    logit_difference(traced_forward(model, twin.corrupted, patch_output(l, h, -1, *source)), twin);
                kind.answer_position[l * H + h] +=
                    logit_difference(traced_forward(model, twin.corrupted, patch_output(l, h, T - 1, *source)), twin);
            }

        // Path patching: the sender's clean contribution, in place of its corrupted one, seen
        // by one input of the receiver only.
        for (PathEdge& edge : kind.paths) {
            const Eigen::MatrixXd delta = path_delta(model, edge.sender_layer, edge.sender_head, clean, corrupted);
            for (char input : {'q', 'k', 'v'}) {
                const Interventions path = patch_input(edge.receiver_layer, edge.receiver_head, input, delta);
                const double patched = logit_difference(traced_forward(model, twin.corrupted, path), twin);
                (input == 'q' ? edge.q : input == 'k' ? edge.k : edge.v) += patched;
            }
        }

        // The kind's first twin, position by position.
        if (first_of_kind) {
            KindPatching& detail = result.kinds[twin.kind];
            detail.example = twin;
            detail.example_clean = clean_difference;
            detail.example_corrupted = corrupted_difference;
            detail.example_by_position.assign(L * H, std::vector<double>(T, 0.0));
            for (int64_t l = 0; l < L; ++l)
                for (int64_t h = 0; h < H; ++h)
                    for (int64_t t = 0; t < T; ++t) {
                        const Trace patched = traced_forward(model, twin.corrupted, patch_output(l, h, t, clean.z[l][h]));
                        detail.example_by_position[l * H + h][t] =
                            recovered_fraction(logit_difference(patched, twin), clean_difference, corrupted_difference);
                    }
        }
    }

    for (auto& [name, kind] : sums) {
        KindPatching& out = result.kinds[name];
        const double n = static_cast<double>(kind.twins);
        out.twins = kind.twins;
        out.clean = kind.clean / n;
        out.corrupted = kind.corrupted / n;
        for (double sum : kind.every_position) out.every_position.push_back(recovered_fraction(sum / n, out.clean, out.corrupted));
        for (double sum : kind.answer_position)
            out.answer_position.push_back(recovered_fraction(sum / n, out.clean, out.corrupted));
        for (PathEdge edge : kind.paths) {
            edge.q = recovered_fraction(edge.q / n, out.clean, out.corrupted);
            edge.k = recovered_fraction(edge.k / n, out.clean, out.corrupted);
            edge.v = recovered_fraction(edge.v / n, out.clean, out.corrupted);
            out.paths.push_back(edge);
        }
    }
    return result;
}

}  // namespace tinyformer
