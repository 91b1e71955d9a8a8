#include "tinyformer/train/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/threads.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/progress.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer {

// Sum of cross-entropies (not the mean) of the windows starting at `starts`, all of length
// `length` + 1 ids, in one batch.
static double window_loss_sum(const Transformer& model, const TokenIds& ids, const std::vector<int64_t>& starts,
                              int64_t length) {
    const Batch batch = windows_at(ids, starts, length);
    Tensor loss = model.loss(batch.inputs, batch.targets);
    return loss.item() * static_cast<double>(static_cast<int64_t>(starts.size()) * length);
}

// Windows per forward pass. The loss never holds a pass's logits [B,T,V] whole (see
// linear_cross_entropy), so a large vocabulary needs no smaller passes.
constexpr size_t kWindowsPerPass = 32;

// With several processes (a data-parallel run), each scores every N-th pass and the passes'
// sums are put together in their order on every process: the same numbers as one process
// scoring them all (a pass's sum is the same wherever it is computed; a sum with zeros is exact).
TextScore score_windows(const Transformer& model, const TokenIds& ids, const std::vector<int64_t>& starts,
                        bool progress_bar, int64_t batch_size) {
    NoGradScope no_grad;
    const int64_t T = model.config().context, n = ids.size();
    const size_t per_pass = batch_size > 0 ? static_cast<size_t>(batch_size) : kWindowsPerPass;
    // The passes in the order their sums are added: full windows in groups of per_pass, as
    // they come; a shorter window (the text's last) alone, when it comes, so before the group
    // still filling up then.
    struct Pass {
        std::vector<int64_t> starts;
        int64_t length;  // predicted characters per window
    };
    std::vector<Pass> passes;
    bool open_group = false;  // the last pass is a group of full windows still filling up
    for (int64_t start : starts) {
        const int64_t length = std::min(T, n - 1 - start);  // predicted characters in this window
        if (length != T) {
            passes.insert(open_group ? passes.end() - 1 : passes.end(), Pass{{start}, length});
            continue;
        }
        if (!open_group) passes.push_back({{}, T});
        passes.back().starts.push_back(start);
        open_group = passes.back().starts.size() < per_pass;
    }
    ProgressBar progress("evaluating", static_cast<int64_t>(starts.size()), ProgressBar::Unit::windows, progress_bar);
    std::vector<double> pass_sums(passes.size(), 0.0);
    int64_t predicted = 0, done = 0;
    for (size_t p = 0; p < passes.size(); ++p) {
        const int64_t windows = static_cast<int64_t>(passes[p].starts.size());
        predicted += windows * passes[p].length;
        done += windows;
        if (static_cast<int>(p % world_size()) != rank()) continue;
        pass_sums[p] = window_loss_sum(model, ids, passes[p].starts, passes[p].length);
        progress.update(done);
        share_cores();
    }
    all_reduce_sum(pass_sums.data(), static_cast<int64_t>(pass_sums.size()));
    double total = 0;
    for (double pass_sum : pass_sums) total += pass_sum;

    TextScore score;
    score.predicted = predicted;
    score.windows = static_cast<int64_t>(starts.size());
    score.loss = predicted ? total / static_cast<double>(predicted) : 0.0;
    score.bpc = score.loss / std::log(2.0);
    score.perplexity = std::exp(score.loss);
    return score;
}

TextScore score_text(const Transformer& model, const TokenIds& ids, int64_t max_windows, bool progress_bar) {
    const int64_t T = model.config().context, n = ids.size();
    std::vector<int64_t> starts;  // every window ids[k*T : k*T+T+1] with at least 2 ids
    for (int64_t k = 0; k * T < n - 1; ++k) starts.push_back(k * T);
    if (max_windows > 0 && static_cast<int64_t>(starts.size()) > max_windows) {
        std::vector<int64_t> spaced;
        for (int64_t i = 0; i < max_windows; ++i) spaced.push_back(starts[i * starts.size() / max_windows]);
        starts = spaced;
    }
    return score_windows(model, ids, starts, progress_bar);
}

std::vector<int64_t> random_windows(int64_t text_length, int64_t context, int64_t count, uint64_t seed) {
    if (text_length < context + 1)
        throw InputError("the validation text has " + std::to_string(text_length) +
                         " characters, fewer than one window of model.context + 1 = " + std::to_string(context + 1));
    Rng rng(seed);
    std::vector<int64_t> starts(static_cast<size_t>(count));
    for (int64_t& start : starts) start = static_cast<int64_t>(rng.below(text_length - context));
    return starts;
}

// With several processes, each answers every N-th probe; the answers are gathered, then
// counted in the probes' order on every process.
ProbeScore score_probes(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& probes) {
    SampleOptions greedy;
    greedy.temperature = 0;
    Rng unused(0);
    Decoder decoder(model);  // one for every probe
    nlohmann::json mine = nlohmann::json::array();  // [probe index, answer given] for this process's probes
    for (size_t i = static_cast<size_t>(rank()); i < probes.size(); i += static_cast<size_t>(world_size())) {
        greedy.max_new = static_cast<int64_t>(probes[i].answer.size());
        mine.push_back({i, encode_utf8(generate(decoder, vocab, probes[i].prompt, greedy, unused))});
    }
    std::vector<std::u32string> answers(probes.size());
    for (const std::string& theirs : all_gather(mine.dump()))
        for (const auto& answer : nlohmann::json::parse(theirs))
            answers[answer[0].get<size_t>()] = decode_utf8(answer[1].get<std::string>(), "a probe's answer");

    ProbeScore score;
    for (size_t i = 0; i < probes.size(); ++i) {
        const Probe& probe = probes[i];
        ProbeResult result{probe, answers[i], answers[i] == probe.answer};
        auto& [kind_correct, kind_total] = score.by_kind[probe.kind];
        ++kind_total;
        ++score.total;
        if (result.correct) {
            ++kind_correct;
            ++score.correct;
        } else {
            score.misses.push_back(result);
        }
    }
    return score;
}

namespace {

// The text `tinyformer eval` scores, and the name it is reported by.
struct EvalText {
    TokenIds ids;
    std::string name;
};

// `text_path`, else the validation text of the checkpoint's config as training split it.
EvalText eval_text(const LoadedModel& loaded, const std::string& text_path) {
    const DataConfig& data = loaded.config.data;
    EvalText text{{}, text_path};
    if (!text_path.empty()) {
        text.ids = read_ids(text_path, loaded.vocab, true);
    } else if (data.has_corpus()) {
        if (const std::string missing = missing_data_file(loaded, DataFiles::corpus); !missing.empty())
            throw InputError(missing + "; score a text with --text FILE");
        DataConfig text_only = data;
        text_only.probes_path.clear();
        Corpus corpus = load_corpus(text_only, true);  // the validation text as training split it
        text.ids = corpus.val;
        text.name = data.validation_name();
        if (corpus.vocab.chars() != loaded.vocab.chars())
            throw InputError(text.name + ": its corpus no longer has the checkpoint's vocabulary");
    } else {
        throw InputError("eval: the checkpoint's config names no validation text; give --text FILE");
    }
    if (text.ids.size() < 2) throw InputError(text.name + ": needs at least 2 characters to score");
    return text;
}

// The whole text in consecutive windows, or the request's batches of random windows.
TextScore score_eval_text(const Transformer& model, const TokenIds& ids, const EvalRequest& request) {
    const int64_t T = model.config().context;
    if (request.batches > 0) {  // random windows, as train.eval_batches draws them
        const std::vector<int64_t> starts =
            random_windows(ids.size(), T, request.batches * request.batch_size, static_cast<uint64_t>(request.seed));
        return score_windows(model, ids, starts, true, request.batch_size);
    }
    return score_text(model, ids, 0, true);
}

// The probes' accuracy, overall and by kind, and each miss, added to eval's JSON object.
void add_probe_scores(nlohmann::json& out, const LoadedModel& loaded, const std::string& probes_path) {
    std::vector<Probe> probes = load_probes(probes_path);
    for (const Probe& probe : probes) loaded.vocab.encode(probe.prompt + probe.answer, probes_path);
    ProbeScore result = score_probes(*loaded.model, loaded.vocab, probes);
    out["probes"] = probes_path;
    out["probe_accuracy"] = result.accuracy();
    out["probe_correct"] = result.correct;
    out["probe_total"] = result.total;
    for (const auto& [kind, counts] : result.by_kind)
        out["probe_accuracy_by_kind"][kind] = static_cast<double>(counts.first) / counts.second;
    out["misses"] = nlohmann::json::array();
    for (const ProbeResult& miss : result.misses)
        out["misses"].push_back({{"prompt", encode_utf8(miss.probe.prompt)},
                                 {"expected", encode_utf8(miss.probe.answer)},
                                 {"got", encode_utf8(miss.answer_given)},
                                 {"kind", miss.probe.kind}});
}

// eval's table: the scores of `out`, one per line, then the probes and their misses.
void print_eval_table(const nlohmann::json& out, const TextScore& score, const EvalRequest& request) {
    std::printf("text        %s\n", out["text"].get<std::string>().c_str());
    std::printf("loss        %.4f nats/char over %lld characters", score.loss, static_cast<long long>(score.predicted));
    if (request.batches > 0)
        std::printf(" in %lld random windows (seed %lld)", static_cast<long long>(score.windows),
                    static_cast<long long>(request.seed));
    std::printf("\n");
    std::printf("bpc         %.4f bits/char\n", score.bpc);
    std::printf("perplexity  %.3f\n", score.perplexity);
    if (out.contains("probe_accuracy")) {
        std::printf("probes      %lld/%lld correct (%.1f %%)",
                    static_cast<long long>(out["probe_correct"].get<int64_t>()),
                    static_cast<long long>(out["probe_total"].get<int64_t>()),
                    100 * out["probe_accuracy"].get<double>());
        // By kind: none when the probes file held no probe.
        const nlohmann::json by_kind = out.value("probe_accuracy_by_kind", nlohmann::json::object());
        for (const auto& [kind, accuracy] : by_kind.items())
            std::printf("  %s %.1f %%", kind.c_str(), 100 * accuracy.get<double>());
        std::printf("\n");
        for (const auto& miss : out["misses"])
            std::printf("  miss: %s → expected %s, got %s\n", miss["prompt"].get<std::string>().c_str(),
                        miss["expected"].get<std::string>().c_str(), miss["got"].get<std::string>().c_str());
    }
}

}  // namespace

void evaluate_checkpoint(const EvalRequest& request) {
    LoadedModel loaded = load_model(request.checkpoint);
    if (request.probes.empty())
        if (const std::string missing = missing_data_file(loaded, DataFiles::probes); !missing.empty())
            throw InputError(missing + "; give the probes with --probes FILE");
    const EvalText text = eval_text(loaded, request.text);
    const TextScore score = score_eval_text(*loaded.model, text.ids, request);

    const std::string probes_path = request.probes.empty() ? loaded.config.data.probes_path : request.probes;
    nlohmann::json out = {{"checkpoint", loaded.path}, {"text", text.name}, {"loss", score.loss},
                          {"bpc", score.bpc},          {"perplexity", score.perplexity},
                          {"predicted", score.predicted}, {"windows", score.windows},
                          {"over", request.batches > 0 ? "random windows" : "the whole text"}};
    if (!probes_path.empty()) add_probe_scores(out, loaded, probes_path);
    if (request.json) {
        std::printf("%s\n", out.dump(2).c_str());
        return;
    }
    print_eval_table(out, score, request);
}

}  // namespace tinyformer
