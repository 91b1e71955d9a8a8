#include "tinyformer/train/trainer.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/build_info.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/interrupts.hpp"
#include "tinyformer/support/plot.hpp"
#include "tinyformer/support/progress.hpp"
#include "tinyformer/train/checkpoint.hpp"
#include "tinyformer/train/evaluate.hpp"
#include "tinyformer/train/optim.hpp"
#include "tinyformer/train/run_lock.hpp"
#include "tinyformer/train/step.hpp"

namespace fs = std::filesystem;

namespace tinyformer {
namespace {


using Clock = std::chrono::steady_clock;

// FNV-1a, 64 bits, of `size` bytes, as 16 hex digits: a fingerprint to compare, not a secret.
std::string bytes_hash(const void* bytes, int64_t size) {
    uint64_t hash = 0xcbf29ce484222325ULL;
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (int64_t i = 0; i < size; ++i) hash = (hash ^ p[i]) * 0x100000001b3ULL;
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

std::string duration_str(double seconds) {
    char buffer[48];
    if (seconds < 60) std::snprintf(buffer, sizeof buffer, "%.1fs", seconds);
    else {  // clamped: an ETA for 2^63 steps must not overflow the cast
        const long long whole = seconds < 1e15 ? static_cast<long long>(seconds) : 1'000'000'000'000'000LL;
        std::snprintf(buffer, sizeof buffer, "%lldm%02llds", whole / 60, whole % 60);
    }
    return buffer;
}

// ---- the run's random draws ----

// Where the batch windows come from: tinyformer's own generator (rng.hpp, seeded apart from
// the initialisation's), or with train.rng = "torch" PyTorch's generator, one stream that
// has first drawn the initial weights, exactly as torch_reference.py train draws both.
struct BatchDraws {
    explicit BatchDraws(const TrainConfig& train)
        : use_torch(train.rng == "torch"),
          own(static_cast<uint64_t>(train.seed) ^ 0x5eedba7c4ULL),
          torch(static_cast<uint64_t>(train.seed)) {}

    // The starts of the next batch's windows: all of them, the same on every process.
    std::vector<int64_t> next(const TokenIds& ids, int64_t batch_size, int64_t context) {
        return use_torch ? sample_starts(ids, batch_size, context, torch) : sample_starts(ids, batch_size, context, own);
    }

    bool use_torch;
    Rng own;
    TorchRng torch;
};

// ---- the training state: everything a resumed run needs, in one file ----

// train_state.safetensors, written and flushed but not yet in place (see save_checkpoint).
StagedFile stage_train_state(const std::string& path, const Transformer& model, AdamW& adam, const BatchDraws& draws,
                             const RunConfig& config, const std::string& corpus, int64_t step) {
    NamedTensors tensors;
    for (const auto& [name, p] : model.parameters().named()) tensors.emplace_back(name, p);
    tensors.emplace_back("optimizer.m", adam.first_moment());
    tensors.emplace_back("optimizer.v", adam.second_moment());
    std::sort(tensors.begin(), tensors.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::map<std::string, std::string> metadata = {
        {"format", "tinyformer-train-state/1"},
        {"config", config_to_json(config).dump()},
        {"step", std::to_string(step)},
        {"adam_steps", std::to_string(adam.steps_taken())},
        {"corpus", corpus},  // see corpus_description
    };
    metadata["rng"] = draws.use_torch ? "torch" : "tinyformer";
    if (draws.use_torch) metadata["rng.torch"] = draws.torch.state();
    else
        for (int i = 0; i < 4; ++i) metadata["rng." + std::to_string(i)] = std::to_string(draws.own.state[i]);
    return stage_safetensors(path, tensors, metadata);
}

// Restores weights, moments, RNG and step from `path`; returns the step.
int64_t load_train_state(const std::string& path, Transformer& model, AdamW& adam, BatchDraws& draws) {
    SafetensorsFile file = read_safetensors(path);
    auto meta = [&](const std::string& key) -> const std::string& {
        auto it = file.metadata.find(key);
        if (it == file.metadata.end()) throw InputError(path + ": __metadata__ has no \"" + key + "\"");
        return it->second;
    };
    if (meta("format") != "tinyformer-train-state/1")
        throw InputError(path + ": format \"" + meta("format") + "\", expected \"tinyformer-train-state/1\"");
    auto integer = [&](const std::string& key) { return metadata_integer(path, file.metadata, key); };
    std::map<std::string, Tensor> by_name(file.tensors.begin(), file.tensors.end());
    auto restore = [&](const std::string& name, Tensor& into) {
        auto it = by_name.find(name);
        if (it == by_name.end()) throw InputError(path + ": tensor " + name + " is missing");
        if (it->second.shape() != into.shape())
            throw InputError(path + ": tensor " + name + " has shape " + shape_str(it->second.shape()) + ", expected " +
                             shape_str(into.shape()));
        check_finite(path, name, it->second);
        into.copy_from(it->second);
    };
    for (const auto& [name, p] : model.parameters().named()) {
        Tensor param = p;
        restore(name, param);
    }
    restore("optimizer.m", adam.first_moment());
    restore("optimizer.v", adam.second_moment());
    adam.set_steps_taken(static_cast<int64_t>(integer("adam_steps")));
    auto kind = file.metadata.find("rng");  // absent before train.rng existed: tinyformer's
    const std::string saved_rng = kind == file.metadata.end() ? "tinyformer" : kind->second;
    const std::string wanted_rng = draws.use_torch ? "torch" : "tinyformer";
    if (saved_rng != wanted_rng)
        throw InputError(path + ": the run drew its batches with train.rng = \"" + saved_rng +
                         "\", the config asks for \"" + wanted_rng + "\"; resume with the same train.rng");
    if (draws.use_torch) {
        try {
            draws.torch.set_state(meta("rng.torch"));
        } catch (const std::invalid_argument& e) {
            throw InputError(path + ": __metadata__ \"rng.torch\": " + e.what());
        }
    } else {
        for (int i = 0; i < 4; ++i) draws.own.state[i] = integer("rng." + std::to_string(i));
    }
    return static_cast<int64_t>(integer("step"));
}

// The model keys of two configurations that differ, as "model.d_model (64 → 128)".
std::string model_differences(const RunConfig& saved, const RunConfig& now) {
    nlohmann::json a = config_to_json(saved)["model"], b = config_to_json(now)["model"];
    std::string differences;
    for (auto& [key, value] : a.items())
        if (key != "vocab_size" && b.contains(key) && b[key] != value)
            differences += (differences.empty() ? "" : ", ") + std::string("model.") + key + " (" + value.dump() +
                           " in the run, " + b[key].dump() + " now)";
    return differences;
}

// ---- metrics ----

struct MetricsLog {
    std::string path;
    std::vector<nlohmann::json> rows;

    // Keeps the rows of an earlier run up to `step` (a resumed run rewrites what followed).
    void load_until(int64_t step) {
        std::ifstream in(path);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
            if (!row.is_discarded() && row.contains("step") && row["step"].get<int64_t>() <= step) rows.push_back(row);
        }
    }
    void append(const nlohmann::json& row) {
        rows.push_back(row);
        std::string text;
        for (const auto& r : rows) text += r.dump() + "\n";
        write_file_atomic(path, text);
    }
    std::string loss_svg(const std::string& title) const {
        Series train{"train loss", "#1f77b4", {}}, val{"val loss", "#d62728", {}};
        for (const auto& r : rows) {
            if (r.contains("loss")) train.points.emplace_back(r["step"].get<double>(), r["loss"].get<double>());
            if (r.contains("val_loss")) val.points.emplace_back(r["step"].get<double>(), r["val_loss"].get<double>());
        }
        return line_chart_svg(title, "step", "cross-entropy (nats per character)", {train, val});
    }
};

// A live progress bar on a terminal's stderr.
void draw_progress(int64_t step, int64_t total, double loss, double tokens_per_second, double eta) {
    const int width = 30;
    const int filled = static_cast<int>(width * static_cast<double>(step) / static_cast<double>(total));
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "\r[%s] %lld/%lld loss %.4f %.1fk tok/s ETA %s   ", bar.c_str(), static_cast<long long>(step),
                 static_cast<long long>(total), loss, tokens_per_second / 1000, duration_str(eta).c_str());
    std::fflush(stderr);
}
void clear_progress() { std::fprintf(stderr, "\r%80s\r", ""); }

// ---- before the first step: everything that can be wrong is found here ----

// The steps' matrix-product precision (train.precision), refused if this CPU lacks it.
MatmulPrecision step_precision(const TrainConfig& train) {
    if (train.precision != "bf16") return MatmulPrecision::float32;
    const std::string missing = backend().bf16_unsupported();
    if (!missing.empty())
        throw InputError("train.precision = \"bf16\": " + missing + "; use \"float32\" on this machine");
    return MatmulPrecision::bf16;
}

// The text a run trains on, and the windows its evaluations score.
struct RunData {
    Corpus corpus;
    // With train.eval_batches, random windows drawn once from a generator of their own (so the
    // training batches, and a resumed run, are the same with or without them) and scored at
    // every evaluation; empty without: evenly spaced ones.
    std::vector<int64_t> eval_starts;
    std::string description;  // corpus_description(corpus): what a resumed run must train on again
};

// Loads the data and checks it against `config`, which learns its vocabulary size here.
RunData load_run_data(RunConfig& config, bool terminal) {
    RunData data{load_corpus(config.data, terminal), {}, ""};
    const Corpus& corpus = data.corpus;
    if (config.model.vocab_size != 0 && config.model.vocab_size != corpus.vocab.size())
        throw InputError("model.vocab_size: " + std::to_string(config.model.vocab_size) + ", but the corpus has " +
                         std::to_string(corpus.vocab.size()) + " distinct characters");
    config.model.vocab_size = corpus.vocab.size();
    if (corpus.train.size() < config.model.context + 1)
        throw InputError(corpus.train_name + ": " + std::to_string(corpus.train.size()) +
                         " characters, fewer than one window of model.context + 1 = " +
                         std::to_string(config.model.context + 1));
    if (config.train.eval_batches > 0) {
        try {
            data.eval_starts = random_windows(corpus.val.size(), config.model.context,
                                              config.train.eval_batches * config.train.batch_size,
                                              static_cast<uint64_t>(config.train.seed) ^ 0xe7a15eedULL);
        } catch (const InputError& e) {
            throw InputError(corpus.val_name + ": " + e.what() + ", needed by train.eval_batches");
        }
    }
    data.description = corpus_description(corpus);
    return data;
}

// What the run directory holds, checked under its lock: a run to resume must have trained the
// same model, in the same precision, on the same data; a run not to be resumed is overwritten
// only when asked. Then config.toml is written.
void check_run_directory(const TrainOptions& options, const RunConfig& config, const std::string& corpus_text,
                         const std::string& state_path) {
    const std::string& dir = options.run_dir;
    if (options.resume) {
        if (!fs::exists(state_path)) throw InputError(dir + ": no train_state.safetensors to resume from");
        const std::map<std::string, std::string> saved = read_safetensors(state_path).metadata;
        const RunConfig saved_config = checkpoint_config(state_path, saved);
        std::string differences = model_differences(saved_config, config);
        if (!differences.empty())
            throw InputError(state_path + ": cannot resume with a different model: " + differences);
        if (saved_config.train.precision != config.train.precision)  // the steps would compute something else
            throw InputError(state_path + ": the run trained with train.precision = \"" +
                             saved_config.train.precision + "\", the config asks for \"" + config.train.precision +
                             "\"; resume with the same train.precision");
        // The same vocabulary size is not the same text: the batches would come from other data.
        const auto saved_corpus = saved.find("corpus");  // absent in states written before it was recorded
        if (saved_corpus != saved.end() && saved_corpus->second != corpus_text)
            throw InputError(state_path + ": cannot resume on different data: the run trained on " +
                             saved_corpus->second + "; the data now gives " + corpus_text);
    } else if (fs::exists(state_path) && !options.overwrite) {
        throw InputError(dir + " already holds a run (train_state.safetensors): continue it with --resume " + dir +
                         ", or start over with --force or another --out");
    }
    remove_stale_temporaries(dir);  // left by a run that was killed while writing
    try {
        const std::string config_path = (fs::path(dir) / "config.toml").string();
        write_file_atomic(config_path, config_to_toml(config, config_path));  // paths relative to the run dir
    } catch (const std::runtime_error& e) {
        throw InputError(std::string(e.what()) + " (the run directory must be writable)");
    }
}

// ---- the processes of a data-parallel run ----

// The binary this process runs, as a hash of its bytes.
std::string binary_hash() {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return bytes_hash(bytes.data(), static_cast<int64_t>(bytes.size()));
}

// "section.key" → value, for every key of a config's JSON.
void flatten(const nlohmann::json& json, const std::string& prefix, std::map<std::string, std::string>& out) {
    for (auto& [key, value] : json.items()) {
        if (value.is_object()) flatten(value, prefix + key + ".", out);
        else out[prefix + key] = value.dump();
    }
}

// The same experiment on every process, checked once before the first step: the config as it
// resolved there, the data it read and the binary. A difference stops them all (exit 2),
// naming the first rank that differs from rank 0 and what differs.
void check_processes_match(const RunConfig& config, const std::string& corpus) {
    if (world_size() == 1) return;
    const nlohmann::json mine = {{"config", config_to_json(config)}, {"data", corpus}, {"binary", binary_hash()}};
    const std::vector<std::string> everyone = all_gather(mine.dump());
    for (size_t r = 1; r < everyone.size(); ++r) {
        if (everyone[r] == everyone[0]) continue;
        const nlohmann::json first = nlohmann::json::parse(everyone[0]), theirs = nlohmann::json::parse(everyone[r]);
        const std::string who = "rank " + std::to_string(r) + ": ";
        if (theirs["binary"] != first["binary"])
            throw GroupFailure(2, who + "runs another tinyformer binary than rank 0 (" + theirs["binary"].get<std::string>() +
                                      " against " + first["binary"].get<std::string>() +
                                      "): install the same build on every machine");
        if (theirs["data"] != first["data"])
            throw GroupFailure(2, who + "its data differs from rank 0's: " + theirs["data"].get<std::string>() +
                                      " there, " + first["data"].get<std::string>() + " on rank 0");
        std::map<std::string, std::string> a, b;
        flatten(first["config"], "", a);
        flatten(theirs["config"], "", b);
        for (const auto& [key, value] : a)
            if (b[key] != value)
                throw GroupFailure(2, who + "its config differs from rank 0's: " + key + " = " + b[key] + " there, " +
                                          value + " on rank 0");
        throw GroupFailure(2, who + "its config differs from rank 0's");
    }
}

// ---- the run itself ----

// One run as it trains: the model, the optimizer and the batch draws (restored when it
// resumes), its metrics and checkpoints, and its evaluations.
struct TrainingRun {
    TrainingRun(const TrainOptions& options, const RunConfig& config, const RunData& data, bool terminal)
        : config(config),
          data(data),
          dir(options.run_dir),
          state_path((fs::path(dir) / "train_state.safetensors").string()),
          model_path((fs::path(dir) / "model.safetensors").string()),
          terminal(terminal),
          model(config.model, static_cast<uint64_t>(config.train.seed)),
          batch_draws(config.train),
          adam(model.parameters(), config.optim),
          metrics{(fs::path(dir) / "metrics.jsonl").string(), {}},
          roles(options.roles),
          on_step(options.on_step) {
        if (batch_draws.use_torch) initialise_like_torch(model.parameters(), config.model, batch_draws.torch);
        if (options.resume && is_writer()) {  // the writer reads the run; share_from_writer hands it on
            step = saved_step = load_train_state(state_path, model, adam, batch_draws);
            metrics.load_until(step);
        }
    }

    // Every process starts from the writer's state: the weights, AdamW's moments and step count,
    // the batch draws' generator and the step. The run directory need not be visible to the
    // others (another machine); and a fresh run, whose seed gives the same weights
    // everywhere, is then the same by construction.
    void share_from_writer() {
        if (world_size() == 1) return;
        Parameters& params = model.parameters();
        broadcast(params.values().data<float>(), params.count() * static_cast<int64_t>(sizeof(float)));
        broadcast(adam.first_moment().data<float>(), params.count() * static_cast<int64_t>(sizeof(float)));
        broadcast(adam.second_moment().data<float>(), params.count() * static_cast<int64_t>(sizeof(float)));
        int64_t counters[3] = {step, saved_step, adam.steps_taken()};
        broadcast(counters, sizeof counters);
        step = counters[0], saved_step = counters[1];
        adam.set_steps_taken(counters[2]);
        broadcast(batch_draws.own.state, sizeof batch_draws.own.state);
        if (batch_draws.use_torch) batch_draws.torch.set_state(all_gather(batch_draws.torch.state())[0]);
    }

    // The processes' weights must be the same to the bit after every step (each applies the
    // same update to the same sum); a library or network that broke that would otherwise go
    // unnoticed. Checked at each checkpoint: a hash of the arena, compared across processes.
    void check_processes_agree() const {
        if (world_size() == 1) return;
        const Tensor values = model.parameters().values();
        const std::vector<std::string> hashes = all_gather(bytes_hash(values.data<float>(), values.numel() * 4));
        for (size_t r = 1; r < hashes.size(); ++r)
            if (hashes[r] != hashes[0])
                throw GroupFailure(1, "rank " + std::to_string(r) + ": its weights differ from rank 0's after step " +
                                          std::to_string(step) + " (the exchange is not the same everywhere); " +
                                          kept_checkpoint());
    }

    // "the checkpoint of step N in DIR is kept", for a message that stops the run.
    std::string kept_checkpoint() const {
        return saved_step >= 0 ? "the checkpoint of step " + std::to_string(saved_step) + " in " + dir + " is kept"
                               : "no checkpoint had been saved yet";
    }

    // A checkpoint is two files that change together. Both are written in full first (the
    // larger, the training state, first: a full disk stops there and changes nothing). Then
    // the model is renamed into place, then the training state. A kill between the two renames
    // leaves the new model beside the previous state (or beside none, at the first
    // checkpoint); a resume from that state computes the same model again. So wherever a
    // train_state.safetensors is, a model.safetensors of its step or a later one is beside it.
    void save_checkpoint() {
        check_processes_agree();
        if (!is_writer()) {
            saved_step = step;
            return;
        }
        try {
            StagedFile state = stage_train_state(state_path, model, adam, batch_draws, config, data.description, step);
            StagedFile weights = stage_model(model_path, model, data.corpus.vocab, config, step);
            weights.commit();
            state.commit();
        } catch (const std::runtime_error& e) {  // a full disk: say what survived
            throw std::runtime_error(std::string(e.what()) + "; " + kept_checkpoint());
        }
        saved_step = step;
    }

    // The validation loss: at the evaluations (their windows), and at the end (train.final_eval).
    TextScore evaluate_periodic() const {
        return data.eval_starts.empty()
                   ? score_text(model, data.corpus.val, config.train.eval_windows, terminal)
                   : score_windows(model, data.corpus.val, data.eval_starts, terminal, config.train.batch_size);
    }
    bool final_full() const { return config.train.final_eval == "full"; }
    TextScore evaluate_final() const {
        if (!final_full()) return evaluate_periodic();
        const int64_t windows = (data.corpus.val.size() - 2) / config.model.context + 1;
        if (windows > 5000)
            spdlog::info("scoring the whole validation text: {} windows (train.final_eval = \"sampled\" would score "
                         "the evaluations' {} instead)",
                         windows, data.eval_starts.empty() ? std::min(windows, config.train.eval_windows)
                                                           : static_cast<int64_t>(data.eval_starts.size()));
        return score_text(model, data.corpus.val, 0, terminal);
    }

    void train_loop(MatmulPrecision precision, const Clock::time_point& started);
    void log_step(double lr, double grad_norm, bool evaluate_now);
    nlohmann::json summary(const Clock::time_point& started);

    const RunConfig& config;
    const RunData& data;
    const std::string dir, state_path, model_path;
    const bool terminal;  // a live progress bar on stderr
    Transformer model;
    BatchDraws batch_draws;
    AdamW adam;
    MetricsLog metrics;
    const decltype(TrainOptions::roles) roles;  // how the heads' roles form: measured at every evaluation
    const decltype(TrainOptions::on_step) on_step;  // the caller's, after every step (rank 0)
    std::optional<double> last_val_loss;             // the last log_step's evaluation, if it made one
    int64_t step = 0;
    int64_t saved_step = -1;  // the step of the checkpoint on disk

    // The loop's timing and the losses since the last log line.
    int64_t first_step = 0;
    Clock::time_point loop_start, interval_start;
    double interval_loss = 0, last_train_loss = NAN;
    int64_t interval_steps = 0;
    double seconds_to_first_step = 0;  // from the start: reading the data, building the model, one step
    double train_seconds = 0;
    std::optional<TextScore> final_score;  // the last evaluation's, when it was the final one
};

// The steps, from `step` to train.steps: a log line (and an evaluation, a checkpoint) when due,
// a progress bar between them. Ctrl-C saves a checkpoint and throws Interrupted.
void TrainingRun::train_loop(MatmulPrecision precision, const Clock::time_point& started) {
    const int64_t total = config.train.steps, B = config.train.batch_size, T = config.model.context;
    const CatchInterrupts interrupts;  // Ctrl-C, from the CLI's watch_interrupts (support/interrupts.hpp)
    loop_start = interval_start = Clock::now();
    first_step = step;
    while (step < total) {
        const double lr = learning_rate(config.optim, step, total);
        // Every process draws the whole batch and builds its own share of it (alone: all of it).
        const Batch share = windows_at(data.corpus.train, this_process_share(batch_draws.next(data.corpus.train, B, T)), T);
        const StepOutcome outcome =
            train_step(model, adam, share,
                       {.lr = lr, .grad_clip = config.optim.grad_clip, .precision = precision,
                        .overlap_exchange = overlap_exchange(config.train.exchange)});
        if (!outcome.updated)  // the same loss on every process: they all stop here
            throw GroupFailure(1, "training loss is " + std::to_string(outcome.loss) + " at step " +
                                      std::to_string(step + 1) + "; stopped, " + kept_checkpoint() +
                                      " (try a lower optim.lr)");
        ++step;
        if (step == first_step + 1) seconds_to_first_step = seconds_since(started);
        interval_loss += outcome.loss;
        ++interval_steps;

        const bool evaluate_now = step == total || (config.train.eval_every > 0 && step % config.train.eval_every == 0);
        if (evaluate_now || step % config.logging.log_every == 0) {
            log_step(lr, outcome.grad_norm, evaluate_now);
        } else if (terminal) {
            const double elapsed = seconds_since(loop_start);
            draw_progress(step, total, outcome.loss, (step - first_step) * B * T / elapsed,
                          elapsed / static_cast<double>(step - first_step) * static_cast<double>(total - step));
        }
        if (on_step && is_writer())
            on_step({.step = step, .loss = outcome.loss, .lr = lr,
                     .val_loss = evaluate_now ? last_val_loss : std::nullopt});
        const bool checkpoint_now =
            evaluate_now || (config.train.checkpoint_every > 0 && step % config.train.checkpoint_every == 0);
        // Read once: a Ctrl-C landing in between saves too. Any process's stops them all, here.
        const bool interrupted = any_process(interrupts.requested());
        if (checkpoint_now || interrupted) save_checkpoint();
        if (interrupted) {
            if (terminal) clear_progress();
            if (is_writer()) write_file_atomic((fs::path(dir) / "loss.svg").string(), metrics.loss_svg(config.name));
            throw Interrupted("interrupted at step " + std::to_string(step) + "/" + std::to_string(total) +
                              "; checkpoint saved in " + dir + "; continue with --resume " + dir);
        }
    }
    train_seconds = seconds_since(loop_start);
    if (step == first_step) save_checkpoint();  // nothing to do, but leave a loadable run
}

// A log line and a metrics row for the steps since the last one, with the validation loss
// and the heads' roles when `evaluate_now`.
void TrainingRun::log_step(double lr, double grad_norm, bool evaluate_now) {
    const int64_t total = config.train.steps, B = config.train.batch_size, T = config.model.context;
    const double elapsed = seconds_since(loop_start);
    const double tokens_per_second = interval_steps * B * T / seconds_since(interval_start);
    const double eta = elapsed / static_cast<double>(step - first_step) * static_cast<double>(total - step);
    last_train_loss = interval_loss / interval_steps;
    nlohmann::json row = {{"step", step},          {"loss", last_train_loss},
                          {"lr", lr},              {"grad_norm", grad_norm},
                          {"tokens_per_s", tokens_per_second}, {"elapsed_s", elapsed}};
    std::string val_text;
    if (evaluate_now) {
        TextScore val = step == total ? *(final_score = evaluate_final()) : evaluate_periodic();
        row["val_loss"] = val.loss;
        last_val_loss = val.loss;
        if (roles && is_writer())
            if (nlohmann::json now = roles(model, data.corpus.vocab, data.corpus.probes); !now.is_null())
                row["roles"] = std::move(now);
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, " | val %.4f", val.loss);
        val_text = buffer;
    }
    if (terminal) clear_progress();
    spdlog::info("step {:>{}}/{} | loss {:.4f}{} | lr {:.2e} | {:.1f}k tok/s | {} elapsed | ETA {}", step,
                 std::to_string(total).size(), total, last_train_loss, val_text, lr, tokens_per_second / 1000,
                 duration_str(elapsed), duration_str(eta));
    if (is_writer()) metrics.append(row);
    interval_loss = 0, interval_steps = 0, interval_start = Clock::now();
}

// The final scores (the validation text as train.final_eval says, and the probes) and the
// run's figures: summary.json's contents.
nlohmann::json TrainingRun::summary(const Clock::time_point& started) {
    const int64_t B = config.train.batch_size, T = config.model.context;
    const TextScore val = final_score ? *final_score : evaluate_final();
    nlohmann::json val_eval = {
        {"over", final_full() ? "the full validation text" : "the evaluations' sampled windows"},
        {"windows", val.windows},
        {"characters", val.predicted}};
    if (!final_full())
        val_eval["sampling"] = data.eval_starts.empty()
                                   ? "train.eval_windows evenly spaced windows"
                                   : "train.eval_batches × train.batch_size random windows (seed train.seed ^ 0xe7a15eed)";
    nlohmann::json summary = {
        {"name", config.name},
        {"steps", step},
        {"train_loss", std::isnan(last_train_loss) ? nlohmann::json(nullptr) : nlohmann::json(last_train_loss)},
        {"val_loss", val.loss},
        {"val_bpc", val.bpc},
        {"val_perplexity", val.perplexity},
        {"val_eval", val_eval},
        {"params", model.parameters().count()},
        {"vocab_size", data.corpus.vocab.size()},
        {"tokens_per_second", step > first_step ? (step - first_step) * B * T / train_seconds : 0.0},
        {"train_seconds", train_seconds},
        {"backend", backend().name()},
        {"made_by", build_info_json()},  // tinyformer's version and commit, oneDNN's, the compiler
    };
    if (!data.corpus.probes.empty()) {
        ProbeScore probes = score_probes(model, data.corpus.vocab, data.corpus.probes);
        summary["probe_accuracy"] = probes.accuracy();
        for (const auto& [kind, counts] : probes.by_kind)
            summary["probe_accuracy_by_kind"][kind] = static_cast<double>(counts.first) / counts.second;
        spdlog::info("probes: {}/{} correct ({:.1f} %)", probes.correct, probes.total, 100 * probes.accuracy());
    } else {
        summary["probe_accuracy"] = nullptr;
    }
    summary["seconds_to_first_step"] = seconds_to_first_step;
    summary["wall_seconds"] = seconds_since(started);
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    summary["peak_rss_mb"] = static_cast<double>(usage.ru_maxrss) / 1024.0;  // kB on Linux
    return summary;
}

}  // namespace

nlohmann::json train(const TrainOptions& options) {
    const Clock::time_point started = Clock::now();
    RunConfig config = options.config;
    const std::string& dir = options.run_dir;
    const std::string state_path = (fs::path(dir) / "train_state.safetensors").string();
    const bool terminal = is_writer() && config.logging.progress_bar && isatty(STDERR_FILENO);

    // Whatever can be wrong is found before the first step, on every process at once: one
    // that cannot read its data stops them all with its message (run_on_every_rank).
    MatmulPrecision precision = MatmulPrecision::float32;
    std::optional<RunData> loaded;
    run_on_every_rank([&] {
        precision = step_precision(config.train);
        loaded.emplace(load_run_data(config, terminal));
        this_process_share(std::vector<int64_t>(static_cast<size_t>(config.train.batch_size)));  // B divisible by N
    });
    const RunData& data = *loaded;
    check_processes_match(config, data.description);
    // The writer alone (rank 0) keeps the run directory. From here to the end it is the
    // directory's only writer; what it finds there (a run to resume, or to refuse to
    // overwrite) is checked under the lock.
    std::optional<RunDirectoryLock> lock;
    std::optional<TrainingRun> run;
    run_on_every_rank([&] {
        if (is_writer()) {
            if (options.resume && !fs::exists(state_path))
                throw InputError(dir + ": no train_state.safetensors to resume from");
            std::error_code error;
            fs::create_directories(dir, error);
            if (error) throw InputError(dir + ": cannot create the run directory: " + error.message());
            lock.emplace(dir);
            check_run_directory(options, config, data.description, state_path);
        }
        run.emplace(options, config, data, terminal);
    });
    run->share_from_writer();
    spdlog::info("{} {}: {} parameters, vocabulary {}, {} training / {} validation characters, backend {}{}",
                 options.resume ? "resuming" : "training", config.name, run->model.parameters().count(),
                 data.corpus.vocab.size(), data.corpus.train.size(), data.corpus.val.size(), backend().name(),
                 world_size() == 1 ? ""
                                   : ", " + std::to_string(world_size()) + " processes (gradients summed " +
                                         (overlap_exchange(config.train.exchange) ? "during" : "after") +
                                         " the backward)");
    if (options.resume) spdlog::info("resumed at step {}/{}", run->step, config.train.steps);
    run->train_loop(precision, started);

    const nlohmann::json summary = run->summary(started);  // every process scores its share
    if (!is_writer()) return summary;
    write_file_atomic((fs::path(dir) / "loss.svg").string(), run->metrics.loss_svg(config.name));
    write_file_atomic((fs::path(dir) / "summary.json").string(), summary.dump(2) + "\n");
    spdlog::info("done: val loss {:.4f} ({:.3f} bits/char), {:.1f}s of training, run in {}",
                 summary["val_loss"].get<double>(), summary["val_bpc"].get<double>(), run->train_seconds, dir);
    return summary;
}

}  // namespace tinyformer
