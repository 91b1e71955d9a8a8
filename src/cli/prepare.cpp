// tinyformer prepare (TEXT [--val-fraction F] | --train FILE --val FILE | --config FILE [--set K=V]...) --out DIR
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "tinyformer/data/prepared_data.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/progress.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer::cli {

Runner add_prepare(CLI::App& app) {
    struct Args {
        std::string text, train, val, config, out;
        std::vector<std::string> overrides;
        double val_fraction = 0.1;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand(
        "prepare", "Write a corpus's ids once (DIR/train.bin, val.bin, meta.json) for train to read as it goes.");
    cmd->add_option("text", args->text, "one text: its last --val-fraction is validation");
    auto* fraction = cmd->add_option("--val-fraction", args->val_fraction, "share of TEXT held out for validation, in (0, 1)")
                         ->default_val(0.1);
    cmd->add_option("--train", args->train, "or a training text ...");
    cmd->add_option("--val", args->val, "... and a validation text");
    cmd->add_option("--config", args->config, "or the [data] section of a TOML config");
    cmd->add_option("--set", args->overrides, "override a config key, e.g. --set data.path=big.txt (repeatable)");
    cmd->add_option("--out", args->out, "the directory to write")->required();
    cmd->footer("Then train with --set data.prepared=DIR (or [data] prepared = \"DIR\"): the ids are read from the files,\n"
                "one byte each up to 256 distinct characters, two up to 65,536. The split is the one data.path\n"
                "would make, so a run resumes on the prepared ids of the text it started on.");
    return [cmd, args, fraction]() -> int {
        if (!cmd->parsed()) return -1;
        const int given = !args->text.empty() + (!args->train.empty() || !args->val.empty()) + !args->config.empty();
        if (given != 1)
            throw InputError("prepare: give one corpus: TEXT, or --train FILE --val FILE, or --config FILE");
        DataConfig data;
        if (!args->config.empty()) {
            data = load_config(args->config, args->overrides).data;
            if (!data.prepared.empty())
                throw InputError(args->config + ": data.prepared: the config names prepared ids already, expected "
                                 "a text (data.path, or data.train_path and data.val_path)");
        } else {
            if (!args->overrides.empty()) throw InputError("prepare: --set needs --config");
            if (!(args->val_fraction > 0 && args->val_fraction < 1))
                throw InputError("prepare: --val-fraction " + std::to_string(args->val_fraction) +
                                 ", expected a number in (0, 1)");
            if (fraction->count() > 0 && args->text.empty())
                throw InputError("prepare: --val-fraction splits TEXT; with --train and --val it has no use");
            if (args->train.empty() != args->val.empty()) throw InputError("prepare: --train and --val go together");
            data.path = args->text;
            data.train_path = args->train;
            data.val_path = args->val;
            data.val_fraction = args->val_fraction;
        }
        const auto start = std::chrono::steady_clock::now();
        const PreparedSummary summary = prepare_corpus(data, args->out, isatty(STDERR_FILENO));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const int64_t id_bytes = (summary.train_ids + summary.val_ids) * summary.id_bytes;
        std::printf("prepared %s: %lld training + %lld validation ids, vocabulary %lld, %s (%s of text, %s of ids) "
                    "in %.1fs\n",
                    args->out.c_str(), static_cast<long long>(summary.train_ids),
                    static_cast<long long>(summary.val_ids), static_cast<long long>(summary.vocab_size),
                    summary.id_bytes == 1 ? "uint8" : "uint16", size_str(static_cast<double>(summary.text_bytes)).c_str(),
                    size_str(static_cast<double>(id_bytes)).c_str(), seconds);
        std::printf("train on it with --set data.prepared=%s\n", args->out.c_str());
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
