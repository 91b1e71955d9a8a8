// A model checkpoint: one safetensors file that is enough to rebuild the model — its
// weights under the contract's names, and in __metadata__ everything else (format, run
// config, vocabulary, step). See docs/model.md.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "tinyformer/data/data_paths.hpp"
#include "tinyformer/engine/build_info.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer {

namespace {

constexpr const char* checkpoint_format = "tinyformer/1";
// __metadata__.data_paths: the config's data paths are relative to the checkpoint's folder.
// Checkpoints written before it have none; their paths are relative to where `train` ran.
constexpr const char* data_paths_key = "data_paths";
constexpr const char* data_paths_relative = "relative to this file's folder";

// `vocab` metadata: ["a","b","果",...] in id order.
std::string vocab_to_json(const Vocabulary& vocab) {
    nlohmann::json chars = nlohmann::json::array();
    for (char32_t c : vocab.chars()) chars.push_back(encode_utf8(c));
    return chars.dump();
}

Vocabulary vocab_from_json(const std::string& path, const std::string& text) {
    const nlohmann::json chars = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!chars.is_array()) reject(path, "vocab is not a JSON array", "an array of one-character strings");
    std::vector<char32_t> ids;
    std::set<char32_t> seen;
    for (size_t i = 0; i < chars.size(); ++i) {
        const std::string entry = "vocab entry " + std::to_string(i);
        if (!chars[i].is_string()) reject(path, entry + " is " + chars[i].dump(), "a one-character string");
        const std::u32string decoded = decode_utf8(chars[i].get<std::string>(), path + ": " + entry);
        if (decoded.size() != 1)
            reject(path, entry + " " + chars[i].dump() + " has " + std::to_string(decoded.size()) + " characters",
                 "exactly one");
        if (!seen.insert(decoded[0]).second)
            reject(path, entry + " " + describe_char(decoded[0]) + " appears twice", "distinct characters");
        ids.push_back(decoded[0]);
    }
    return Vocabulary(std::move(ids));
}

RunConfig config_from_metadata(const std::string& path, const std::string& text) {
    const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) reject(path, "config is not a JSON object", "the run configuration as JSON");
    try {
        return config_from_json(json);
    } catch (const std::exception& e) {
        throw InputError(path + ": config: " + e.what());
    }
}

int64_t step_from_metadata(const std::string& path, const std::string& text) {
    int64_t step = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), step);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || step < 0)
        reject(path, "step \"" + text + "\"", "a non-negative integer");
    return step;
}

const std::string& required(const std::string& path, const std::map<std::string, std::string>& metadata,
                            const std::string& key) {
    auto it = metadata.find(key);
    if (it == metadata.end())
        reject(path, "__metadata__ has no " + key, "a tinyformer checkpoint (format, config, vocab and step)");
    return it->second;
}

// Numbers in the config decide how much memory the model takes; before anything is built,
// they must be no larger than the file itself could describe.
void check_config_fits_file(const std::string& path, const ModelConfig& config, const SafetensorsFile& file) {
    int64_t weights = 0;
    for (const auto& [name, tensor] : file.tensors) weights += tensor.numel();
    if (config.d_model > weights)
        reject(path, "config model.d_model " + std::to_string(config.d_model) + " but the file holds only " +
                       std::to_string(weights) + " weights",
             "a config matching the tensors");
    if (config.n_layers > static_cast<int64_t>(file.tensors.size()))
        reject(path, "config model.n_layers " + std::to_string(config.n_layers) + " but the file holds only " +
                       std::to_string(file.tensors.size()) + " tensors",
             "a config matching the tensors");
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
}

// The file's tensors are exactly the contract's for this config, with the contract's shapes.
void check_tensors_match(const std::string& path, const std::vector<ParameterSpec>& specs,
                         const std::map<std::string, Tensor>& tensors) {
    std::vector<std::string> missing, unknown;
    std::set<std::string> expected;
    for (const ParameterSpec& spec : specs) {
        expected.insert(spec.name);
        if (!tensors.count(spec.name)) missing.push_back(spec.name);
    }
    for (const auto& [name, tensor] : tensors)
        if (!expected.count(name)) unknown.push_back(name);
    if (!missing.empty() || !unknown.empty())
        reject(path,
             (missing.empty() ? "" : "missing tensors " + joined(missing)) +
                 (missing.empty() || unknown.empty() ? "" : "; ") +
                 (unknown.empty() ? "" : "unknown tensors " + joined(unknown)),
             "exactly the contract's tensors for its config");
    for (const ParameterSpec& spec : specs) {
        const Shape& shape = tensors.at(spec.name).shape();
        if (shape != spec.shape)
            reject(path, "tensor " + spec.name + " has shape " + shape_str(shape),
                 shape_str(spec.shape) + " (from its config)");
    }
}

}  // namespace

void check_finite(const std::string& path, const std::string& name, const Tensor& tensor) {
    const float* values = tensor.data<float>();
    int64_t nans = 0, infinities = 0, first = -1;
    for (int64_t i = 0; i < tensor.numel(); ++i) {
        if (std::isnan(values[i])) ++nans;
        else if (std::isinf(values[i])) ++infinities;
        else continue;
        if (first < 0) first = i;
    }
    if (nans + infinities == 0) return;
    auto count = [](int64_t n, const std::string& what) {
        return std::to_string(n) + " " + what + " value" + (n == 1 ? "" : "s");
    };
    std::string found = nans && infinities ? count(nans, "NaN") + " and " + count(infinities, "infinite")
                        : nans             ? count(nans, "NaN")
                                           : count(infinities, "infinite");
    reject(path, "tensor " + name + " has " + found + " (the first at element " + std::to_string(first) + ")",
         "finite weights");
}

RunConfig checkpoint_config(const std::string& path, const std::map<std::string, std::string>& metadata) {
    return config_from_metadata(path, required(path, metadata, "config"));
}

uint64_t metadata_integer(const std::string& path, const std::map<std::string, std::string>& metadata,
                          const std::string& key) {
    const std::string& text = required(path, metadata, key);
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
        reject(path, "__metadata__." + key + " \"" + text + "\"", "a non-negative integer");
    return value;
}

void save_model(const std::string& path, const Transformer& model, const Vocabulary& vocab, const RunConfig& config,
                int64_t step) {
    stage_model(path, model, vocab, config, step).commit();
}

StagedFile stage_model(const std::string& path, const Transformer& model, const Vocabulary& vocab,
                       const RunConfig& config, int64_t step) {
    if (vocab.size() != model.config().vocab_size)
        throw std::invalid_argument("save_model: vocabulary of " + std::to_string(vocab.size()) +
                                    " characters for a model with vocab_size " +
                                    std::to_string(model.config().vocab_size));
    if (step < 0) throw std::invalid_argument("save_model: step " + std::to_string(step) + " is negative");

    // Sorted by name, as the PyTorch reference writes them.
    NamedTensors tensors;
    for (const auto& [name, value] : model.parameters().named())
        tensors.emplace_back(name, value.dtype() == DType::f32 ? value : value.to(DType::f32));
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

    // The model section is the model's own (vocab_size resolved), whatever `config` left open.
    RunConfig resolved = config;
    resolved.model = model.config();
    resolved.data = data_paths_relative_to(config.data, std::filesystem::path(path).parent_path().string());
    nlohmann::json config_json = config_to_json(resolved);
    // train.precision came after this format: a float32 run's checkpoint leaves it out (a reader
    // takes "float32" then), so its bytes are the same as before bf16 existed; a bf16 run's says so.
    if (resolved.train.precision == "float32") config_json["train"].erase("precision");
    // train.exchange changes how, not what, the processes sum: the checkpoint names it only when set.
    if (resolved.train.exchange == "auto") config_json["train"].erase("exchange");
    const std::map<std::string, std::string> metadata = {
        {"format", checkpoint_format},
        {"config", config_json.dump()},
        {"vocab", vocab_to_json(vocab)},
        {"step", std::to_string(step)},
        {data_paths_key, data_paths_relative},
        {"made_by", build_info_json().dump()},  // tinyformer's version, oneDNN's, the compiler
    };
    return stage_safetensors(path, tensors, metadata);
}

LoadedModel load_model(const std::string& path) {
    namespace fs = std::filesystem;
    std::string file_path = path;
    if (fs::is_directory(path)) {
        file_path = (fs::path(path) / "model.safetensors").string();
        std::error_code error;
        if (!fs::exists(file_path, error))
            reject(path, "directory has no model.safetensors", "a run directory or a .safetensors file");
    }
    const SafetensorsFile file = read_safetensors(file_path);

    const std::string format = required(file_path, file.metadata, "format");
    if (format != checkpoint_format)
        reject(file_path, "format \"" + format + "\"", std::string("\"") + checkpoint_format + "\"");
    LoadedModel loaded;
    loaded.config = config_from_metadata(file_path, required(file_path, file.metadata, "config"));
    loaded.vocab = vocab_from_json(file_path, required(file_path, file.metadata, "vocab"));
    loaded.step = step_from_metadata(file_path, required(file_path, file.metadata, "step"));

    const ModelConfig& config = loaded.config.model;
    if (loaded.vocab.size() != config.vocab_size)
        reject(file_path, "vocab has " + std::to_string(loaded.vocab.size()) + " characters",
             "model.vocab_size = " + std::to_string(config.vocab_size) + " of its config");
    try {
        config.validate();
    } catch (const std::invalid_argument& e) {
        throw InputError(file_path + ": config: " + e.what());
    }
    check_config_fits_file(file_path, config, file);

    const std::map<std::string, Tensor> tensors(file.tensors.begin(), file.tensors.end());
    check_tensors_match(file_path, parameter_specs(config), tensors);
    for (const auto& [name, tensor] : tensors) check_finite(file_path, name, tensor);

    loaded.model = std::make_unique<Transformer>(config, /*seed=*/0, DType::f32);
    for (const auto& [name, parameter] : loaded.model->parameters().named()) {
        Tensor destination = parameter;
        destination.copy_from(tensors.at(name));
    }
    loaded.path = file_path;
    const fs::path parent = fs::path(file_path).parent_path();
    loaded.run_dir = parent.empty() ? "." : parent.string();
    loaded.data_as_stored = loaded.config.data;
    const auto data_paths = file.metadata.find(data_paths_key);
    if (data_paths != file.metadata.end() && data_paths->second == data_paths_relative)
        loaded.config.data = data_paths_resolved_from(loaded.config.data, loaded.run_dir);
    return loaded;
}

std::string missing_data_file(const LoadedModel& loaded, DataFiles which) {
    const auto now = data_paths(loaded.config.data), stored = data_paths(loaded.data_as_stored);
    for (size_t i = 0; i < now.size(); ++i) {
        const auto [key, path] = now[i];
        const std::string* as_stored = stored[i].second;
        std::error_code error;
        if ((which == DataFiles::probes) != (std::string_view(key) == "data.probes_path")) continue;
        if (path->empty() || std::filesystem::exists(*path, error)) continue;
        std::string message = loaded.path + ": " + key + " " + *as_stored;
        if (*as_stored != *path) message += " (from " + loaded.run_dir + ")";
        return message + ": no such file " + *path;
    }
    return "";
}

}  // namespace tinyformer
