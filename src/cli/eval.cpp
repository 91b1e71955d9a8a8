// tinyformer eval --checkpoint PATH [--text FILE] [--probes FILE] [--batches N [--batch-size B] [--seed S]] [--json]
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinyformer/data/dataset.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"
#include "tinyformer/train/evaluate.hpp"

namespace tinyformer::cli {

Runner add_eval(CLI::App& app) {
    struct Args {
        std::string checkpoint, text, probes;
        int64_t batches = 0, batch_size = 32, seed = 1337;
        bool json = false;
    };
    auto args = std::make_shared<Args>();
    auto engine = std::make_shared<EngineOptions>();
    auto* cmd = app.add_subcommand("eval", "Score a checkpoint: loss, bits per character, perplexity, probes.");
    cmd->add_option("--checkpoint", args->checkpoint, "a .safetensors file or a run directory")->required();
    cmd->add_option("--text", args->text, "text to score (default: the validation text of the checkpoint's config)");
    cmd->add_option("--probes", args->probes, "prompt<TAB>answer file (default: the config's data.probes_path)");
    cmd->add_option("--batches", args->batches,
                    "score this many batches of random windows instead of the whole text (as train.eval_batches)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--batch-size", args->batch_size, "windows per batch with --batches")
        ->check(CLI::PositiveNumber)
        ->default_val(32);
    cmd->add_option("--seed", args->seed, "the windows' seed with --batches")->check(CLI::NonNegativeNumber)->default_val(1337);
    cmd->add_flag("--json", args->json, "print one JSON object");
    cmd->footer("The text is cut into consecutive windows ids[k*T : k*T+T+1], as torch_model.py eval does.");
    add_engine_options(cmd, *engine);
    return [cmd, args, engine]() -> int {
        if (!cmd->parsed()) return -1;
        apply_engine_options(*engine);
        LoadedModel loaded = load_model(args->checkpoint);
        const DataConfig& data = loaded.config.data;
        TokenIds ids;
        std::string text_name = args->text;
        if (!args->text.empty()) {
            ids = read_ids(args->text, loaded.vocab, true);
        } else if (data.has_corpus()) {
            DataConfig text_only = data;
            text_only.probes_path.clear();
            Corpus corpus = load_corpus(text_only, true);  // the validation text as training split it
            ids = corpus.val;
            text_name = data.validation_name();
            if (corpus.vocab.chars() != loaded.vocab.chars())
                throw InputError(text_name + ": its corpus no longer has the checkpoint's vocabulary");
        } else {
            throw InputError("eval: the checkpoint's config names no validation text; give --text FILE");
        }
        if (ids.size() < 2) throw InputError(text_name + ": needs at least 2 characters to score");
        const int64_t T = loaded.model->config().context;
        TextScore score;
        if (args->batches > 0) {  // random windows, as train.eval_batches draws them
            const std::vector<int64_t> starts =
                random_windows(ids.size(), T, args->batches * args->batch_size, static_cast<uint64_t>(args->seed));
            score = score_windows(*loaded.model, ids, starts, true, args->batch_size);
        } else {
            score = score_text(*loaded.model, ids, 0, true);
        }

        std::string probes_path = args->probes.empty() ? data.probes_path : args->probes;
        nlohmann::json out = {{"checkpoint", loaded.path}, {"text", text_name}, {"loss", score.loss},
                              {"bpc", score.bpc},          {"perplexity", score.perplexity},
                              {"predicted", score.predicted}, {"windows", score.windows},
                              {"over", args->batches > 0 ? "random windows" : "the whole text"}};
        if (!probes_path.empty()) {
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
        if (args->json) {
            std::printf("%s\n", out.dump(2).c_str());
            return kExitOk;
        }
        std::printf("text        %s\n", text_name.c_str());
        std::printf("loss        %.4f nats/char over %lld characters", score.loss, static_cast<long long>(score.predicted));
        if (args->batches > 0)
            std::printf(" in %lld random windows (seed %lld)", static_cast<long long>(score.windows),
                        static_cast<long long>(args->seed));
        std::printf("\n");
        std::printf("bpc         %.4f bits/char\n", score.bpc);
        std::printf("perplexity  %.3f\n", score.perplexity);
        if (out.contains("probe_accuracy")) {
            std::printf("probes      %lld/%lld correct (%.1f %%)", static_cast<long long>(out["probe_correct"].get<int64_t>()),
                        static_cast<long long>(out["probe_total"].get<int64_t>()), 100 * out["probe_accuracy"].get<double>());
            for (auto& [kind, accuracy] : out["probe_accuracy_by_kind"].items())
                std::printf("  %s %.1f %%", kind.c_str(), 100 * accuracy.get<double>());
            std::printf("\n");
            for (const auto& miss : out["misses"])
                std::printf("  miss: %s → expected %s, got %s\n", miss["prompt"].get<std::string>().c_str(),
                            miss["expected"].get<std::string>().c_str(), miss["got"].get<std::string>().c_str());
        }
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
