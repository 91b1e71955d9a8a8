// Run configuration: one list of keys (for_each_key) drives everything else — reading a
// TOML file and --set overrides, validation, writing TOML and JSON, --help and the
// "did you mean" suggestions. Every error is one line naming where (file:line:col or the
// --set text), the dotted key, what was found and what was expected.
#include "tinyformer/train/config.hpp"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include "tinyformer/data/text.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/suggest.hpp"

namespace tinyformer {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// The keys
// ---------------------------------------------------------------------------------------

struct Key {
    const char* section;  // "" for the top-level `name`
    const char* name;
    const char* meaning;  // one line, for --help, README.md and the comments in config.toml

    std::string dotted() const { return *section ? std::string(section) + "." + name : std::string(name); }
    // The data files (path, train_path, val_path, probes_path) are resolved against a directory.
    bool is_path() const {
        return std::string_view(section) == "data" &&
               (std::string_view(name).ends_with("path") || std::string_view(name) == "prepared");
    }
};

const std::vector<std::string> kSections = {"model", "data", "train", "optim", "logging"};

// Calls visit(key, field) for every key, in the documented order. `Config` is RunConfig or
// const RunConfig, so the same list serves reading and writing; `field` is an int64_t,
// double, bool or std::string, and its type is the key's type.
template <class Config, class Visit>
void for_each_key(Config& c, Visit&& visit) {
    visit(Key{"", "name", "the run's name: runs/<name>"}, c.name);

    visit(Key{"model", "vocab_size", "distinct characters; 0 = taken from the corpus"}, c.model.vocab_size);
    visit(Key{"model", "d_model", "width D of a position's representation"}, c.model.d_model);
    visit(Key{"model", "n_heads", "attention heads H; D must be divisible by H"}, c.model.n_heads);
    visit(Key{"model", "n_layers", "transformer blocks L"}, c.model.n_layers);
    visit(Key{"model", "context", "longest sequence T the model is trained on"}, c.model.context);
    visit(Key{"model", "positions", "\"rope\" (rotary) or \"learned\" (absolute embedding)"}, c.model.positions);

    visit(Key{"data", "path", "one text: the last val_fraction of it is validation"}, c.data.path);
    visit(Key{"data", "train_path", "or two texts: training ..."}, c.data.train_path);
    visit(Key{"data", "val_path", "... and validation (then `path` stays empty)"}, c.data.val_path);
    visit(Key{"data", "prepared", "or a directory written by `tinyformer prepare`: its ids, read from the files"},
          c.data.prepared);
    visit(Key{"data", "probes_path", "optional prompt<TAB>answer lines, scored by greedy decoding"},
          c.data.probes_path);
    visit(Key{"data", "val_fraction", "share of `path` held out for validation, in (0, 1)"}, c.data.val_fraction);

    visit(Key{"train", "steps", "optimizer steps"}, c.train.steps);
    visit(Key{"train", "batch_size", "windows per step"}, c.train.batch_size);
    visit(Key{"train", "eval_every", "validation loss every N steps and at the end; 0 = only at the end"},
          c.train.eval_every);
    visit(Key{"train", "eval_windows", "validation windows per periodic evaluation, evenly spaced"},
          c.train.eval_windows);
    visit(Key{"train", "eval_batches",
              "> 0: evaluations score this many batches of random validation windows (the same ones each time) "
              "instead"},
          c.train.eval_batches);
    visit(Key{"train", "final_eval",
              "the end's val_loss: \"full\" (the whole validation text) or \"sampled\" (the evaluations' windows)"},
          c.train.final_eval);
    visit(Key{"train", "checkpoint_every", "save every N steps; 0 = at evaluations and the end"},
          c.train.checkpoint_every);
    visit(Key{"train", "seed", "initialisation and batch sampling"}, c.train.seed);
    visit(Key{"train", "rng", "\"tinyformer\" (own generator) or \"torch\" (the reference's draws for the same seed)"},
          c.train.rng);
    visit(Key{"train", "threads", "CPU threads the work is split for; 0 = the CPUs this process may use"}, c.train.threads);
    visit(Key{"train", "precision",
              "matrix products: \"float32\", or \"bf16\" (bfloat16 inputs, float32 sums and weights; "
              "a CPU with AVX512-BF16 or AMX)"},
          c.train.precision);
    visit(Key{"train", "exchange",
              "under mpirun, the gradients' sum: \"overlap\" (during the backward), \"after\" (after it), or "
              "\"auto\" (overlap across machines, after on one)"},
          c.train.exchange);

    visit(Key{"optim", "lr", "peak learning rate, after warm-up"}, c.optim.lr);
    visit(Key{"optim", "min_lr", "learning rate at the end of the cosine decay"}, c.optim.min_lr);
    visit(Key{"optim", "warmup_steps", "steps of linear warm-up"}, c.optim.warmup_steps);
    visit(Key{"optim", "weight_decay", "AdamW decoupled decay, on matrices only"}, c.optim.weight_decay);
    visit(Key{"optim", "beta1", "AdamW first-moment decay, in [0, 1)"}, c.optim.beta1);
    visit(Key{"optim", "beta2", "AdamW second-moment decay, in [0, 1)"}, c.optim.beta2);
    visit(Key{"optim", "eps", "AdamW denominator guard"}, c.optim.eps);
    visit(Key{"optim", "grad_clip", "global gradient-norm clip; 0 = off"}, c.optim.grad_clip);

    visit(Key{"logging", "log_every", "a progress line every N steps"}, c.logging.log_every);
    visit(Key{"logging", "progress_bar", "a live bar when stderr is a terminal"}, c.logging.progress_bar);
}

bool is_section(const std::string& name) {
    return std::find(kSections.begin(), kSections.end(), name) != kSections.end();
}

bool is_key(const std::string& dotted) {
    const std::vector<std::string> keys = config_keys();
    return std::find(keys.begin(), keys.end(), dotted) != keys.end();
}

// "steps, batch_size, ..." — the keys of one section ("" = the top level).
std::string keys_of(const std::string& section) {
    std::string list;
    RunConfig defaults;
    for_each_key(defaults, [&](const Key& key, const auto&) {
        if (key.section == section) list += (list.empty() ? "" : ", ") + std::string(key.name);
    });
    return list;
}

// ---------------------------------------------------------------------------------------
// "Did you mean": the nearest key by edit distance
// ---------------------------------------------------------------------------------------

// The valid key nearest to section.key. The key's own name counts twice as much as the
// section, so a misspelt key finds its sibling ([train] step → train.steps) and a key in
// the wrong section finds its home ([train] lr → optim.lr, [optimizer] lr → optim.lr).
std::string nearest_key(const std::string& section, const std::string& name) {
    std::string best;
    size_t best_score = std::numeric_limits<size_t>::max();
    RunConfig defaults;
    for_each_key(defaults, [&](const Key& key, const auto&) {
        const size_t score = 2 * edit_distance(name, key.name) + edit_distance(section, key.section);
        if (score < best_score) best_score = score, best = key.dotted();
    });
    return best;
}

// Splits "train.steps" into {"train", "steps"} and "name" into {"", "name"}.
std::pair<std::string, std::string> split_dotted(const std::string& dotted) {
    const size_t dot = dotted.find('.');
    if (dot == std::string::npos) return {"", dotted};
    return {dotted.substr(0, dot), dotted.substr(dot + 1)};
}

// ---------------------------------------------------------------------------------------
// Values as text
// ---------------------------------------------------------------------------------------

// The shortest text that reads back as exactly `value`, always a TOML float ("1.0", "3e-4").
std::string format_float(double value) {
    char buffer[64];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    std::string text(buffer, end);
    const size_t exponent = text.find('e');
    if (exponent != std::string::npos) {  // "3e-04" → "3e-4"
        const size_t digits = text.find_first_of("0123456789", exponent);
        const size_t nonzero = text.find_first_not_of('0', digits);
        text.erase(digits, std::min(nonzero, text.size() - 1) - digits);
    } else if (text.find_first_of(".n") == std::string::npos) {  // n: inf and nan
        text += ".0";
    }
    return text;
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string quote(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04X", static_cast<unsigned>(c));
                    out += escaped;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

std::string toml_value(int64_t value) { return std::to_string(value); }
std::string toml_value(double value) { return format_float(value); }
std::string toml_value(bool value) { return value ? "true" : "false"; }
std::string toml_value(const std::string& value) { return quote(value); }

// What a TOML value is, for "got ..." in messages: `the string "ten"`, `the float 10.5`.
std::string describe(const toml::node& node) {
    if (auto* s = node.as_string()) return "the string " + quote(s->get());
    if (auto* i = node.as_integer()) return "the integer " + std::to_string(i->get());
    if (auto* f = node.as_floating_point()) return "the float " + format_float(f->get());
    if (auto* b = node.as_boolean()) return std::string("the boolean ") + (b->get() ? "true" : "false");
    if (node.is_table()) return "a table";
    if (node.is_array()) return "an array";
    return "a date or time";
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

// "<where>: <key>: <what>". `where` is "file", "file:line:col" or "--set text".
[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& what) {
    std::string message;
    if (!where.empty()) message += where + ": ";
    if (!key.empty()) message += key + ": ";
    throw InputError(message + what);
}

std::string position(const std::string& file, const toml::source_position& at) {
    if (at.line == 0) return file;  // toml++ knows no position (e.g. an unreadable file)
    return file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

// ---------------------------------------------------------------------------------------
// Reading one value, type-checked: an integer key takes only an integer, a float key an
// integer or a finite float, a boolean key true/false, a string key a string.
// ---------------------------------------------------------------------------------------

void read(const toml::node& node, int64_t& out, const std::string& where, const std::string& key) {
    if (!node.is_integer()) fail(where, key, "got " + describe(node) + ", expected an integer");
    out = node.as_integer()->get();
}

void read(const toml::node& node, double& out, const std::string& where, const std::string& key) {
    if (node.is_integer()) out = static_cast<double>(node.as_integer()->get());
    else if (node.is_floating_point() && std::isfinite(node.as_floating_point()->get()))
        out = node.as_floating_point()->get();
    else fail(where, key, "got " + describe(node) + ", expected a finite number");
}

void read(const toml::node& node, bool& out, const std::string& where, const std::string& key) {
    if (!node.is_boolean()) fail(where, key, "got " + describe(node) + ", expected true or false");
    out = node.as_boolean()->get();
}

void read(const toml::node& node, std::string& out, const std::string& where, const std::string& key) {
    if (!node.is_string()) fail(where, key, "got " + describe(node) + ", expected a string in quotes");
    out = node.as_string()->get();
}

// The same for a value from a JSON config (a checkpoint's metadata).
std::string describe(const nlohmann::json& value) {
    if (value.is_null()) return "null";
    if (!value.is_primitive()) return std::string("an ") + value.type_name();  // an array, an object
    return std::string("the ") + value.type_name() + " " +
           value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void read(const nlohmann::json& value, int64_t& out, const std::string& key) {
    const bool fits = value.is_number_integer() &&
                      !(value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX));
    if (!fits) fail("", key, "got " + describe(value) + ", expected a 64-bit integer");
    out = value.get<int64_t>();
}

void read(const nlohmann::json& value, double& out, const std::string& key) {
    if (!value.is_number() || !std::isfinite(value.get<double>()))
        fail("", key, "got " + describe(value) + ", expected a finite number");
    out = value.get<double>();
}

void read(const nlohmann::json& value, bool& out, const std::string& key) {
    if (!value.is_boolean()) fail("", key, "got " + describe(value) + ", expected true or false");
    out = value.get<bool>();
}

void read(const nlohmann::json& value, std::string& out, const std::string& key) {
    if (!value.is_string()) fail("", key, "got " + describe(value) + ", expected a string");
    out = value.get<std::string>();
}

// ---------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------

// A path as written in a file in `base` (or, with `base` empty, on the command line), as
// seen from the working directory: corpus/../x.txt → x.txt, an absolute path stays absolute.
std::string resolve(const fs::path& base, const std::string& path) {
    if (path.empty()) return path;
    return (base / path).lexically_normal().string();
}

// The inverse: `path` (relative to the working directory or absolute) as it must be
// written in a file in `dir` to resolve back to itself. A relative path can be re-expressed
// only if `dir` is relative too and does not climb out with "..": otherwise it is written
// absolute.
std::string path_for_file(const std::string& path, const fs::path& dir) {
    if (path.empty() || fs::path(path).is_absolute() || dir.empty()) return path;
    const fs::path normal_dir = dir.lexically_normal();
    if (normal_dir.is_relative() && *normal_dir.begin() != "..")
        return fs::path(path).lexically_relative(normal_dir).string();
    return fs::absolute(path).lexically_normal().string();
}

// ---------------------------------------------------------------------------------------
// Validation: every value in range, then the corpus settings
// ---------------------------------------------------------------------------------------

// Where a key's value came from, for the message: "file:line:col", "--set ..." or "file".
using Locate = std::function<std::string(const std::string& key)>;

void validate_values(const RunConfig& c, const Locate& at) {
    auto check = [&](bool ok, const std::string& key, const std::string& got, const std::string& expected) {
        if (!ok) fail(at(key), key, "got " + got + ", expected " + expected);
    };
    auto at_least = [&](const std::string& key, int64_t value, int64_t min) {
        check(value >= min, key, std::to_string(value), "an integer >= " + std::to_string(min));
    };
    auto number = [](double value) { return format_float(value); };

    check(!c.name.empty() && c.name != "." && c.name != ".." && c.name.find('/') == std::string::npos, "name",
          quote(c.name), "a plain directory name (no '/')");

    const ModelConfig& m = c.model;
    at_least("model.vocab_size", m.vocab_size, 0);
    at_least("model.d_model", m.d_model, 1);
    at_least("model.n_heads", m.n_heads, 1);
    at_least("model.n_layers", m.n_layers, 1);
    at_least("model.context", m.context, 1);
    check(m.positions == "rope" || m.positions == "learned", "model.positions", quote(m.positions),
          "\"rope\" or \"learned\"");
    // What ties the model keys together (D divisible by H, an even head width for rope) is
    // the model's own rule: ask it. vocab_size 0 is filled in from the corpus later.
    ModelConfig model = m;
    if (model.vocab_size == 0) model.vocab_size = 1;
    try {
        model.validate();
    } catch (const std::invalid_argument& e) {  // "model.<key>: <what>"
        const std::string message = e.what();
        fail(at(message.substr(0, message.find(':'))), "", message);
    }

    const DataConfig& d = c.data;
    check(d.val_fraction > 0 && d.val_fraction < 1, "data.val_fraction", number(d.val_fraction),
          "a number in (0, 1)");

    const TrainConfig& t = c.train;
    at_least("train.steps", t.steps, 1);
    at_least("train.batch_size", t.batch_size, 1);
    at_least("train.eval_every", t.eval_every, 0);
    at_least("train.eval_windows", t.eval_windows, 1);
    at_least("train.eval_batches", t.eval_batches, 0);
    check(t.final_eval == "full" || t.final_eval == "sampled", "train.final_eval", quote(t.final_eval),
          "\"full\" or \"sampled\"");
    at_least("train.checkpoint_every", t.checkpoint_every, 0);
    at_least("train.seed", t.seed, 0);
    check(t.rng == "tinyformer" || t.rng == "torch", "train.rng", quote(t.rng), "\"tinyformer\" or \"torch\"");
    at_least("train.threads", t.threads, 0);
    check(t.precision == "float32" || t.precision == "bf16", "train.precision", quote(t.precision),
          "\"float32\" or \"bf16\"");
    check(t.exchange == "auto" || t.exchange == "overlap" || t.exchange == "after", "train.exchange",
          quote(t.exchange), "\"auto\", \"overlap\" or \"after\"");

    const OptimConfig& o = c.optim;
    check(o.lr > 0, "optim.lr", number(o.lr), "a number > 0");
    check(o.min_lr >= 0 && o.min_lr <= o.lr, "optim.min_lr", number(o.min_lr),
          "a number in [0, optim.lr = " + number(o.lr) + "]");
    at_least("optim.warmup_steps", o.warmup_steps, 0);
    check(o.weight_decay >= 0, "optim.weight_decay", number(o.weight_decay), "a number >= 0");
    check(o.beta1 >= 0 && o.beta1 < 1, "optim.beta1", number(o.beta1), "a number in [0, 1)");
    check(o.beta2 >= 0 && o.beta2 < 1, "optim.beta2", number(o.beta2), "a number in [0, 1)");
    check(o.eps > 0, "optim.eps", number(o.eps), "a number > 0");
    check(o.grad_clip >= 0, "optim.grad_clip", number(o.grad_clip), "a number >= 0 (0 = off)");

    at_least("logging.log_every", c.logging.log_every, 1);
}

// A model or a batch too large for this machine would otherwise end in std::bad_alloc or
// the kernel's out-of-memory killer, minutes in. This is a lower bound on what training
// needs (weights, gradients and AdamW's two moments, plus the attention weights and logits
// of one batch; in doubles, since the sizes may overflow 64 bits), so it refuses only
// configurations that cannot fit.
void check_fits_in_memory(const RunConfig& c, const Locate& at) {
    const ModelConfig& m = c.model;
    const double V = static_cast<double>(std::max<int64_t>(m.vocab_size, 1)), D = static_cast<double>(m.d_model),
                 L = static_cast<double>(m.n_layers), T = static_cast<double>(m.context),
                 H = static_cast<double>(m.n_heads), B = static_cast<double>(c.train.batch_size);
    const double parameters = 2 * V * D + (m.positions == "learned" ? T * D : 0) + L * (12 * D * D + 13 * D) + 2 * D;
    const double activations = B * T * (L * H * T + V);
    const double bytes = 4 * (4 * parameters + activations);
    const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    if (memory <= 0 || bytes <= memory) return;
    char needed[96];
    std::snprintf(needed, sizeof needed, "training needs at least %.3g GiB (%.3g parameters)", bytes / (1 << 30),
                  parameters);
    fail(at(""), "",
         "model.d_model " + std::to_string(m.d_model) + ", model.n_layers " + std::to_string(m.n_layers) +
             ", model.context " + std::to_string(m.context) + ", train.batch_size " +
             std::to_string(c.train.batch_size) + ": " + needed + ", more than this machine's " +
             std::to_string(static_cast<int64_t>(memory / (1 << 30))) + " GiB; expected a smaller model or batch");
}

// One corpus, given either as `path` or as `train_path` + `val_path`; with `check_files`
// every named file must exist.
void validate_data(const DataConfig& d, const Locate& at, bool check_files) {
    const std::string one_corpus =
        "expected one corpus: data.path, or data.train_path and data.val_path, or data.prepared";
    if (!d.prepared.empty()) {
        for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"data.path", &d.path},
                                         {"data.train_path", &d.train_path}, {"data.val_path", &d.val_path}})
            if (!value->empty()) fail(at(key), key, "given together with data.prepared, " + one_corpus);
        if (check_files) {
            std::error_code error;
            if (!fs::is_directory(d.prepared, error))
                fail(at("data.prepared"), "data.prepared",
                     "no such directory " + d.prepared + ", expected the output of tinyformer prepare");
        }
    } else if (!d.path.empty() && !d.train_path.empty())
        fail(at("data.train_path"), "data.train_path", "given together with data.path, " + one_corpus);
    if (!d.path.empty() && !d.val_path.empty())
        fail(at("data.val_path"), "data.val_path", "given together with data.path, " + one_corpus);
    if (d.path.empty() && d.train_path.empty() && d.prepared.empty())
        fail(at("data.path"), "data.path",
             "no corpus given (set data.path, or data.train_path and data.val_path, or data.prepared)");
    if (!d.train_path.empty() && d.val_path.empty())
        fail(at("data.val_path"), "data.val_path", "not given, expected a validation text next to data.train_path");
    if (!check_files) return;

    const std::pair<const char*, const std::string*> files[] = {
        {"data.path", &d.path}, {"data.train_path", &d.train_path},
        {"data.val_path", &d.val_path}, {"data.probes_path", &d.probes_path}};
    for (const auto& [key, path] : files) {
        if (path->empty()) continue;
        std::error_code error;
        const fs::file_status status = fs::status(*path, error);
        if (!fs::exists(status)) fail(at(key), key, "no such file " + *path + ", expected an existing text file");
        if (fs::is_directory(status)) fail(at(key), key, *path + " is a directory, expected a text file");
    }
}

// ---------------------------------------------------------------------------------------
// The loader: the file, then the overrides, each value type-checked as it is set
// ---------------------------------------------------------------------------------------

class Loader {
public:
    explicit Loader(std::string file) : file_(std::move(file)) {}

    void read_file() {
        std::error_code error;
        if (!fs::exists(file_, error)) fail(file_, "", "no such config file, expected a TOML file");
        if (fs::is_directory(file_, error)) fail(file_, "", "is a directory, expected a TOML config file");
        toml::table root;
        try {
            root = toml::parse_file(file_);
        } catch (const toml::parse_error& e) {
            fail(position(file_, e.source().begin), "", "TOML syntax error: " + std::string(e.description()));
        }
        const fs::path base = fs::path(file_).parent_path();
        for (const Entry& entry : entries_in_file_order(root)) {
            check_known(entry, position(file_, entry.at));  // unknown: point at the key
            if (entry.key.empty()) continue;
            const std::string where = position(file_, entry.node->source().begin);  // else at the value
            set(dotted(entry.section, entry.key), *entry.node, where, base);
        }
    }

    // "section.key=value": the value in TOML syntax (200, 3e-4, true, "x y.txt"); text that
    // is not one TOML value is taken as a bare string (learned, corpus/x.txt).
    void apply_override(const std::string& text) {
        const std::string where = "--set " + text;
        const size_t equals = text.find('=');
        if (equals == std::string::npos) {
            const auto [section, name] = split_dotted(trim(text));
            fail(where, "", "expected section.key=value (did you mean " + nearest_key(section, name) + "=...?)");
        }
        const std::string key = trim(text.substr(0, equals)), value = trim(text.substr(equals + 1));
        if (!is_key(key)) {
            const auto [section, name] = split_dotted(key);
            fail(where, key, "unknown key, expected one of the keys in --help (did you mean " +
                                 nearest_key(section, name) + "?)");
        }
        toml::table parsed;
        try {
            parsed = toml::parse("value = " + value);
        } catch (const toml::parse_error&) {
        }
        if (parsed.size() != 1 || !parsed.contains("value")) {
            decode_utf8(value, where);  // a bare string must still be text
            parsed = toml::table{{"value", value}};
        }
        set(key, *parsed.get("value"), where, fs::path());  // paths: relative to the working directory
    }

    RunConfig finish(bool check_files) {
        if (!origin_.count("name")) config_.name = fs::path(file_).stem().string();
        const Locate at = [this](const std::string& key) {
            const auto found = origin_.find(key);
            return found != origin_.end() ? found->second : file_;
        };
        validate_values(config_, at);
        check_fits_in_memory(config_, at);
        validate_data(config_.data, at, check_files);
        return config_;
    }

private:
    struct Entry {
        std::string section, key;  // section "" = top level; key "" = an empty [section]
        const toml::node* node;
        toml::source_position at;  // of the key
    };

    // Every key of the file as (section, key), sorted by position, so the first mistake in
    // the file is the one reported.
    static std::vector<Entry> entries_in_file_order(const toml::table& root) {
        std::vector<Entry> entries;
        for (const auto& [key, node] : root) {
            const toml::table* table = node.as_table();
            const std::string name(key.str());
            if (!table) entries.push_back({"", name, &node, key.source().begin});
            else if (table->empty()) entries.push_back({name, "", &node, key.source().begin});
            else
                for (const auto& [inner, value] : *table)
                    entries.push_back({name, std::string(inner.str()), &value, inner.source().begin});
        }
        std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
            return std::tie(a.at.line, a.at.column) < std::tie(b.at.line, b.at.column);
        });
        return entries;
    }

    // Throws for an unknown section or key, naming the nearest valid key.
    static void check_known(const Entry& e, const std::string& where) {
        const std::string sections = "[model], [data], [train], [optim] or [logging]";
        if (e.section.empty() && is_section(e.key))
            fail(where, e.key, "got " + describe(*e.node) + ", expected a table [" + e.key + "]");
        if (e.section.empty() && !is_key(e.key))
            fail(where, e.key, "unknown top-level key, expected `name` or a key in " + sections +
                                   " (did you mean " + nearest_key("", e.key) + "?)");
        if (!e.section.empty() && !is_section(e.section)) {
            const std::string suggestion = e.key.empty() ? "[" + nearest_section(e.section) + "]"
                                                         : nearest_key(e.section, e.key);
            fail(where, dotted(e.section, e.key),
                 "unknown section [" + e.section + "], expected " + sections + " (did you mean " + suggestion + "?)");
        }
        if (!e.key.empty() && !is_key(dotted(e.section, e.key)))
            fail(where, dotted(e.section, e.key), "unknown key, expected one of " + keys_of(e.section) + " in [" +
                                                      e.section + "] (did you mean " +
                                                      nearest_key(e.section, e.key) + "?)");
    }

    // Sets one key from a TOML value; data paths are resolved against `base`.
    void set(const std::string& key, const toml::node& node, const std::string& where, const fs::path& base) {
        for_each_key(config_, [&](const Key& k, auto& field) {
            if (k.dotted() != key) return;
            read(node, field, where, key);
            if constexpr (std::is_same_v<decltype(field), std::string&>)
                if (k.is_path()) field = resolve(base, field);
        });
        origin_[key] = where;
    }

    static std::string nearest_section(const std::string& section) {
        return *std::min_element(kSections.begin(), kSections.end(), [&](const std::string& a, const std::string& b) {
            return edit_distance(section, a) < edit_distance(section, b);
        });
    }
    static std::string dotted(const std::string& section, const std::string& key) {
        if (section.empty()) return key;
        return key.empty() ? section : section + "." + key;
    }
    static std::string trim(const std::string& text) {
        const size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
        return first == std::string::npos ? "" : text.substr(first, last - first + 1);
    }

    std::string file_;
    RunConfig config_;
    std::map<std::string, std::string> origin_;  // dotted key → where its value was set
};

}  // namespace

// ---------------------------------------------------------------------------------------
// The public functions
// ---------------------------------------------------------------------------------------

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides, bool check_files) {
    Loader loader(path);
    loader.read_file();
    for (const std::string& text : overrides) loader.apply_override(text);
    return loader.finish(check_files);
}

std::string config_to_toml(const RunConfig& config) {
    RunConfig absolute = config;
    for_each_key(absolute, [](const Key& key, auto& field) {
        if constexpr (std::is_same_v<decltype(field), std::string&>)
            if (key.is_path() && !field.empty()) field = fs::absolute(field).lexically_normal().string();
    });
    return config_to_toml(absolute, "");
}

std::string config_to_toml(const RunConfig& config, const std::string& toml_path) {
    const fs::path dir = fs::path(toml_path).parent_path();
    std::string out =
        "# tinyformer run configuration, resolved: every key, defaults included; data paths are\n"
        "# relative to this file's directory.\n";
    std::string section;
    for_each_key(config, [&](const Key& key, const auto& field) {
        if (key.section != section) {
            section = key.section;
            out += "\n[" + section + "]\n";
        }
        std::string line = std::string(key.name) + " = ";
        if constexpr (std::is_same_v<decltype(field), const std::string&>)
            line += toml_value(key.is_path() ? path_for_file(field, dir) : field);
        else
            line += toml_value(field);
        line.resize(std::max<size_t>(line.size() + 2, 32), ' ');
        out += line + "# " + key.meaning + "\n";
    });
    return out;
}

nlohmann::json config_to_json(const RunConfig& config) {
    nlohmann::json json = nlohmann::json::object();
    for_each_key(config, [&](const Key& key, const auto& field) {
        if (*key.section) json[key.section][key.name] = field;
        else json[key.name] = field;
    });
    return json;
}

RunConfig config_from_json(const nlohmann::json& json) {
    if (!json.is_object()) fail("", "config", "got " + describe(json) + ", expected a JSON object");
    RunConfig config;
    for_each_key(config, [&](const Key& key, auto& field) {
        const nlohmann::json* scope = &json;
        if (*key.section) {
            const auto section = json.find(key.section);
            if (section == json.end()) return;
            if (!section->is_object()) fail("", key.section, "got " + describe(*section) + ", expected an object");
            scope = &*section;
        }
        const auto value = scope->find(key.name);
        if (value != scope->end()) read(*value, field, key.dotted());
    });
    validate_values(config, [](const std::string&) { return std::string(); });
    return config;
}

std::vector<std::string> config_keys() {
    std::vector<std::string> keys;
    const RunConfig defaults;
    for_each_key(defaults, [&](const Key& key, const auto&) { keys.push_back(key.dotted()); });
    return keys;
}

std::string config_reference() {
    std::string table = "| key | default | meaning |\n|---|---|---|\n";
    const RunConfig defaults;
    for_each_key(defaults, [&](const Key& key, const auto& field) {
        // `name` has no fixed default: it is the config file's stem.
        const std::string value = key.dotted() == "name" ? "the file's stem" : "`" + toml_value(field) + "`";
        table += "| `" + key.dotted() + "` | " + value + " | " + key.meaning + " |\n";
    });
    return table;
}

}  // namespace tinyformer
