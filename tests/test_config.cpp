// The run configuration: defaults, the shipped configs, --set overrides, path resolution,
// one test per kind of mistake (each message must name the file, the position, the dotted
// key and, for an unknown key, the nearest valid one), and the TOML and JSON round trips.
#include "catch.hpp"
#include "test_helpers.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/config.hpp"

using namespace tinyformer;
namespace fs = std::filesystem;

namespace {

const fs::path kSourceDir = TINYFORMER_SOURCE_DIR;

// Runs in `dir` until destroyed (path resolution depends on the working directory).
struct WorkingDirectory {
    fs::path previous = fs::current_path();
    explicit WorkingDirectory(const fs::path& dir) { fs::current_path(dir); }
    ~WorkingDirectory() { fs::current_path(previous); }
};

// The InputError message of `load`, or a failed test if it throws nothing (or anything else).
template <class Load>
std::string error_of(Load&& load) {
    try {
        load();
    } catch (const InputError& e) {
        const std::string message = e.what();
        CHECK(message.find('\n') == std::string::npos);  // one line
        return message;
    }
    FAIL("expected an InputError");
    return "";
}

// A config with a corpus (needed by every valid file), plus `text`.
std::string with_corpus(const std::string& text) { return "[data]\npath = \"corpus.txt\"\n" + text; }
// The same as an override, so that a test's file can be exactly its text (line 1 first).
const std::vector<std::string> kCorpus = {"data.path=corpus.txt"};

// Every field, compared one by one (so that a key the writer forgets is caught).
void require_same(const RunConfig& a, const RunConfig& b) {
    CHECK(a.name == b.name);
    CHECK(a.model.vocab_size == b.model.vocab_size);
    CHECK(a.model.d_model == b.model.d_model);
    CHECK(a.model.n_heads == b.model.n_heads);
    CHECK(a.model.n_layers == b.model.n_layers);
    CHECK(a.model.context == b.model.context);
    CHECK(a.model.positions == b.model.positions);
    CHECK(a.train.rng == b.train.rng);
    CHECK(a.data.path == b.data.path);
    CHECK(a.data.train_path == b.data.train_path);
    CHECK(a.data.val_path == b.data.val_path);
    CHECK(a.data.probes_path == b.data.probes_path);
    CHECK(a.data.val_fraction == b.data.val_fraction);
    CHECK(a.train.steps == b.train.steps);
    CHECK(a.train.batch_size == b.train.batch_size);
    CHECK(a.train.eval_every == b.train.eval_every);
    CHECK(a.train.eval_windows == b.train.eval_windows);
    CHECK(a.train.eval_batches == b.train.eval_batches);
    CHECK(a.train.final_eval == b.train.final_eval);
    CHECK(a.data.prepared == b.data.prepared);
    CHECK(a.train.checkpoint_every == b.train.checkpoint_every);
    CHECK(a.train.seed == b.train.seed);
    CHECK(a.train.threads == b.train.threads);
    CHECK(a.optim.lr == b.optim.lr);
    CHECK(a.optim.min_lr == b.optim.min_lr);
    CHECK(a.optim.warmup_steps == b.optim.warmup_steps);
    CHECK(a.optim.weight_decay == b.optim.weight_decay);
    CHECK(a.optim.beta1 == b.optim.beta1);
    CHECK(a.optim.beta2 == b.optim.beta2);
    CHECK(a.optim.eps == b.optim.eps);
    CHECK(a.optim.grad_clip == b.optim.grad_clip);
    CHECK(a.logging.log_every == b.logging.log_every);
    CHECK(a.logging.progress_bar == b.logging.progress_bar);
}

// Every field away from its default (values chosen to need all 17 digits where possible).
RunConfig unusual_config() {
    RunConfig c;
    c.name = "odd \"name\" \\ 小丁";
    c.model = {65, 96, 3, 5, 48, "learned"};
    c.data.train_path = "corpus/a b.txt";
    c.data.val_path = "../elsewhere/val.txt";
    c.data.probes_path = "probes.tsv";
    c.data.val_fraction = 0.1 + 0.2;
    c.train = {123, 7, 11, 13, 17, 42, 3, "torch", 5, "sampled"};
    c.optim = {0.0123456789012345, 1.5e-5, 9, 0.05, 0.8, 0.95, 1e-6, 0.5};
    c.logging = {3, false};
    return c;
}

}  // namespace

TEST_CASE("every key has its documented default", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    const RunConfig c = load_config(dir.write("tiny.toml", with_corpus("")), {}, false);
    require_same(c, [&] {
        RunConfig expected;
        expected.name = "tiny";  // the file's stem
        expected.data.path = (dir.path / "corpus.txt").string();
        return expected;
    }());
    CHECK(c.model.vocab_size == 0);  // from the corpus
    CHECK(c.model.d_model == 64);
    CHECK(c.train.steps == 2000);
    CHECK(c.optim.lr == 1e-3);
    CHECK(c.logging.progress_bar);

    const std::vector<std::string> keys = config_keys();
    CHECK(keys.size() == 35);
    CHECK(keys.front() == "name");
    for (const char* key : {"model.positions", "data.val_fraction", "train.eval_windows", "optim.grad_clip",
                            "logging.progress_bar"})
        CHECK(std::find(keys.begin(), keys.end(), key) != keys.end());
    const std::string reference = config_reference();
    for (const std::string& key : keys) CHECK_THAT(reference, ContainsSubstring("`" + key + "`"));
    CHECK_THAT(reference, ContainsSubstring("| `train.steps` | `2000` |"));
    CHECK_THAT(reference, ContainsSubstring("| `optim.eps` | `1e-8` |"));
}

TEST_CASE("the shipped configs load", "[config]") {
    const RunConfig lesson = load_config((kSourceDir / "configs/lesson12.toml").string());  // files checked
    CHECK(lesson.name == "lesson12");
    CHECK(lesson.model.d_model == 64);
    CHECK(lesson.model.n_heads == 2);
    CHECK(lesson.model.n_layers == 2);
    CHECK(lesson.model.context == 64);
    CHECK(lesson.model.positions == "rope");
    CHECK(lesson.model.vocab_size == 0);
    CHECK(lesson.data.path.empty());
    CHECK(lesson.data.train_path == (kSourceDir / "corpus/lesson_train.txt").lexically_normal().string());
    CHECK(lesson.data.val_path == (kSourceDir / "corpus/lesson_val.txt").lexically_normal().string());
    CHECK(lesson.data.probes_path == (kSourceDir / "corpus/lesson_probes.tsv").lexically_normal().string());

    testing::TempDir dir("tinyformer_test_config");
    const std::string text = dir.write("shakespeare.txt", "First Citizen:\nBefore we proceed any further.\n");
    const std::string shakespeare_toml = (kSourceDir / "configs/shakespeare_char.toml").string();
    const RunConfig s = load_config(shakespeare_toml, {"data.path=" + text});
    CHECK(s.name == "shakespeare_char");
    CHECK(s.model.n_layers == 4);
    CHECK(s.model.n_heads == 4);
    CHECK(s.model.d_model == 128);
    CHECK(s.model.context == 64);
    CHECK(s.train.batch_size == 12);
    CHECK(s.train.steps == 2000);
    CHECK(s.train.seed == 1337);
    CHECK(s.train.rng == "torch");  // the same draws as the reference's run with this seed
    CHECK(s.optim.lr == 1e-3);
    CHECK(s.optim.min_lr == 1e-4);
    CHECK(s.optim.beta2 == 0.99);
    CHECK(s.data.val_fraction == 0.1);
    CHECK(s.data.path == text);

    // Without the override there is no corpus, and the message says how to give one.
    const std::string message = error_of([&] { load_config(shakespeare_toml); });
    CHECK_THAT(message, ContainsSubstring("shakespeare_char.toml"));
    CHECK_THAT(message, ContainsSubstring("data.path: no corpus given (set data.path, or data.train_path and data.val_path, or data.prepared)"));
}

TEST_CASE("Overrides with --set are parsed as TOML values and type-checked", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    const std::string file = dir.write("run.toml", with_corpus("[train]\nsteps = 10\n"));
    const RunConfig c = load_config(file,
                                    {"train.steps=200", "optim.lr=3e-4", "optim.min_lr = 0", "optim.beta1=0",
                                     "model.positions=learned", "logging.progress_bar=false", "name=\"my run\"",
                                     "train.seed=7", "train.seed=8"},
                                    false);
    CHECK(c.train.steps == 200);           // the override wins over the file
    CHECK(c.optim.lr == 3e-4);
    CHECK(c.optim.min_lr == 0.0);          // an integer is fine for a float key
    CHECK(c.optim.beta1 == 0.0);
    CHECK(c.model.positions == "learned"); // a bare word is a string
    CHECK_FALSE(c.logging.progress_bar);
    CHECK(c.name == "my run");
    CHECK(c.train.seed == 8);              // the last one wins
    CHECK(c.train.rng == "tinyformer");    // the default

    const RunConfig quoted = load_config(file, {"data.path=\"x y.txt\""}, false);
    CHECK(quoted.data.path == "x y.txt");  // relative to the working directory, not the file
    const RunConfig bare = load_config(file, {"data.path=x y.txt"}, false);
    CHECK(bare.data.path == "x y.txt");

    const std::string wrong = error_of([&] { load_config(file, {"train.steps=ten"}, false); });
    CHECK_THAT(wrong, ContainsSubstring("--set train.steps=ten"));
    CHECK_THAT(wrong, ContainsSubstring("train.steps: got the string \"ten\", expected an integer"));
    const std::string fractional = error_of([&] { load_config(file, {"train.batch_size=1.5"}, false); });
    CHECK_THAT(fractional, ContainsSubstring("train.batch_size: got the float 1.5, expected an integer"));
    const std::string range = error_of([&] { load_config(file, {"optim.lr=0"}, false); });
    CHECK_THAT(range, ContainsSubstring("--set optim.lr=0: optim.lr: got 0.0, expected a number > 0"));
}

TEST_CASE("a malformed --set names itself and the nearest key", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    const std::string file = dir.write("run.toml", with_corpus(""));
    const std::string no_equals = error_of([&] { load_config(file, {"train.steps"}, false); });
    CHECK_THAT(no_equals, ContainsSubstring("--set train.steps: expected section.key=value"));
    CHECK_THAT(no_equals, ContainsSubstring("did you mean train.steps=...?"));
    const std::string unknown = error_of([&] { load_config(file, {"tran.step=3"}, false); });
    CHECK_THAT(unknown, ContainsSubstring("--set tran.step=3: tran.step: unknown key"));
    CHECK_THAT(unknown, ContainsSubstring("did you mean train.steps?"));
    const std::string misplaced = error_of([&] { load_config(file, {"train.lr=0.1"}, false); });
    CHECK_THAT(misplaced, ContainsSubstring("did you mean optim.lr?"));
}

TEST_CASE("paths: from the file's directory, from the working directory with --set", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    dir.write("configs/run.toml", "[data]\ntrain_path = \"../corpus/train.txt\"\nval_path = \"/abs/val.txt\"\n");
    WorkingDirectory inside(dir.path);
    const RunConfig c = load_config("configs/run.toml", {}, false);
    CHECK(c.data.train_path == "corpus/train.txt");  // configs/../corpus/train.txt, normalised, still relative
    CHECK(c.data.val_path == "/abs/val.txt");        // absolute stays absolute
    CHECK(c.name == "run");
    const RunConfig o = load_config("configs/run.toml", {"data.train_path=other/./t.txt"}, false);
    CHECK(o.data.train_path == "other/t.txt");       // not configs/other/t.txt
}

TEST_CASE("unknown keys and sections suggest the nearest key", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    struct Case {
        std::string text, where, key, suggestion;
    };
    const std::vector<Case> cases = {
        {"[train]\nstep = 10\n", ":2:1:", "train.step", "(did you mean train.steps?)"},
        {"[train]\nlr = 0.01\n", ":2:1:", "train.lr", "(did you mean optim.lr?)"},
        {"[model]\nd_modle = 32\n", ":2:1:", "model.d_modle", "(did you mean model.d_model?)"},
        {"[optimizer]\nlr = 1e-3\n", ":2:1:", "optimizer.lr: unknown section [optimizer]", "(did you mean optim.lr?)"},
        {"[trian]\n", ":1:2:", "trian: unknown section [trian]", "(did you mean [train]?)"},
        {"steps = 10\n", ":1:1:", "steps: unknown top-level key", "(did you mean train.steps?)"},
        {"[logging]\nlog_every = 5\nlog_evry = 5\n", ":3:1:", "logging.log_evry", "(did you mean logging.log_every?)"},
        {"[train]\nseed = 1\n[model]\nwidth = 64\n", ":4:1:", "model.width", "expected one of vocab_size, d_model"},
        // Two mistakes: the first in the file is reported (toml++ itself keeps keys sorted).
        {"[train]\nstep = 10\n[model]\nwidth = 64\n", ":2:1:", "train.step", "(did you mean train.steps?)"},
    };
    for (const Case& c : cases) {
        INFO(c.text);
        const std::string file = dir.write("typo.toml", c.text);
        const std::string message = error_of([&] { load_config(file, kCorpus, false); });
        CHECK_THAT(message, ContainsSubstring(file + c.where));
        CHECK_THAT(message, ContainsSubstring(c.key));
        CHECK_THAT(message, ContainsSubstring(c.suggestion));
    }
    // A section given as a plain value is a type error, not an unknown key.
    const std::string file = dir.write("flat.toml", "model = 3\n");
    CHECK_THAT(error_of([&] { load_config(file, {}, false); }),
               ContainsSubstring("flat.toml:1:1: model: got the integer 3, expected a table [model]"));
}

TEST_CASE("values of the wrong type are rejected", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    struct Case {
        std::string text, where, message;
    };
    const std::vector<Case> cases = {
        {"[train]\nsteps = \"ten\"\n", ":2:9:", "train.steps: got the string \"ten\", expected an integer"},
        {"[train]\nsteps = 10.0\n", ":2:9:", "train.steps: got the float 10.0, expected an integer"},
        {"[optim]\nlr = \"big\"\n", ":2:6:", "optim.lr: got the string \"big\", expected a finite number"},
        {"[optim]\nlr = inf\n", ":2:6:", "optim.lr: got the float inf, expected a finite number"},
        {"[model]\npositions = 3\n", ":2:13:", "model.positions: got the integer 3, expected a string"},
        {"[logging]\nprogress_bar = 1\n", ":2:", "logging.progress_bar: got the integer 1, expected true or false"},
        {"[data]\nprobes_path = [\"a\"]\n", ":2:", "data.probes_path: got an array, expected a string"},
        {"name = 12\n", ":1:", "name: got the integer 12, expected a string"},
    };
    for (const Case& c : cases) {
        INFO(c.text);
        const std::string file = dir.write("types.toml", c.text);
        const std::string message = error_of([&] { load_config(file, kCorpus, false); });
        CHECK_THAT(message, ContainsSubstring(file + c.where));
        CHECK_THAT(message, ContainsSubstring(c.message));
    }
    // An integer where a float is expected is fine.
    const RunConfig c = load_config(dir.write("int.toml", with_corpus("[optim]\nlr = 1\nmin_lr = 0\n")), {}, false);
    CHECK(c.optim.lr == 1.0);
    CHECK(c.optim.min_lr == 0.0);
}

TEST_CASE("impossible values name their key and line", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    struct Case {
        std::string text, key, expected;
    };
    const std::vector<Case> cases = {
        {"[model]\nn_heads = 3\n", "model.n_heads", "not divisible"},
        {"[model]\nn_heads = 2\nd_model = 6\n", "model.n_heads", "must be even"},  // rope: head width 3
        {"[model]\nvocab_size = -1\n", "model.vocab_size", "got -1, expected an integer >= 0"},
        {"[model]\ncontext = 0\n", "model.context", "got 0, expected an integer >= 1"},
        {"[model]\nn_layers = 0\n", "model.n_layers", "expected an integer >= 1"},
        {"[model]\npositions = \"absolute\"\n", "model.positions", "expected \"rope\" or \"learned\""},
        {"[train]\nrng = \"numpy\"\n", "train.rng", "got \"numpy\", expected \"tinyformer\" or \"torch\""},
        {"[optim]\nlr = 0\n", "optim.lr", "got 0.0, expected a number > 0"},
        {"[optim]\nlr = -1e-3\n", "optim.lr", "expected a number > 0"},
        {"[optim]\nmin_lr = -1e-5\n", "optim.min_lr", "expected a number in [0, optim.lr = 0.001]"},
        {"[optim]\nmin_lr = 0.01\n", "optim.min_lr", "got 0.01, expected a number in [0, optim.lr = 0.001]"},
        {"[optim]\nbeta1 = 1\n", "optim.beta1", "got 1.0, expected a number in [0, 1)"},
        {"[optim]\nbeta2 = -0.5\n", "optim.beta2", "expected a number in [0, 1)"},
        {"[optim]\neps = 0\n", "optim.eps", "expected a number > 0"},
        {"[optim]\ngrad_clip = -1\n", "optim.grad_clip", "expected a number >= 0"},
        {"[optim]\nweight_decay = -0.1\n", "optim.weight_decay", "expected a number >= 0"},
        {"[optim]\nwarmup_steps = -1\n", "optim.warmup_steps", "expected an integer >= 0"},
        {"[train]\nsteps = 0\n", "train.steps", "got 0, expected an integer >= 1"},
        {"[train]\nbatch_size = 0\n", "train.batch_size", "expected an integer >= 1"},
        {"[train]\neval_every = -1\n", "train.eval_every", "expected an integer >= 0"},
        {"[train]\nthreads = -2\n", "train.threads", "expected an integer >= 0"},
        {"[logging]\nlog_every = 0\n", "logging.log_every", "expected an integer >= 1"},
        {"[data]\nval_fraction = 0\n", "data.val_fraction", "expected a number in (0, 1)"},
        {"[data]\nval_fraction = 1.0\n", "data.val_fraction", "expected a number in (0, 1)"},
        {"\nname = \"a/b\"\n", "name", "expected a plain directory name"},
    };
    for (const Case& c : cases) {
        INFO(c.text);
        const std::string file = dir.write("bad.toml", c.text);
        const std::string message = error_of([&] { load_config(file, kCorpus, false); });
        CHECK_THAT(message, ContainsSubstring(file + ":2:"));  // every case sets its key on line 2
        CHECK_THAT(message, ContainsSubstring(c.key + ": "));
        CHECK_THAT(message, ContainsSubstring(c.expected));
    }
    // The edges of each range are allowed.
    const std::string edges =
        "[model]\nvocab_size = 0\n[optim]\nmin_lr = 1e-3\nbeta1 = 0\ngrad_clip = 0\nweight_decay = 0\n"
        "warmup_steps = 0\n[train]\neval_every = 0\nthreads = 0\ncheckpoint_every = 0\n[data]\nval_fraction = 0.999\n";
    CHECK_NOTHROW(load_config(dir.write("edges.toml", edges), kCorpus, false));
}

TEST_CASE("TOML syntax errors and duplicate keys give file, line and toml++'s reason", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    const std::string broken = dir.write("broken.toml", "[train\nsteps = 10\n");
    const std::string message = error_of([&] { load_config(broken, {}, false); });
    CHECK_THAT(message, ContainsSubstring(broken + ":1:"));
    CHECK_THAT(message, ContainsSubstring("TOML syntax error"));

    const std::string twice = dir.write("twice.toml", with_corpus("[train]\nsteps = 10\nsteps = 20\n"));
    const std::string duplicate = error_of([&] { load_config(twice, {}, false); });
    CHECK_THAT(duplicate, ContainsSubstring(twice + ":5:"));
    CHECK_THAT(duplicate, ContainsSubstring("steps"));
}

TEST_CASE("a missing config file is an InputError naming it", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    const std::string missing = (dir.path / "nowhere.toml").string();
    const std::string message = error_of([&] { load_config(missing); });
    CHECK_THAT(message, ContainsSubstring(missing + ": no such config file"));
}

TEST_CASE("the corpus: one of path or train_path + val_path, and the files must exist", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    auto error_for = [&](const std::string& text, bool check_files = false) {
        const std::string file = dir.write("data.toml", text);
        return error_of([&] { load_config(file, {}, check_files); });
    };
    CHECK_THAT(error_for("[train]\nsteps = 5\n"),
               ContainsSubstring("data.toml: data.path: no corpus given (set data.path, or data.train_path and data.val_path, or data.prepared)"));
    CHECK_THAT(error_for("[data]\npath = \"a.txt\"\ntrain_path = \"b.txt\"\nval_path = \"c.txt\"\n"),
               ContainsSubstring("data.toml:3:14: data.train_path: given together with data.path"));
    CHECK_THAT(error_for("[data]\ntrain_path = \"b.txt\"\n"),
               ContainsSubstring("data.toml: data.val_path: not given, expected a validation text next to data.train_path"));

    // With check_files every named file must exist; the message gives the resolved path.
    dir.write("corpus/train.txt", "abc");
    const std::string two = "[data]\ntrain_path = \"corpus/train.txt\"\nval_path = \"corpus/val.txt\"\n";
    const std::string missing = error_for(two, true);
    CHECK_THAT(missing, ContainsSubstring("data.toml:3:12: data.val_path: no such file " + (dir.path / "corpus/val.txt").string()));
    CHECK_NOTHROW(load_config(dir.write("data.toml", two), {}, false));  // not checked
    dir.write("corpus/val.txt", "abc");
    CHECK_NOTHROW(load_config(dir.write("data.toml", two), {}, true));
    const std::string probes = error_for(two + "probes_path = \"corpus\"\n", true);
    CHECK_THAT(probes, ContainsSubstring("data.probes_path: " + (dir.path / "corpus").string() + " is a directory"));
    const std::string one = error_for("[data]\npath = \"../gone.txt\"\n", true);
    CHECK_THAT(one, ContainsSubstring("data.path: no such file " + (dir.path.parent_path() / "gone.txt").string()));
}

TEST_CASE("config_to_toml round-trips through load_config", "[config]") {
    testing::TempDir dir("tinyformer_test_config");
    WorkingDirectory inside(dir.path);
    RunConfig c = unusual_config();

    // Written into runs/x/: relative paths are re-expressed from there and come back equal.
    const std::string destination = "runs/x/config.toml";
    const std::string text = config_to_toml(c, destination);
    CHECK(text.rfind("# ", 0) == 0);                 // a comment line at the top
    CHECK_THAT(text, ContainsSubstring("[optim]\nlr = 0.0123456789012345"));
    CHECK_THAT(text, ContainsSubstring("train_path = \"../../corpus/a b.txt\""));
    dir.write(destination, text);
    require_same(load_config(destination, {}, false), c);

    // With `path` instead of train_path/val_path, and absolute paths.
    c.data.train_path = c.data.val_path = "";
    c.data.path = (dir.path / "one.txt").string();
    dir.write(destination, config_to_toml(c, destination));
    require_same(load_config(destination, {}, false), c);

    // The one-argument form writes absolute paths: loadable from anywhere.
    c.data.path = "texts/one.txt";
    const std::string anywhere = dir.write("elsewhere/deep/config.toml", config_to_toml(c));
    CHECK(load_config(anywhere, {}, false).data.path == (fs::current_path() / "texts/one.txt").string());
}

TEST_CASE("config_to_json and config_from_json are inverses, and wrong types are rejected", "[config]") {
    RunConfig c = unusual_config();
    c.data.path = "both.txt";  // the JSON side does not judge the corpus settings
    const nlohmann::json json = config_to_json(c);
    CHECK(json["name"] == c.name);
    CHECK(json["model"]["d_model"] == 96);
    CHECK(json["model"]["positions"] == "learned");
    CHECK(json["optim"]["lr"] == 0.0123456789012345);
    CHECK(json["logging"]["progress_bar"] == false);
    for (const std::string& key : config_keys()) {  // every key present
        const size_t dot = key.find('.');
        INFO(key);
        if (dot == std::string::npos) CHECK(json.contains(key));
        else CHECK(json[key.substr(0, dot)].contains(key.substr(dot + 1)));
    }
    require_same(config_from_json(json), c);
    require_same(config_from_json(nlohmann::json::parse(json.dump())), c);  // through text, as in a checkpoint

    // Missing keys keep their defaults.
    const RunConfig partial = config_from_json({{"model", {{"d_model", 32}}}});
    CHECK(partial.model.d_model == 32);
    CHECK(partial.model.n_heads == 2);
    CHECK(partial.train.steps == 2000);
    CHECK(partial.name == "run");

    // Wrong types and impossible values are InputErrors naming the key.
    auto error_for = [](const nlohmann::json& j) { return error_of([&] { config_from_json(j); }); };
    CHECK_THAT(error_for({{"model", {{"d_model", "64"}}}}),
               ContainsSubstring("model.d_model: got the string \"64\", expected a 64-bit integer"));
    CHECK_THAT(error_for({{"model", {{"d_model", 64.5}}}}), ContainsSubstring("model.d_model: got the number 64.5"));
    CHECK_THAT(error_for({{"optim", {{"lr", true}}}}), ContainsSubstring("optim.lr: got the boolean true, expected a finite number"));
    CHECK_THAT(error_for({{"logging", {{"progress_bar", 1}}}}), ContainsSubstring("logging.progress_bar"));
    CHECK_THAT(error_for({{"model", {{"positions", nullptr}}}}), ContainsSubstring("model.positions: got null"));
    CHECK_THAT(error_for({{"train", 5}}), ContainsSubstring("train: got the number 5, expected an object"));
    CHECK_THAT(error_for({{"model", {{"n_heads", 3}}}}), ContainsSubstring("model.n_heads"));
    CHECK_THAT(error_for(nlohmann::json::array()), ContainsSubstring("expected a JSON object"));
}
