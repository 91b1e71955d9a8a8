#include "tinyformer/explore/explorer_api.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "tinyformer/engine/rng.hpp"
#include "tinyformer/explore/explorer.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/json_number.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tinyformer {

// The windows of the validation text that mean ablation averages over, at most.
constexpr int64_t kMaxMeanWindows = 512;

ApiReply api_error(int status, const std::string& message) { return {status, json{{"error", message}}}; }

namespace {

// A request that is not what the API expects: 400, with the message and any extra fields.
struct BadRequest {
    std::string message;
    json extra = json::object();
};

// The body as a JSON object holding only `allowed` fields.
json parse_request(const std::string& body, const std::vector<std::string>& allowed) {
    if (body.size() > kMaxBodyBytes)
        throw BadRequest{"body: " + std::to_string(body.size()) + " bytes, expected at most " +
                         std::to_string(kMaxBodyBytes)};
    json request;
    try {
        request = json::parse(body);
    } catch (const json::parse_error& e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
        const std::string what = e.what();
        const size_t colon = what.find(": ");
        throw BadRequest{"body: not JSON at byte " + std::to_string(e.byte) + ": " +
                         (colon == std::string::npos ? what : what.substr(colon + 2))};
    }
    std::string expected;
    for (const std::string& name : allowed) expected += (expected.empty() ? "" : ", ") + name;
    if (!request.is_object()) throw BadRequest{"body: expected a JSON object with fields " + expected};
    for (const auto& item : request.items())
        if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
            throw BadRequest{"unknown field \"" + item.key() + "\", expected " + expected};
    return request;
}

std::string text_field(const json& request, const std::string& name, bool required, const std::string& fallback = "") {
    if (!request.contains(name)) {
        if (required) throw BadRequest{name + ": missing, expected a string"};
        return fallback;
    }
    if (!request[name].is_string()) throw BadRequest{name + ": expected a string, got " + request[name].dump()};
    return request[name].get<std::string>();
}

// An integer field (its range is the caller's to check), or `fallback` when it is absent.
int64_t integer_field(const json& request, const std::string& name, int64_t fallback) {
    if (!request.contains(name)) return fallback;
    const json& value = request[name];
    if (!value.is_number_integer()) throw BadRequest{name + ": " + value.dump() + ", expected an integer"};
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})
        throw BadRequest{name + ": " + value.dump() + ", expected an integer below 2^63"};
    return value.get<int64_t>();
}

double number_field(const json& request, const std::string& name, double fallback) {
    if (!request.contains(name)) return fallback;
    if (!request[name].is_number()) throw BadRequest{name + ": " + request[name].dump() + ", expected a number"};
    return request[name].get<double>();
}

// A text from the request, as characters of the model's vocabulary: the characters outside it
// are listed (position, character, the message `encode` gives; the first kMaxListed of them),
// the first one in "error".
constexpr size_t kMaxListed = 100;
std::vector<int32_t> encode_field(const Vocabulary& vocab, const std::u32string& text, const std::string& name) {
    json unknown = json::array();
    std::string first;
    size_t count = 0;
    for (size_t i = 0; i < text.size(); ++i)
        if (vocab.find(text[i]) < 0) {
            const std::string message = vocab.unknown_char_message(name, text[i], i);
            if (first.empty()) first = message;
            if (++count <= kMaxListed)
                unknown.push_back({{"position", i}, {"character", encode_utf8(text[i])}, {"message", message}});
        }
    if (count > 0) {
        const size_t more = count - 1;
        throw BadRequest{first + (more ? " (and " + std::to_string(more) + " more)" : ""), {{"unknown", unknown}}};
    }
    return vocab.encode(text, name);
}

std::u32string utf8_field(const std::string& bytes, const std::string& name) {
    try {
        return decode_utf8(bytes, name);
    } catch (const InputError& e) {
        throw BadRequest{e.what()};
    }
}

// One run as JSON: attention[l][h][query][position read], and top[t] = the likeliest
// characters after position t.
json run_json(const ExplorerRun& run, const Vocabulary& vocab) {
    const int64_t T = run.maps.length(), V = vocab.size();
    json attention = json::array();
    for (int64_t l = 0; l < run.maps.layers; ++l) {
        json layer = json::array();
        for (int64_t h = 0; h < run.maps.heads; ++h) {
            const float* map = run.maps.map(l, h);  // [T,T]
            json rows = json::array();
            for (int64_t i = 0; i < T; ++i) rows.push_back(json_numbers({map + i * T, static_cast<size_t>(T)}));
            layer.push_back(std::move(rows));
        }
        attention.push_back(std::move(layer));
    }
    json top = json::array();
    for (int64_t t = 0; t < T; ++t) {
        json next = json::array();
        for (const NextChar& c : top_next_chars(run.logits.data() + t * V, V, kTopNextChars))
            next.push_back({{"char", encode_utf8(vocab.at(c.id))}, {"p", c.probability}});
        top.push_back(std::move(next));
    }
    return {{"attention", std::move(attention)}, {"top", std::move(top)}};
}

json characters_json(const std::u32string& text) {
    json characters = json::array();
    for (char32_t c : text) characters.push_back(encode_utf8(c));
    return characters;
}

// Runs a handler, turning a BadRequest into 400 and anything else into 500 (a bug or an
// exhausted machine: the server goes on).
template <class Handler>
ApiReply answer(Handler&& handler) {
    try {
        return handler();
    } catch (const BadRequest& bad) {
        ApiReply reply = api_error(400, bad.message);
        reply.body.update(bad.extra);
        return reply;
    } catch (const std::exception& e) {
        spdlog::error("request failed: {}", e.what());
        return api_error(500, std::string("internal error: ") + e.what());
    }
}

}  // namespace

ExplorerApi::ExplorerApi(const std::string& checkpoint) : loaded_(load_model(checkpoint)) {
    const Transformer& model = *loaded_.model;
    const DataConfig& data = loaded_.config.data;
    const fs::path summary_path = fs::path(loaded_.run_dir) / "summary.json";
    if (fs::exists(summary_path)) {
        try {
            summary_ = json::parse(read_file(summary_path.string()));
        } catch (const std::exception& e) {
            notes_.push_back(summary_path.string() + " could not be read (" + e.what() + "): no summary");
        }
    } else {
        notes_.push_back("no " + summary_path.string() + ": no summary");
    }

    // The probes, each answered greedily by the same decoder as sampling.
    if (!data.probes_path.empty() && fs::exists(data.probes_path)) {
        probes_ = load_probes(data.probes_path);
        Decoder decoder(model);
        for (const Probe& probe : probes_) {
            loaded_.vocab.encode(probe.prompt + probe.answer, data.probes_path);
            SampleOptions greedy;
            greedy.temperature = 0;
            greedy.max_new = static_cast<int64_t>(probe.answer.size());
            Rng unused(0);
            probe_answers_.push_back(generate(decoder, loaded_.vocab, probe.prompt, greedy, unused));
        }
    } else {
        notes_.push_back(data.probes_path.empty() ? "the run has no probes"
                                                  : missing_data_file(loaded_, DataFiles::probes) + ": no probes");
    }

    // Mean ablation replaces a head's output by its mean over the validation text (its
    // first kMaxMeanWindows windows, for a large text).
    if (data.has_corpus()) {
        try {
            if (const std::string missing = missing_data_file(loaded_, DataFiles::corpus); !missing.empty())
                throw InputError(missing);
            DataConfig text_only = data;
            text_only.probes_path.clear();
            const Corpus corpus = load_corpus(text_only);
            if (corpus.vocab.chars() != loaded_.vocab.chars())
                throw InputError("its corpus no longer has the checkpoint's vocabulary");
            const int64_t kept = std::min(corpus.val.size(), kMaxMeanWindows * model.config().context + 1);
            if (kept < corpus.val.size())
                notes_.push_back("mean ablation uses the first " + std::to_string(kept) + " of the validation text's " +
                                 std::to_string(corpus.val.size()) + " characters");
            for (const Tensor& mean : mean_head_outputs(model, corpus.val.slice(0, kept))) {
                const Tensor values = mean.to(DType::f32);
                mean_outputs_.emplace_back(values.data<float>(), values.data<float>() + values.numel());
            }
        } catch (const InputError& e) {
            notes_.push_back(std::string("no validation text (") + e.what() + "): no mean ablation");
        }
    } else {
        notes_.push_back("the run has no validation text: no mean ablation");
    }
}

ApiReply ExplorerApi::model() const {
    return answer([&] {
        const ModelConfig& config = loaded_.model->config();
        json vocabulary = json::array();
        for (char32_t c : loaded_.vocab.chars()) vocabulary.push_back(encode_utf8(c));
        json probes = json::array();
        int64_t correct = 0;
        for (size_t i = 0; i < probes_.size(); ++i) {
            const bool right = probe_answers_[i] == probes_[i].answer;
            correct += right;
            probes.push_back({{"prompt", encode_utf8(probes_[i].prompt)},
                              {"answer", encode_utf8(probes_[i].answer)},
                              {"kind", probes_[i].kind},
                              {"predicted", encode_utf8(probe_answers_[i])},
                              {"correct", right}});
        }
        json body = {{"checkpoint", loaded_.path},
                     {"step", loaded_.step},
                     {"model",
                      {{"vocab_size", config.vocab_size},
                       {"d_model", config.d_model},
                       {"n_heads", config.n_heads},
                       {"head_width", config.head_width()},
                       {"n_layers", config.n_layers},
                       {"context", config.context},
                       {"positions", config.positions}}},
                     {"config", config_to_json(loaded_.config)},
                     {"vocabulary", vocabulary},
                     {"parameters", loaded_.model->parameters().count()},
                     {"summary", summary_},
                     {"probes", probes},
                     {"probes_correct", correct},
                     {"mean_ablation", !mean_outputs_.empty()},
                     {"limits", {{"body_bytes", kMaxBodyBytes}, {"max_new", kMaxSampleChars}, {"top", kTopNextChars}}},
                     {"notes", notes_}};
        return ApiReply{200, body};
    });
}

ApiReply ExplorerApi::run(const std::string& body) const {
    return answer([&] {
        const json request = parse_request(body, {"text", "ablate", "ablation"});
        const Transformer& model = *loaded_.model;
        const int64_t context = model.config().context;

        std::u32string text = utf8_field(text_field(request, "text", true), "text");
        if (text.empty()) throw BadRequest{"text: empty, expected at least one character"};
        encode_field(loaded_.vocab, text, "text");  // every unknown character, in the whole text
        json notes = json::array();
        const int64_t dropped = std::max<int64_t>(0, static_cast<int64_t>(text.size()) - context);
        if (dropped > 0) {
            notes.push_back("text has " + std::to_string(text.size()) + " characters; ran on its last " +
                            std::to_string(context) + " (the model's context)");
            text.erase(0, dropped);
        }
        const std::vector<int32_t> ids = loaded_.vocab.encode(text, "text");

        std::vector<HeadRef> ablated;
        if (request.contains("ablate")) {
            if (!request["ablate"].is_array())
                throw BadRequest{"ablate: expected an array of heads such as [\"L1H1\"], got " + request["ablate"].dump()};
            for (const json& label : request["ablate"]) {
                if (!label.is_string()) throw BadRequest{"ablate: " + label.dump() + ", expected a head such as \"L1H1\""};
                HeadRef head;
                try {
                    head = parse_head(label.get<std::string>(), model.config(), "ablate");
                } catch (const InputError& e) {
                    throw BadRequest{e.what()};
                }
                if (std::find(ablated.begin(), ablated.end(), head) == ablated.end()) ablated.push_back(head);
            }
        }
        const std::string ablation_name = text_field(request, "ablation", false, "zero");
        if (ablation_name != "zero" && ablation_name != "mean")
            throw BadRequest{"ablation: \"" + ablation_name + "\", expected \"zero\" or \"mean\""};
        const Ablation ablation = ablation_name == "mean" ? Ablation::mean : Ablation::zero;
        if (ablation == Ablation::mean && mean_outputs_.empty())
            throw BadRequest{"ablation: \"mean\" needs the run's validation text, which is not there (see /api/model's notes)"};

        json reply = {{"text", encode_utf8(text)},
                      {"characters", characters_json(text)},
                      {"dropped", dropped},
                      {"notes", notes},
                      {"layers", model.config().n_layers},
                      {"heads", model.config().n_heads}};
        reply.update(run_json(explore(model, loaded_.vocab, ids), loaded_.vocab));
        reply["ablated"] = nullptr;
        if (!ablated.empty()) {
            json names = json::array();
            for (const HeadRef& head : ablated) names.push_back(head_name(head));
            json without = run_json(explore(model, loaded_.vocab, ids, ablated, ablation, &mean_outputs_), loaded_.vocab);
            without["heads"] = names;
            without["ablation"] = ablation_name;
            reply["ablated"] = std::move(without);
        }
        return ApiReply{200, reply};
    });
}

ApiReply ExplorerApi::sample(const std::string& body) const {
    return answer([&] {
        const json request =
            parse_request(body, {"prompt", "max_new", "temperature", "top_k", "top_p", "seed", "stop"});
        const int64_t V = loaded_.vocab.size();
        const std::u32string prompt = utf8_field(text_field(request, "prompt", true), "prompt");
        if (prompt.empty()) throw BadRequest{"prompt: empty, expected at least one character to continue"};
        encode_field(loaded_.vocab, prompt, "prompt");
        SampleOptions options;  // the defaults of `tinyformer sample`
        options.max_new = integer_field(request, "max_new", options.max_new);
        options.temperature = number_field(request, "temperature", options.temperature);
        options.top_k = integer_field(request, "top_k", options.top_k);
        options.top_p = number_field(request, "top_p", options.top_p);
        const SampleOptionNames names{"max_new", "temperature", "top_k", "top_p"};
        if (std::string problem = sample_options_problem(options, V, kMaxSampleChars, names); !problem.empty())
            throw BadRequest{problem};
        uint64_t seed = 1;
        if (request.contains("seed")) {
            const json& value = request["seed"];
            if (!value.is_number_integer() || (value.is_number_integer() && !value.is_number_unsigned() &&
                                               value.get<int64_t>() < 0))
                throw BadRequest{"seed: " + value.dump() + ", expected an integer 0..18446744073709551615"};
            seed = value.get<uint64_t>();
        }
        options.stop = utf8_field(text_field(request, "stop", false), "stop");

        Rng rng(seed);  // as `tinyformer sample --seed`: one generator, drawn from in order
        const std::u32string generated = generate(*loaded_.model, loaded_.vocab, prompt, options, rng);
        json notes = json::array();
        if (static_cast<int64_t>(prompt.size()) > loaded_.model->config().context)
            notes.push_back("prompt has " + std::to_string(prompt.size()) + " characters; the model reads its last " +
                            std::to_string(loaded_.model->config().context));
        return ApiReply{200,
                        {{"prompt", encode_utf8(prompt)},
                         {"generated", encode_utf8(generated)},
                         {"text", encode_utf8(prompt + generated)},
                         {"seed", seed},
                         {"notes", notes}}};
    });
}

}  // namespace tinyformer
