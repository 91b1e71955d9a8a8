// `import tinyformer`: the trained model, its activations by hook name, and the head
// experiments, as numpy arrays (docs/python.md). A thin layer over the libraries the CLI
// uses: every number here is computed by the same code as `tinyformer inspect`, `eval`
// and `sample`.
//
//   m = tinyformer.load("runs/lesson12")            # a run directory or a .safetensors
//   logits, cache = m.run_with_cache("小丁拿着红色的苹果。")
//   cache["blocks.1.attn.hook_pattern"]             # [H, T, T], TransformerLens's name
//
// Errors become Python's: a missing path FileNotFoundError; a bad input (a character
// outside the vocabulary, a text longer than the context, a hostile checkpoint) ValueError
// with the CLI's one-line message; anything else RuntimeError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <pthread.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <thread>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/threads.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/utf8.hpp"
#include "tinyformer/train/checkpoint.hpp"
#include "tinyformer/train/config.hpp"
#include "tinyformer/train/evaluate.hpp"
#include "tinyformer/train/trainer.hpp"
#include "tinyformer/inspect/training_roles.hpp"
#include "tinyformer/model/gradcheck.hpp"
#include "tinyformer/support/interrupts.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/inspect/patching.hpp"
#include "tinyformer/model/decoder.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/data/dataset.hpp"

namespace py = pybind11;

namespace tinyformer {
namespace {

// The engine is one per process: its backend, its thread count and its buffer pool. Python
// threads take turns in it (each call releases the GIL first, then waits here), so that a
// threaded caller gets the numbers a single thread gets.
std::mutex engine_mutex;

// A loaded checkpoint, shared with every numpy array that views its weights (their base),
// so that an array outlives neither the model nor its memory.
struct Model {
    LoadedModel loaded;

    const Transformer& transformer() const { return *loaded.model; }
    const ModelConfig& config() const { return loaded.model->config(); }

    // The text's ids; ValueError (through InputError) naming the character and its index.
    std::vector<int32_t> encode(const std::string& text) const {
        return loaded.vocab.encode(decode_utf8(text, "text"), "text");
    }

    // ids of a text the model can read in one pass: 1..context characters.
    std::vector<int32_t> ids_of(const std::string& text) const {
        std::vector<int32_t> ids = encode(text);
        const int64_t T = static_cast<int64_t>(ids.size());
        if (T < 1 || T > config().context)
            throw InputError("text: " + std::to_string(T) + " characters, expected 1 to " +
                             std::to_string(config().context) + " (the model's context)");
        return ids;
    }

    // The heads to knock out, as inspect knocks them out: "zero" puts zeros in a head's
    // output, "mean" its mean output over the run's validation text (the part inspect
    // measures). Caller holds the engine.
    std::vector<HeadAblation> ablations(const std::vector<std::pair<int64_t, int64_t>>& heads, const std::string& mode) {
        if (mode != "zero" && mode != "mean")
            throw InputError("mode: \"" + mode + "\", expected \"zero\" or \"mean\"");
        const ModelConfig& c = config();
        std::vector<HeadAblation> list;
        for (const auto& [layer, head] : heads) {
            if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads)
                throw InputError("ablate: (" + std::to_string(layer) + ", " + std::to_string(head) +
                                 ") is no head: expected (layer, head) with layer in 0.." + std::to_string(c.n_layers - 1) +
                                 " and head in 0.." + std::to_string(c.n_heads - 1));
            HeadAblation ablation{.layer = layer, .head = head};
            if (mode == "mean") ablation.with = mean_outputs().at(static_cast<size_t>(layer * c.n_heads + head));
            list.push_back(ablation);
        }
        return list;
    }

    // The hook points names_filter keeps (run_with_cache), checked: ValueError for a name
    // no hook point has.
    std::set<std::string> hook_names_wanted(const py::object& names_filter) {
        std::set<std::string> wanted;
        if (names_filter.is_none()) return wanted;
        std::vector<std::string> listed;
        if (py::isinstance<py::str>(names_filter)) listed.push_back(names_filter.cast<std::string>());
        else if (!PyCallable_Check(names_filter.ptr())) listed = names_filter.cast<std::vector<std::string>>();
        for (const std::string& name : listed)
            if (std::find(hook_names_.begin(), hook_names_.end(), name) == hook_names_.end())
                throw InputError("names_filter: \"" + name + "\" is no hook point of this model (run_with_cache(text)[1] "
                                 "lists them)");
        for (const std::string& name : hook_names_)
            if (listed.empty() && PyCallable_Check(names_filter.ptr()) ? py::bool_(names_filter(name)).cast<bool>()
                                                                       : std::find(listed.begin(), listed.end(), name) != listed.end())
                wanted.insert(name);
        return wanted;
    }

    // The model in float64, written out head by head (inspect's patching forward), made once.
    // Caller holds the engine.
    const DenseModel& dense() {
        if (!dense_) dense_ = std::make_unique<DenseModel>(dense_model(transformer()));
        return *dense_;
    }

    // Each head's mean output over the validation text, computed once.
    const std::vector<Tensor>& mean_outputs() {
        if (mean_outputs_.empty()) mean_outputs_ = mean_head_outputs(transformer(), validation_ids());
        return mean_outputs_;
    }

    // The part of the run's validation text that inspect measures over.
    std::vector<int32_t> validation_ids() const {
        DataConfig text_only = loaded.config.data;
        text_only.probes_path.clear();
        if (!text_only.has_corpus())
            throw InputError(loaded.path + ": its config names no validation text, which mean ablation averages over");
        const Corpus corpus = load_corpus(text_only);
        if (corpus.vocab.chars() != loaded.vocab.chars())
            throw InputError(text_only.validation_name() + ": its corpus no longer has the checkpoint's vocabulary");
        return corpus.val.slice(0, measured_length(corpus.val.size(), config().context));
    }

    // logits [T, V] of `ids` with `heads` knocked out (m.run): the decoder's (the sampler's and
    // eval's arithmetic), and a cache of the last text's positions, so that a text that grows
    // by a character from one call to the next (a Python loop of greedy answers) costs one
    // position, as in eval. The decoder's prefill and its steps give the same bits, so the
    // logits of a text do not depend on the calls before it. Writes them into `logits` (room
    // for [T, V]). Caller holds the engine.
    void run(const std::vector<int32_t>& ids, const std::vector<HeadAblation>& heads, const std::string& mode,
             float* logits) {
        if (!decoder_) decoder_ = std::make_unique<Decoder>(transformer());
        std::string ablated = heads.empty() ? "" : mode;  // what the decoder's cache was computed with
        for (const HeadAblation& head : heads) ablated += " " + std::to_string(head.layer) + "." + std::to_string(head.head);
        if (ablated != decoder_ablated_) {
            decoder_->clear_ablations();
            for (const HeadAblation& head : heads) {
                std::vector<float> replacement;
                if (head.with.defined())
                    for (double value : head.with.to_vector()) replacement.push_back(static_cast<float>(value));
                decoder_->ablate(head.layer, head.head, replacement);
            }
            decoder_ablated_ = ablated;
            decoded_ids_.clear();
        }
        const size_t V = static_cast<size_t>(config().vocab_size), n = ids.size();
        const size_t shared = static_cast<size_t>(
            std::mismatch(ids.begin(), ids.end(), decoded_ids_.begin(), decoded_ids_.end()).first - ids.begin());
        if (shared == decoded_ids_.size() && shared > 0) {  // the cached text, and maybe more after it
            for (size_t p = shared; p < n; ++p) {
                const std::vector<float>& next = decoder_->step(ids[p]);
                decoded_logits_.insert(decoded_logits_.end(), next.begin(), next.end());
                decoded_ids_.push_back(ids[p]);
            }
        } else if (shared < n) {  // another text: its positions from the start
            decoded_logits_.resize(n * V);
            decoder_->prefill(ids.data(), static_cast<int64_t>(n), decoded_logits_.data());
            decoded_ids_ = ids;
        }  // else a beginning of the cached text: its rows as they are
        std::copy_n(decoded_logits_.begin(), n * V, logits);
    }

private:
    std::vector<Tensor> mean_outputs_;

public:
    std::vector<std::string> hook_names_;  // every name the forward records (load() fills it)

private:
    std::unique_ptr<Decoder> decoder_;
    std::unique_ptr<DenseModel> dense_;
    std::string decoder_ablated_;            // the heads the decoder knocks out, and how
    std::vector<int32_t> decoded_ids_;       // the text in its cache
    std::vector<float> decoded_logits_;      // [decoded_ids_.size(), V]
};

using HeadList = std::vector<std::pair<int64_t, int64_t>>;

py::dict tally_dict(int64_t correct, int64_t total, const std::map<std::string, std::pair<int64_t, int64_t>>& by_kind) {
    py::dict kinds;
    for (const auto& [kind, counts] : by_kind)
        kinds[py::str(kind)] = py::dict(py::arg("correct") = counts.first, py::arg("total") = counts.second,
                                        py::arg("accuracy") = counts.second ? double(counts.first) / counts.second : 0.0);
    return py::dict(py::arg("correct") = correct, py::arg("total") = total,
                    py::arg("accuracy") = total ? double(correct) / total : 0.0, py::arg("by_kind") = kinds);
}

// A read-only float32 numpy array of `tensor`'s elements, without a copy: the array views the
// tensor's buffer and holds it (the buffer goes back to the engine's pool when the last array
// viewing it dies). The batch axis of a [1,...] tensor is dropped; `axes`, if given, permutes
// the rest as numpy's transpose does, in the view's strides.
py::array_t<float> to_numpy(const Tensor& tensor, const std::vector<int64_t>& axes = {}) {
    const Tensor values = tensor.dtype() == DType::f32 ? tensor : tensor.to(DType::f32);
    std::vector<py::ssize_t> shape(values.shape().begin(), values.shape().end());
    if (!shape.empty() && shape.front() == 1 && values.rank() > 1) shape.erase(shape.begin());  // the batch of one
    std::vector<py::ssize_t> strides(shape.size());
    py::ssize_t stride = sizeof(float);
    for (size_t i = shape.size(); i-- > 0;) strides[i] = stride, stride *= shape[i];
    if (!axes.empty()) {
        const std::vector<py::ssize_t> shape_before = shape, strides_before = strides;
        for (size_t i = 0; i < axes.size(); ++i)
            shape[i] = shape_before[static_cast<size_t>(axes[i])], strides[i] = strides_before[static_cast<size_t>(axes[i])];
    }
    auto* held = new std::shared_ptr<Storage>(values.storage());
    py::capsule owner(held, [](void* storage) { delete static_cast<std::shared_ptr<Storage>*>(storage); });
    py::array_t<float> array(shape, strides, values.data<float>(), owner);
    py::detail::array_proxy(array.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return array;
}

// TransformerLens's layout for each hook point, without the batch axis: q, k, v and z are
// [pos, head, d_head] there; our tensors are [head, pos, d_head].
py::dict activations_to_numpy(const std::map<std::string, Tensor>& activations) {
    py::dict cache;
    for (const auto& [name, value] : activations) {
        // z is [pos, head, d_head] already; q, k, v, rot_q and rot_k are [head, pos, d_head],
        // viewed here in TransformerLens's order.
        const bool heads_first = name.ends_with("hook_q") || name.ends_with("hook_k") || name.ends_with("hook_v") ||
                                 name.ends_with("hook_rot_q") || name.ends_with("hook_rot_k");
        cache[py::str(name)] = heads_first ? to_numpy(value, {1, 0, 2}) : to_numpy(value);
    }
    return cache;
}

py::object config_dict(const RunConfig& config) {
    return py::module_::import("json").attr("loads")(config_to_json(config).dump());
}

std::shared_ptr<Model> load(const std::string& path) {
    if (!std::filesystem::exists(path)) {
        PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(ENOENT, "No such file or directory", path).ptr());
        throw py::error_already_set();
    }
    auto model = std::make_shared<Model>();
    py::gil_scoped_release released;
    model->loaded = load_model(path);
    const std::lock_guard<std::mutex> engine(engine_mutex);
    NoGradScope no_grad;
    std::map<std::string, Tensor> activations;  // the hook points' names, from a forward of one position
    model->transformer().forward(Tensor::ids({0}, {1, 1}), ForwardHooks{.activations = &activations});
    for (const auto& [name, value] : activations) model->hook_names_.push_back(name);
    return model;
}

// A Python value as a TOML value for a --set override: strings quoted, numbers and booleans as
// TOML writes them.
std::string toml_value(const py::handle& value, const std::string& key) {
    if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
    if (py::isinstance<py::int_>(value)) return py::str(value).cast<std::string>();
    if (py::isinstance<py::float_>(value)) return py::repr(value).cast<std::string>();
    if (py::isinstance<py::str>(value))  // JSON's string escapes are TOML's basic string's
        return py::module_::import("json").attr("dumps")(value, py::arg("ensure_ascii") = false).cast<std::string>();
    throw InputError("set[\"" + key + "\"]: a " + py::str(value.get_type().attr("__name__")).cast<std::string>() +
                     ", expected a str, int, float or bool");
}

// Runs the CLI's trainer on a thread of its own, whose threads (OpenMP's and oneDNN's) block
// SIGINT: a signal handler landing in one of oneDNN's kernels would write over the heap
// (support/interrupts.hpp). Python's own handler takes Ctrl-C on the calling thread, which
// waits here and passes it on to the trainer (request_interrupt): the trainer saves a
// checkpoint at the end of the step and throws Interrupted, raised here as KeyboardInterrupt.
py::object train_in_python(const std::string& config_path, const py::dict& set, const std::string& out, bool resume,
                           bool force, const py::object& on_step) {
    std::vector<std::string> overrides;
    for (const auto& [key, value] : set) {
        const std::string name = py::str(key).cast<std::string>();
        overrides.push_back(name + "=" + toml_value(value, name));
    }
    TrainOptions options;
    options.config = load_config(resume && config_path.empty() ? (std::filesystem::path(out) / "config.toml").string()
                                                               : config_path,
                                 overrides);
    options.resume = resume;
    options.overwrite = force;
    options.run_dir = !out.empty() ? out : (std::filesystem::path("runs") / options.config.name).string();
    options.roles = training_roles_of_probes;  // as the CLI: metrics.jsonl's "roles"
    if (!on_step.is_none())
        options.on_step = [on_step](const StepReport& report) {
            py::gil_scoped_acquire held;
            if (report.val_loss) on_step(report.step, report.loss, report.lr, *report.val_loss);
            else on_step(report.step, report.loss, report.lr);
        };

    std::mutex waiting;
    std::condition_variable finished_signal;
    bool finished = false;
    nlohmann::json summary;
    std::exception_ptr failure;
    {
        py::gil_scoped_release released;
        const std::lock_guard<std::mutex> engine(engine_mutex);
        set_num_threads(static_cast<int>(options.config.train.threads));  // the CLI's thread count: its bits
        sigset_t sigint, before;
        sigemptyset(&sigint);
        sigaddset(&sigint, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigint, &before);  // the trainer's thread (and its threads) inherit it
        std::thread trainer([&] {
            try {
                summary = train(options);
            } catch (...) {
                failure = std::current_exception();
            }
            const std::lock_guard<std::mutex> lock(waiting);
            finished = true;
            finished_signal.notify_one();
        });
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
        bool interrupt_seen = false;
        std::unique_lock<std::mutex> lock(waiting);
        while (!finished_signal.wait_for(lock, std::chrono::milliseconds(50), [&] { return finished; })) {
            lock.unlock();
            {
                py::gil_scoped_acquire held;
                if (PyErr_CheckSignals() != 0) {  // Python's Ctrl-C (its KeyboardInterrupt, held for later)
                    PyErr_Clear();
                    interrupt_seen = true;
                }
            }
            if (interrupt_seen) request_interrupt();  // again each time: the trainer may not be catching yet
            lock.lock();
        }
        lock.unlock();
        trainer.join();
        set_num_threads(0);
    }
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const Interrupted& e) {
            PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
            throw py::error_already_set();
        }
    }
    return py::module_::import("json").attr("loads")(summary.dump());
}

// Activation patching of one pair of texts, as inspect patches each probe and its corrupted
// twin (inspect/patching.hpp): the corrupted text runs with one head's output z taken from
// the clean run, and the metric is the logit difference at the last position between the
// two answers' characters.
py::dict patch_in_python(Model& m, const std::string& clean_text, const std::string& corrupted_text,
                         const py::object& answers, const HeadList& heads_asked, const py::object& position) {
    const ModelConfig& c = m.config();
    ProbeTwin twin;
    twin.clean = m.ids_of(clean_text);
    twin.corrupted = m.ids_of(corrupted_text);
    const int64_t T = static_cast<int64_t>(twin.clean.size());
    if (twin.corrupted.size() != twin.clean.size())
        throw InputError("corrupted: " + std::to_string(twin.corrupted.size()) + " characters, expected as many as clean's " +
                         std::to_string(T) + " (patching copies position by position)");
    HeadList heads = heads_asked;
    if (heads.empty())
        for (int64_t l = 0; l < c.n_layers; ++l)
            for (int64_t h = 0; h < c.n_heads; ++h) heads.emplace_back(l, h);
    m.ablations(heads, "zero");  // checks each (layer, head)
    // Where the head is patched: every position (None), one (an int, negative from the end),
    // or each position alone ("each").
    const bool each = py::isinstance<py::str>(position);
    if (each && position.cast<std::string>() != "each")
        throw InputError("position: \"" + position.cast<std::string>() + "\", expected None, a position or \"each\"");
    int64_t at = -1;
    if (!each && !position.is_none()) {
        at = position.cast<int64_t>();
        if (at < -T || at >= T)
            throw InputError("position: " + std::to_string(at) + ", expected -" + std::to_string(T) + ".." +
                             std::to_string(T - 1) + " (the text's positions)");
        if (at < 0) at += T;
    }
    std::vector<std::string> answer_chars;
    if (!answers.is_none()) {
        answer_chars = answers.cast<std::vector<std::string>>();
        if (answer_chars.size() != 2)
            throw InputError("answers: " + std::to_string(answer_chars.size()) +
                             " items, expected (clean answer, corrupted answer)");
        const std::vector<int32_t> clean_answer = m.encode(answer_chars[0]), corrupted_answer = m.encode(answer_chars[1]);
        if (clean_answer.empty() || corrupted_answer.empty()) throw InputError("answers: an empty answer");
        twin.clean_answer = clean_answer.front();  // the metric reads the answers' first characters
        twin.corrupted_answer_id = corrupted_answer.front();
    }

    double clean = 0, corrupted = 0;
    std::vector<std::vector<double>> patched(heads.size());  // [heads][1 or T]
    {
        py::gil_scoped_release released;
        const std::lock_guard<std::mutex> engine(engine_mutex);
        const DenseModel& model = m.dense();
        const Trace clean_run = traced_forward(model, twin.clean), corrupted_run = traced_forward(model, twin.corrupted);
        if (answer_chars.empty()) {  // each run's own greedy prediction at the last position
            Eigen::Index best = 0;
            clean_run.logits.row(T - 1).maxCoeff(&best);
            twin.clean_answer = static_cast<int32_t>(best);
            corrupted_run.logits.row(T - 1).maxCoeff(&best);
            twin.corrupted_answer_id = static_cast<int32_t>(best);
        }
        clean = logit_difference(clean_run, twin);
        corrupted = logit_difference(corrupted_run, twin);
        for (size_t i = 0; i < heads.size(); ++i) {
            const auto [layer, head] = heads[i];
            for (int64_t t = each ? 0 : at; t < (each ? T : at + 1); ++t)
                patched[i].push_back(logit_difference(
                    traced_forward(model, twin.corrupted, patch_output(layer, head, t, clean_run.z[layer][head]), &corrupted_run),
                    twin));
        }
    }
    if (twin.clean_answer == twin.corrupted_answer_id)
        throw InputError("answers: both runs answer \"" + encode_utf8(m.loaded.vocab.decode({twin.clean_answer})) +
                         "\", so no difference is there to recover; give answers=(clean, corrupted)");
    py::list patched_list, recovered_list;
    for (const std::vector<double>& values : patched) {
        std::vector<double> recovered;
        for (double value : values) recovered.push_back(recovered_fraction(value, clean, corrupted));
        if (each) patched_list.append(py::cast(values)), recovered_list.append(py::cast(recovered));
        else patched_list.append(values.front()), recovered_list.append(recovered.front());
    }
    return py::dict(py::arg("answers") = py::make_tuple(encode_utf8(m.loaded.vocab.decode({twin.clean_answer})),
                                                        encode_utf8(m.loaded.vocab.decode({twin.corrupted_answer_id}))),
                    py::arg("clean") = clean, py::arg("corrupted") = corrupted, py::arg("heads") = heads,
                    py::arg("patched") = patched_list, py::arg("recovered") = recovered_list);
}

// The gradient checks of `tinyformer gradcheck`: a row per check.
py::list gradcheck_in_python() {
    std::vector<GradCheckResult> results;
    {
        py::gil_scoped_release released;
        const std::lock_guard<std::mutex> engine(engine_mutex);
        results = run_gradcheck_suite();
    }
    py::list rows;
    for (const GradCheckResult& r : results)
        rows.append(py::dict(py::arg("name") = r.name, py::arg("op") = r.op, py::arg("ops") = r.ops,
                             py::arg("elements") = r.elements, py::arg("max_abs_error") = r.max_abs_error,
                             py::arg("max_rel_error") = r.max_rel_error, py::arg("pass") = r.pass));
    return rows;
}

}  // namespace
}  // namespace tinyformer

using tinyformer::Model;

PYBIND11_MODULE(tinyformer, module) {
    using namespace tinyformer;
    module.doc() = "tinyformer: a trained character model, its attention and the head experiments, as numpy arrays";

    // InputError: what the CLI exits 2 for (a bad path's contents, a bad character, a bad
    // key) is the caller's mistake: ValueError, with the same one line.
    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const InputError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const ShapeError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        }
    });

    py::class_<Model, std::shared_ptr<Model>>(module, "Model",
                                             "A trained model, loaded with tinyformer.load(path).")
        .def_property_readonly(
            "config", [](const Model& m) { return config_dict(m.loaded.config); },
            "The run's configuration, as config.toml's sections: {'model': {...}, 'train': {...}, ...}.")
        .def_property_readonly(
            "vocab",
            [](const Model& m) {
                std::vector<std::string> chars;
                for (char32_t c : m.loaded.vocab.chars()) chars.push_back(encode_utf8(c));
                return chars;
            },
            "The characters, in id order.")
        .def_property_readonly("step", [](const Model& m) { return m.loaded.step; },
                               "The optimizer step the weights belong to.")
        .def_property_readonly("path", [](const Model& m) { return m.loaded.path; },
                               "The .safetensors file that was read.")
        .def("encode", &Model::encode, py::arg("text"),
             "The ids of text's characters; ValueError names a character outside the vocabulary.")
        .def(
            "decode",
            [](const Model& m, const std::vector<int32_t>& ids) {
                for (size_t i = 0; i < ids.size(); ++i)
                    if (ids[i] < 0 || ids[i] >= m.loaded.vocab.size())
                        throw InputError("ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                                         ": expected an id in 0.." + std::to_string(m.loaded.vocab.size() - 1));
                return encode_utf8(m.loaded.vocab.decode(ids));
            },
            py::arg("ids"), "The text of a list of ids.")
        .def(
            "weights",
            [](const std::shared_ptr<Model>& m) {
                // Views of the model's own float32 parameters, read-only: no copy; each array
                // keeps the model alive.
                py::dict weights;
                py::object owner = py::cast(m);
                for (const auto& [name, value] : m->transformer().parameters().named()) {
                    std::vector<py::ssize_t> shape(value.shape().begin(), value.shape().end());
                    py::array_t<float> view(shape, value.data<float>(), owner);
                    py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
                    weights[py::str(name)] = view;
                }
                return weights;
            },
            "Every parameter by its checkpoint name, as read-only float32 numpy arrays (views, no copy).")
        .def(
            "run",
            [](Model& m, const std::string& text, const HeadList& ablate, const std::string& mode) {
                const std::vector<int32_t> ids = m.ids_of(text);
                const int64_t T = static_cast<int64_t>(ids.size()), V = m.config().vocab_size;
                py::array_t<float> logits({T, V});
                float* rows = logits.mutable_data();  // filled without the GIL: a fresh array no one else sees
                {
                    py::gil_scoped_release released;
                    const std::lock_guard<std::mutex> engine(engine_mutex);
                    m.run(ids, m.ablations(ablate, mode), mode, rows);
                }
                return logits;
            },
            py::arg("text"), py::arg("ablate") = HeadList{}, py::arg("mode") = "zero",
            "logits [T, V] of text, with the heads in `ablate` ([(layer, head), ...]) knocked out as inspect "
            "knocks them out: mode 'zero' (their output 0) or 'mean' (their mean output over the run's validation "
            "text).")
        .def(
            "run_with_cache",
            [](Model& m, const std::string& text, const HeadList& ablate, const std::string& mode,
               const py::object& names_filter) {
                const std::vector<int32_t> text_ids = m.ids_of(text);
                const Tensor ids = Tensor::ids(text_ids, {1, static_cast<int64_t>(text_ids.size())});
                const std::set<std::string> only = m.hook_names_wanted(names_filter);
                std::map<std::string, Tensor> activations;
                Tensor logits;
                {
                    py::gil_scoped_release released;
                    const std::lock_guard<std::mutex> engine(engine_mutex);
                    NoGradScope no_grad;
                    logits = m.transformer().forward(
                        ids, ForwardHooks{.ablations = m.ablations(ablate, mode), .activations = &activations,
                                          .only = names_filter.is_none() ? nullptr : &only});  // [1,T,V]
                }
                return py::make_tuple(to_numpy(logits), activations_to_numpy(activations));
            },
            py::arg("text"), py::arg("ablate") = HeadList{}, py::arg("mode") = "zero",
            py::arg("names_filter") = py::none(),
            "logits [T, V] and a dict of every activation by TransformerLens's hook name (docs/python.md): "
            "'blocks.0.attn.hook_pattern' is layer 0's attention [H, T, T], each a read-only view (.copy() one "
            "to change it). names_filter, as TransformerLens's: a name, a list of names or a function name -> bool; "
            "only those are kept, and what no kept name needs is not computed. ablate and mode as in run(); "
            "the logits are the training forward's, which differ from run()'s (the decoder's) in the last bits.")
        .def(
            "loss",
            [](Model& m, const std::string& text, const HeadList& ablate, const std::string& mode) {
                const std::vector<int32_t> ids = m.encode(text);
                if (ids.size() < 2)
                    throw InputError("text: " + std::to_string(ids.size()) +
                                     " characters, expected at least 2 (a character and the next)");
                py::gil_scoped_release released;
                const std::lock_guard<std::mutex> engine(engine_mutex);
                NoGradScope no_grad;
                return text_loss(m.transformer(), ids, ForwardHooks{.ablations = m.ablations(ablate, mode)});
            },
            py::arg("text"), py::arg("ablate") = HeadList{}, py::arg("mode") = "zero",
            "The mean cross-entropy (nats) of predicting each character of text from those before it, in the "
            "windows eval scores a text in (a text longer than the context is several windows): with ablate, "
            "inspect's ablation loss.")
        .def(
            "probes",
            [](Model& m, const std::string& path, const HeadList& ablate, const std::string& mode) {
                const std::vector<Probe> probes = load_probes(path);
                py::gil_scoped_release released;
                const std::lock_guard<std::mutex> engine(engine_mutex);
                NoGradScope no_grad;
                if (ablate.empty()) {  // eval's own scoring
                    const ProbeScore score = score_probes(m.transformer(), m.loaded.vocab, probes);
                    py::gil_scoped_acquire held;
                    return tally_dict(score.correct, score.total, score.by_kind);
                }
                const ProbeTally tally = probe_accuracy(m.transformer(), m.loaded.vocab, probes,
                                                        ForwardHooks{.ablations = m.ablations(ablate, mode)});
                py::gil_scoped_acquire held;
                return tally_dict(tally.correct, tally.total, tally.by_kind);
            },
            py::arg("path"), py::arg("ablate") = HeadList{}, py::arg("mode") = "zero",
            "Greedy answers to a prompt<TAB>answer file, as eval scores them: {'accuracy', 'correct', 'total', "
            "'by_kind'}; with ablate, inspect's ablation accuracy.")
        .def("patch", &patch_in_python, py::arg("clean"), py::arg("corrupted"), py::arg("answers") = py::none(),
             py::arg("heads") = HeadList{}, py::arg("position") = py::none(),
             "Activation patching, as inspect patches a probe and its corrupted twin: the corrupted text (as "
             "long as the clean one) runs with one head's output taken from the clean run, and the metric is "
             "logit(clean answer) - logit(corrupted answer) at the last position. answers: the two answers "
             "(their first characters count; default: each run's own prediction). heads: [(layer, head), ...] "
             "(default every head), each patched alone. position: None (every position), a position, or "
             "'each' (each position alone: a list per head). Returns {'answers', 'clean', 'corrupted', "
             "'heads', 'patched' (logit differences), 'recovered' ((patched - corrupted) / (clean - "
             "corrupted): 1, the head alone carries the answer)}. In float64, as inspect's.")
        .def(
            "sample",
            [](const Model& m, const std::string& prompt, int64_t max_new, double temperature, int64_t top_k,
               double top_p, uint64_t seed, const std::string& stop, const std::string& cache) {
                SampleOptions options;
                options.max_new = max_new;
                options.temperature = temperature;
                options.top_k = top_k;
                options.top_p = top_p;
                options.stop = decode_utf8(stop, "stop");
                if (cache != "window" && cache != "rolling")
                    throw InputError("cache: \"" + cache + "\", expected \"window\" or \"rolling\"");
                options.cache = cache == "rolling" ? KvCache::rolling : KvCache::window;
                if (options.cache == KvCache::rolling && m.config().positions != "rope")
                    throw InputError("cache=\"rolling\": the model has learned positions; expected a rope model");
                const SampleOptionNames names{.max_new = "max_new", .temperature = "temperature", .top_k = "top_k",
                                              .top_p = "top_p"};
                if (std::string problem = sample_options_problem(options, m.loaded.vocab.size(), 10'000'000, names);
                    !problem.empty())
                    throw InputError(problem);
                const std::u32string text = decode_utf8(prompt, "prompt");
                if (text.empty()) throw InputError("prompt: empty, expected at least one character to continue");
                m.loaded.vocab.encode(text, "prompt");
                std::u32string generated;
                {
                    py::gil_scoped_release released;
                    const std::lock_guard<std::mutex> engine(engine_mutex);
                    Rng rng(seed);
                    generated = generate(m.transformer(), m.loaded.vocab, text, options, rng);
                }
                return encode_utf8(generated);
            },
            py::arg("prompt") = "\n", py::arg("max_new") = 200, py::arg("temperature") = 1.0, py::arg("top_k") = 0,
            py::arg("top_p") = 1.0, py::arg("seed") = 1, py::arg("stop") = "", py::arg("cache") = "window",
            "The characters generated after prompt (without it): `tinyformer sample`'s for the same options "
            "and seed.")
        .def("__repr__", [](const Model& m) {
            const ModelConfig& c = m.config();
            return "<tinyformer.Model " + m.loaded.path + ": D=" + std::to_string(c.d_model) +
                   " H=" + std::to_string(c.n_heads) + " L=" + std::to_string(c.n_layers) +
                   " T=" + std::to_string(c.context) + " V=" + std::to_string(c.vocab_size) +
                   ", step " + std::to_string(m.loaded.step) + ">";
        });

    // As the CLI starts: oneDNN's kernels, on the CPUs this process may use.
    set_backend(make_onednn_backend());
    set_num_threads(0);
    module.def(
        "set_engine",
        [](const std::string& backend_name, int threads) {
            py::gil_scoped_release released;
            const std::lock_guard<std::mutex> engine(engine_mutex);
            if (backend_name == "onednn") set_backend(make_onednn_backend());
            else if (backend_name == "reference") set_backend(make_reference_backend());
            else throw InputError("backend: \"" + backend_name + "\", expected \"onednn\" or \"reference\"");
            if (threads < 0) throw InputError("threads: " + std::to_string(threads) + ", expected 0 (the CPUs) or more");
            set_num_threads(threads);
        },
        py::arg("backend") = "onednn", py::arg("threads") = 0,
        "The CLI's --backend and --threads: \"onednn\" (fast, the default) or \"reference\" (Eigen, for "
        "checking), on `threads` threads (0: the CPUs this process may use).");
    module.def("train", &train_in_python, py::arg("config") = "", py::arg("set") = py::dict(),
               py::arg("out") = "", py::arg("resume") = false, py::arg("force") = false,
               py::arg("on_step") = py::none(),
               "Trains as `tinyformer train` does (the same run directory, bit for bit): config is a TOML file, "
               "set a dict of overrides {'model.n_heads': 4}, out the run directory (default runs/<name>); "
               "resume=True continues the run in out. on_step(step, loss, lr) is called after every step, and "
               "on_step(step, loss, lr, val_loss) after an evaluation. Ctrl-C saves a checkpoint, then raises "
               "KeyboardInterrupt. Returns summary.json's contents.");
    module.def("gradcheck", &gradcheck_in_python,
               "`tinyformer gradcheck`'s table: every op's analytic gradient against central differences, as a "
               "list of dicts {'name', 'op', 'ops', 'elements', 'max_abs_error', 'max_rel_error', 'pass'}.");
    module.def("load", &load, py::arg("path"),
               "Loads a trained model: a run directory (its model.safetensors) or a .safetensors file. "
               "FileNotFoundError if it is missing; ValueError naming the file if it is not a tinyformer "
               "checkpoint.");
}
