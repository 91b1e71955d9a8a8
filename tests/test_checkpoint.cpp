// Checkpoints: the safetensors layout byte for byte, a model's round trip, every kind of
// malformed file refused with a one-line message naming it, and the atomic write.
#include "catch.hpp"
#include "test_helpers.hpp"
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tinyformer/data/data_paths.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"

using namespace tinyformer;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string hex(const std::string& bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char byte : bytes) {
        out += digits[byte >> 4];
        out += digits[byte & 15];
    }
    return out;
}

std::string u64_le(uint64_t value) {
    std::string out;
    for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
    return out;
}

// A safetensors file with a hand-written header, for files broken on purpose.
std::string raw_file(const std::string& header, const std::string& data) { return u64_le(header.size()) + header + data; }

std::string repeated(const std::string& text, size_t times) {
    std::string out;
    for (size_t i = 0; i < times; ++i) out += text;
    return out;
}

std::string f32_bytes(std::vector<float> values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// V=11, D=8, H=2, L=2, T=5: small enough to write out, big enough to have every kind of tensor.
RunConfig tiny_config(const std::string& positions) {
    RunConfig config;
    config.name = "tiny";
    config.model = {.vocab_size = 11, .d_model = 8, .n_heads = 2, .n_layers = 2, .context = 5, .positions = positions};
    config.train.steps = 123;
    config.optim.lr = 3e-4;
    return config;
}

// In id order, deliberately not sorted: Chinese, a newline, a space, ASCII.
Vocabulary tiny_vocab() { return Vocabulary({U'果', U'\n', U'a', U' ', U'猫', U'的', U'。', U'z', U'!', U'B', U'吃'}); }

// A model whose every weight is random (not the 0s and 1s of initialisation), plus a
// few values that only survive a bit-exact copy: -0, a denormal, the largest float.
Transformer random_model(const ModelConfig& config, uint64_t seed) {
    Transformer model(config, seed);
    Tensor values = model.parameters().values();
    Rng rng(seed);
    float* v = values.data<float>();
    for (int64_t i = 0; i < values.numel(); ++i) v[i] = static_cast<float>(rng.normal());
    v[0] = -0.0f;
    v[1] = std::numeric_limits<float>::denorm_min();
    v[2] = std::numeric_limits<float>::max();
    return model;
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           std::memcmp(a.data<float>(), b.data<float>(), static_cast<size_t>(a.numel()) * 4) == 0;
}

}  // namespace

TEST_CASE("a model survives save and load bit for bit, with its vocab, step and config", "[checkpoint]") {
    for (const std::string positions : {"rope", "learned"}) {
        DYNAMIC_SECTION("positions = " << positions) {
            testing::TempDir dir("tinyformer_test_checkpoint");
            RunConfig config = tiny_config(positions);
            config.model.vocab_size = 0;  // "from the corpus": save_model records the real size
            const Transformer model = random_model(tiny_config(positions).model, 3);
            save_model(dir.file("model.safetensors"), model, tiny_vocab(), config, 1234);

            const LoadedModel loaded = load_model(dir.path.string());  // a run directory
            REQUIRE(loaded.path == dir.file("model.safetensors"));
            REQUIRE(loaded.run_dir == dir.path.string());
            REQUIRE(loaded.step == 1234);
            REQUIRE(loaded.vocab.chars() == tiny_vocab().chars());
            RunConfig expected = config;
            expected.model = model.config();
            REQUIRE(config_to_json(loaded.config) == config_to_json(expected));
            REQUIRE(loaded.config.model.vocab_size == 11);

            const auto& saved = model.parameters().named();
            const auto& read = loaded.model->parameters().named();
            REQUIRE(read.size() == saved.size());
            for (size_t i = 0; i < saved.size(); ++i) {
                INFO(saved[i].first);
                REQUIRE(read[i].first == saved[i].first);
                REQUIRE(same_bits(read[i].second, saved[i].second));
            }
            REQUIRE(dir.entries() == std::set<std::string>{"model.safetensors"});  // no temporary left
        }
    }
}

TEST_CASE("a float64 model is saved as float32", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    const Transformer model(tiny_config("rope").model, 9, DType::f64);
    save_model(dir.file("m.safetensors"), model, tiny_vocab(), tiny_config("rope"), 0);
    const LoadedModel loaded = load_model(dir.file("m.safetensors"));
    REQUIRE(loaded.model->parameters().values().to_vector() ==
            model.parameters().values().to(DType::f32).to_vector());
}

TEST_CASE("checkpoint metadata holds format, config, vocab and step as the contract says", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    save_model(dir.file("model.safetensors"), random_model(tiny_config("rope").model, 1), tiny_vocab(),
               tiny_config("rope"), 77);
    const SafetensorsFile file = read_safetensors(dir.file("model.safetensors"));
    REQUIRE(file.metadata.at("format") == "tinyformer/1");
    REQUIRE(file.metadata.at("step") == "77");
    REQUIRE(file.metadata.at("vocab") == "[\"果\",\"\\n\",\"a\",\" \",\"猫\",\"的\",\"。\",\"z\",\"!\",\"B\",\"吃\"]");
    const nlohmann::json config = nlohmann::json::parse(file.metadata.at("config"));
    REQUIRE(config.at("model").at("d_model") == 8);
    REQUIRE(config.at("model").at("vocab_size") == 11);
    // tensors sorted by name, as the PyTorch reference writes them
    REQUIRE(file.tensors.front().first == "blocks.0.attn.k_proj.weight");
    REQUIRE(file.tensors.back().first == "tok_emb.weight");
    for (size_t i = 1; i < file.tensors.size(); ++i) REQUIRE(file.tensors[i - 1].first < file.tensors[i].first);
}

TEST_CASE("a checkpoint keeps its data paths relative to its folder, so the run travels", "[checkpoint]") {
    testing::TempDir root("tinyformer_test_checkpoint");
    const fs::path project = root.path / "project";
    fs::create_directories(project / "corpus");
    fs::create_directories(project / "runs" / "r");
    write_bytes((project / "corpus" / "t.txt").string(), "some text\n");
    write_bytes((project / "corpus" / "probes.tsv").string(), "a\tb\n");
    RunConfig config = tiny_config("rope");
    config.data.path = (project / "corpus" / "t.txt").string();
    config.data.probes_path = (project / "corpus" / "probes.tsv").string();
    // Saved through a symbolic link to the runs folder: the stored path must still lead to the file.
    fs::create_directory_symlink(project / "runs", root.path / "linked-runs");
    const std::string checkpoint = (root.path / "linked-runs" / "r" / "model.safetensors").string();
    save_model(checkpoint, random_model(config.model, 2), tiny_vocab(), config, 5);

    const SafetensorsFile file = read_safetensors(checkpoint);
    REQUIRE(file.metadata.at("data_paths") == "relative to this file's folder");
    const nlohmann::json stored = nlohmann::json::parse(file.metadata.at("config")).at("data");
    REQUIRE(stored.at("path") == "../../corpus/t.txt");
    REQUIRE(stored.at("probes_path") == "../../corpus/probes.tsv");
    REQUIRE(stored.at("val_path") == "");

    // The whole project moves: loaded through another path, the run still finds its data.
    fs::rename(project, root.path / "moved");
    const LoadedModel loaded = load_model((root.path / "moved" / "runs" / "r").string());
    REQUIRE(fs::equivalent(loaded.config.data.path, root.path / "moved" / "corpus" / "t.txt"));
    REQUIRE(loaded.data_as_stored.path == "../../corpus/t.txt");
    REQUIRE(missing_data_file(loaded, DataFiles::corpus).empty());
    REQUIRE(missing_data_file(loaded, DataFiles::probes).empty());

    // The data moves without the run: the message gives the key, the stored path and the tried one.
    fs::remove(root.path / "moved" / "corpus" / "probes.tsv");
    const std::string missing = missing_data_file(loaded, DataFiles::probes);
    REQUIRE_THAT(missing, StartsWith(loaded.path + ": data.probes_path ../../corpus/probes.tsv (from " +
                                     loaded.run_dir + "): no such file "));
    REQUIRE(missing.ends_with("moved/corpus/probes.tsv"));
    REQUIRE(missing_data_file(loaded, DataFiles::corpus).empty());  // the text is still there

    // A checkpoint written before data_paths: its paths are relative to where `train` ran, as before.
    std::map<std::string, std::string> old_metadata = file.metadata;
    old_metadata.erase("data_paths");
    old_metadata["config"] = config_to_json(tiny_config("rope")).dump();
    nlohmann::json old_config = nlohmann::json::parse(old_metadata["config"]);
    old_config["data"]["path"] = "corpus/t.txt";
    old_metadata["config"] = old_config.dump();
    const std::string old_checkpoint = (root.path / "old.safetensors").string();
    write_safetensors(old_checkpoint, file.tensors, old_metadata);
    REQUIRE(load_model(old_checkpoint).config.data.path == "corpus/t.txt");
}

TEST_CASE("a data path is stored relative unless the two share only the root", "[checkpoint]") {
    REQUIRE(path_relative_to("/home/me/project/corpus/a.txt", "/home/me/project/runs/x") == "../../corpus/a.txt");
    REQUIRE(path_relative_to("/home/me/project/runs/x/own.txt", "/home/me/project/runs/x") == "own.txt");
    REQUIRE(path_relative_to("/data/corpus.txt", "/home/me/runs/x") == "/data/corpus.txt");
    REQUIRE(path_relative_to("", "/home/me/runs/x").empty());
    REQUIRE(path_resolved_from("../../corpus/a.txt", "/home/me/project/runs/x") == "/home/me/project/corpus/a.txt");
    REQUIRE(path_resolved_from("/data/corpus.txt", "/home/me/runs/x") == "/data/corpus.txt");
}

TEST_CASE("safetensors bytes match the PyTorch reference's writer exactly", "[checkpoint]") {
    const NamedTensors tensors = {{"a", Tensor::from({1, 2}, {2})}, {"b", Tensor::from({0.5, -1, 3}, {1, 3})}};
    const std::string bytes = safetensors_bytes(tensors, {{"format", "x"}});
    // Made once with the PyTorch reference's write_safetensors, its torch and numpy calls
    // replaced by struct.pack("<%df") (the rest unchanged: json.dumps with separators=(",",
    // ":"), space padding), on {"a": [1,2] shape [2], "b": [0.5,-1,3] shape [1,3]} and
    // metadata {"format": "x"}, printed with bytes.hex(). scripts/torch_reference.py's
    // write_safetensors gives the same bytes.
    const std::string expected =
        "90000000000000007b225f5f6d657461646174615f5f223a7b22666f726d6174"
        "223a2278227d2c2261223a7b226474797065223a22463332222c227368617065"
        "223a5b325d2c22646174615f6f666673657473223a5b302c385d7d2c2262223a"
        "7b226474797065223a22463332222c227368617065223a5b312c335d2c226461"
        "74615f6f666673657473223a5b382c32305d7d7d202020200000803f00000040"
        "0000003f000080bf00004040";
    REQUIRE(hex(bytes) == expected);
    {  // write_safetensors writes the same bytes, each tensor's straight from the tensor
        testing::TempDir written("tinyformer_test_checkpoint");
        write_safetensors(written.file("ab.safetensors"), tensors, {{"format", "x"}});
        std::ifstream in(written.file("ab.safetensors"), std::ios::binary);
        REQUIRE(hex(std::string(std::istreambuf_iterator<char>(in), {})) == expected);
    }

    // Read as the format says: N = 144, 8 + N a multiple of 8, __metadata__ first, spaces last.
    const uint64_t n = static_cast<unsigned char>(bytes[0]) | static_cast<unsigned char>(bytes[1]) << 8;
    REQUIRE(n == 144);
    REQUIRE((8 + n) % 8 == 0);
    REQUIRE(bytes.size() == 8 + n + 5 * 4);
    const std::string header = bytes.substr(8, n);
    REQUIRE_THAT(header, StartsWith("{\"__metadata__\":{\"format\":\"x\"},\"a\":"));
    REQUIRE(header.substr(header.find_last_not_of(' ') + 1) == "    ");

    testing::TempDir dir("tinyformer_test_checkpoint");
    write_bytes(dir.file("ab.safetensors"), bytes);
    const SafetensorsFile file = read_safetensors(dir.file("ab.safetensors"));
    REQUIRE(file.metadata == std::map<std::string, std::string>{{"format", "x"}});
    REQUIRE(file.tensors.size() == 2);
    REQUIRE(file.tensors[0].first == "a");
    REQUIRE(file.tensors[1].first == "b");
    REQUIRE(file.tensors[1].second.shape() == Shape{1, 3});
    REQUIRE(file.tensors[1].second.to_vector() == std::vector<double>{0.5, -1, 3});
}

TEST_CASE("safetensors metadata keeps non-ASCII text as raw UTF-8", "[checkpoint]") {
    const std::string bytes = safetensors_bytes({}, {{"vocab", "[\"果\"]"}});
    REQUIRE_THAT(bytes, ContainsSubstring("果"));
    REQUIRE_THAT(bytes, !ContainsSubstring("\\u"));
    REQUIRE((bytes.size()) % 8 == 0);
}

TEST_CASE("malformed checkpoints are refused with a one-line message naming the file", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    const std::string good_path = dir.file("good.safetensors");
    save_model(good_path, random_model(tiny_config("rope").model, 2), tiny_vocab(), tiny_config("rope"), 5);
    const SafetensorsFile good = read_safetensors(good_path);

    // The good checkpoint with one thing changed, written as the project writes files.
    auto edited = [&](const std::function<void(SafetensorsFile&)>& edit) {
        SafetensorsFile file = good;
        for (auto& [name, tensor] : file.tensors) tensor = tensor.clone();
        edit(file);
        return safetensors_bytes(file.tensors, file.metadata);
    };
    auto edited_config = [&](const std::function<void(nlohmann::json&)>& edit) {
        return edited([&](SafetensorsFile& file) {
            nlohmann::json config = nlohmann::json::parse(file.metadata["config"]);
            edit(config);
            file.metadata["config"] = config.dump();
        });
    };
    auto tensor_named = [](SafetensorsFile& file, const std::string& name) -> Tensor& {
        for (auto& [n, tensor] : file.tensors)
            if (n == name) return tensor;
        throw std::logic_error("no tensor " + name);
    };
    const std::string a8 = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

    struct Case {
        std::string what;
        std::string bytes;
        std::string message;  // a fragment of the expected message
    };
    const std::vector<Case> cases = {
        {"an empty file", "", "file is 0 bytes, expected at least 8"},
        {"7 bytes", "\x01\x02\x03\x04\x05\x06\x07", "file is 7 bytes"},
        {"a header length past the end", u64_le(100) + "{}", "header length 100 runs past the end"},
        {"a header length of 2^63", u64_le(1ull << 63) + "{}", "header length 9223372036854775808 runs past"},
        {"a header that is not JSON", raw_file("{nope", ""), "header is not valid JSON"},
        {"a header that is not UTF-8", raw_file("{\"a\xff\":1}", ""), "header: invalid UTF-8 at byte 3 (0xFF)"},
        {"a header that is a JSON array", raw_file("[1,2]", ""), "header is an array, expected a JSON object"},
        {"a number too large for a double (found by fuzzing)", raw_file(R"({"a":2e308})", ""),
         "header holds a number too large for a double"},
        {"a header nested 1000 deep", raw_file(repeated("[", 1000) + repeated("]", 1000), ""), "nests deeper"},
        {"a header of a million values", raw_file("[" + repeated("0,", 1'000'000) + "0]", ""),
         "more than 1000000 JSON values"},
        {"__metadata__ not an object", raw_file(R"({"__metadata__":["x"]})", ""), "__metadata__ is an array"},
        {"__metadata__ with a number", raw_file(R"({"__metadata__":{"step":5}})", ""),
         "__metadata__.step is the number 5, expected a string"},
        {"a tensor that is not an object", raw_file(R"({"a":7})", ""), "tensor a is the number 7"},
        {"a tensor without dtype", raw_file(R"({"a":{"shape":[0],"data_offsets":[0,0]}})", ""),
         "tensor a has no dtype"},
        {"a BF16 tensor", raw_file(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", f32_bytes({1})),
         "tensor a: dtype BF16, expected F32"},
        {"shape and offsets disagreeing",
         raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32_bytes({1, 2})),
         "tensor a: shape [3] needs 12 bytes, data_offsets [0,8] hold 8"},
        {"a negative size", raw_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32_bytes({1, 2})),
         "non-negative integer sizes"},
        {"a shape overflowing 64 bits",
         raw_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})",
                  f32_bytes({1, 2})),
         "tensor a: shape [4294967296,4294967296,4] is too large"},
        {"offsets running backwards",
         raw_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", f32_bytes({1, 2})), "run backwards"},
        {"offsets past the data", raw_file("{" + a8 + "}", f32_bytes({1})), "within the 4-byte data section"},
        {"offsets that are not two numbers",
         raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", f32_bytes({1, 2})),
         "tensor a: data_offsets [0]"},
        {"overlapping tensors",
         raw_file("{" + a8 + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", f32_bytes({1, 2, 3})),
         "tensor b (bytes 4..12) overlaps tensor a"},
        {"a gap between tensors",
         raw_file("{" + a8 + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})", f32_bytes({1, 2, 3, 4})),
         "a gap of 4 bytes before tensor b"},
        {"trailing bytes after the data", raw_file("{" + a8 + "}", f32_bytes({1, 2, 3})),
         "4 bytes after the last tensor"},
        {"a tensor named twice", raw_file("{" + a8 + "," + a8 + "}", f32_bytes({1, 2})), "names \"a\" twice"},
        {"no format", edited([](SafetensorsFile& f) { f.metadata.erase("format"); }), "__metadata__ has no format"},
        {"a bad format", edited([](SafetensorsFile& f) { f.metadata["format"] = "tinyformer/2"; }),
         "format \"tinyformer/2\", expected \"tinyformer/1\""},
        {"a config that is not JSON", edited([](SafetensorsFile& f) { f.metadata["config"] = "{model"; }),
         "config is not a JSON object"},
        {"a config with an impossible head count", edited_config([](nlohmann::json& c) { c["model"]["n_heads"] = 3; }),
         "n_heads"},
        {"a config larger than the file", edited_config([](nlohmann::json& c) { c["model"]["d_model"] = 1ll << 40; }),
         "d_model"},
        {"a vocab that is not an array", edited([](SafetensorsFile& f) { f.metadata["vocab"] = "\"abc\""; }),
         "vocab is not a JSON array"},
        {"a vocab entry of two characters",
         edited([](SafetensorsFile& f) { f.metadata["vocab"] = R"(["ab","c","d","e","f","g","h","i","j","k","l"])"; }),
         "vocab entry 0 \"ab\" has 2 characters, expected exactly one"},
        {"a vocab entry that is a number",
         edited([](SafetensorsFile& f) { f.metadata["vocab"] = R"(["a",1,"d","e","f","g","h","i","j","k","l"])"; }),
         "vocab entry 1 is 1"},
        {"a duplicate vocab entry",
         edited([](SafetensorsFile& f) { f.metadata["vocab"] = R"(["a","b","c","d","e","f","g","h","i","j","果","果"])"; }),
         "vocab entry 11 '果' (U+679C) appears twice"},
        {"a vocab shorter than vocab_size",
         edited([](SafetensorsFile& f) { f.metadata["vocab"] = R"(["a","b","c","d","e","f","g","h","i","j"])"; }),
         "vocab has 10 characters, expected model.vocab_size = 11"},
        {"a negative step", edited([](SafetensorsFile& f) { f.metadata["step"] = "-3"; }),
         "step \"-3\", expected a non-negative integer"},
        {"a step that is not a number", edited([](SafetensorsFile& f) { f.metadata["step"] = "12a"; }), "step \"12a\""},
        {"a missing contract tensor",
         edited([](SafetensorsFile& f) {
             std::erase_if(f.tensors, [](const auto& t) { return t.first == "blocks.1.ln2.bias"; });
         }),
         "missing tensors blocks.1.ln2.bias, expected exactly the contract's tensors"},
        {"an unknown extra tensor",
         edited([](SafetensorsFile& f) { f.tensors.emplace_back("pos_emb.weight", Tensor::zeros({5, 8})); }),
         "unknown tensors pos_emb.weight"},
        {"a contract tensor of the wrong shape",
         edited([&](SafetensorsFile& f) { tensor_named(f, "ln_f.bias") = Tensor::zeros({9}); }),
         "tensor ln_f.bias has shape [9], expected [8]"},
        {"NaN and Inf weights",
         edited([&](SafetensorsFile& f) {
             float* w = tensor_named(f, "blocks.0.mlp.fc1.weight").data<float>();
             w[3] = std::numeric_limits<float>::quiet_NaN();
             w[7] = std::numeric_limits<float>::infinity();
             w[9] = -std::numeric_limits<float>::infinity();
         }),
         "tensor blocks.0.mlp.fc1.weight has 1 NaN value and 2 infinite values (the first at element 3)"},
    };
    REQUIRE(cases.size() >= 20);
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        DYNAMIC_SECTION(c.what) {
            const std::string path = dir.file("case" + std::to_string(i) + ".safetensors");
            write_bytes(path, c.bytes);
            try {
                load_model(path);
                FAIL("accepted " << c.what);
            } catch (const InputError& e) {
                const std::string message = e.what();
                REQUIRE_THAT(message, StartsWith(path + ": ") && ContainsSubstring(c.message));
                REQUIRE(message.find('\n') == std::string::npos);
            }
        }
    }
}

TEST_CASE("a header length beyond 100 MB is refused before it is read", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    const std::string path = dir.file("huge.safetensors");
    const uint64_t length = (100ull << 20) + 8;
    write_bytes(path, u64_le(length));
    fs::resize_file(path, 8 + length);  // sparse: costs no disk
    REQUIRE_THROWS_WITH(read_safetensors(path), StartsWith(path + ": header length 104857608 bytes") &&
                                                    ContainsSubstring("expected at most 104857600"));
}

TEST_CASE("checkpoint paths that are not files are refused", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    fs::create_directories(dir.path / "empty_run");
    REQUIRE_THROWS_AS(load_model(dir.file("empty_run")), InputError);
    REQUIRE_THROWS_WITH(load_model(dir.file("empty_run")),
                        StartsWith(dir.file("empty_run")) && ContainsSubstring("has no model.safetensors"));
    // a directory where the file should be
    fs::create_directories(dir.path / "odd_run" / "model.safetensors");
    REQUIRE_THROWS_WITH(load_model(dir.file("odd_run")), ContainsSubstring("model.safetensors: is a directory"));
    REQUIRE_THROWS_AS(read_safetensors(dir.file("odd_run")), InputError);
    REQUIRE_THROWS_WITH(read_safetensors(dir.file("odd_run")), ContainsSubstring("is a directory, expected a safetensors file"));
    REQUIRE_THROWS_AS(load_model(dir.file("nothing.safetensors")), InputError);
    REQUIRE_THROWS_WITH(load_model(dir.file("nothing.safetensors")), ContainsSubstring("nothing.safetensors: no such file"));
}

TEST_CASE("write_file_atomic replaces the whole file and leaves no temporary", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    const std::string path = dir.file("out.bin");
    write_file_atomic(path, std::string(10000, 'x'));
    write_file_atomic(path, "short");
    REQUIRE(read_file(path) == "short");
    REQUIRE(dir.entries() == std::set<std::string>{"out.bin"});
    write_file_atomic(path, "");
    REQUIRE(read_file(path).empty());
}

TEST_CASE("write_file_atomic fails cleanly, naming the path, and leaves nothing behind", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    const std::string missing = dir.file("no/such/dir/model.safetensors");
    REQUIRE_THROWS_AS(write_file_atomic(missing, "data"), std::runtime_error);
    REQUIRE_THROWS_WITH(write_file_atomic(missing, "data"),
                        StartsWith(missing + ": cannot write: No such file or directory"));
    REQUIRE(dir.entries().empty());

    // A directory in the way: the temporary file is written, the rename fails, and the
    // temporary is removed.
    fs::create_directories(dir.path / "taken");
    REQUIRE_THROWS_WITH(write_file_atomic(dir.file("taken"), "data"), StartsWith(dir.file("taken") + ": cannot"));
    REQUIRE(dir.entries() == std::set<std::string>{"taken"});
    REQUIRE(fs::is_empty(dir.path / "taken"));
}

TEST_CASE("StagedFile changes nothing until commit, and an uncommitted one leaves no temporary", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    const std::string model = dir.file("model.safetensors"), state = dir.file("train_state.safetensors");
    write_file_atomic(model, "old model");
    write_file_atomic(state, "old state");
    {
        StagedFile staged_state(state, {"new ", "state"});
        StagedFile staged_model(model, {"new model"});
        // Both are written; neither has replaced its file yet.
        REQUIRE(read_file(model) == "old model");
        REQUIRE(read_file(state) == "old state");
        REQUIRE(dir.entries().size() == 4);
        staged_model.commit();
        REQUIRE(read_file(model) == "new model");
        REQUIRE(read_file(state) == "old state");
        REQUIRE_THROWS_AS(staged_model.commit(), std::logic_error);
    }  // staged_state goes uncommitted, as when the model's write fails
    REQUIRE(read_file(state) == "old state");
    REQUIRE(dir.entries() == std::set<std::string>{"model.safetensors", "train_state.safetensors"});

    // A set whose second file cannot be written: the first, staged, is never committed.
    const std::string unwritable = dir.file("no/such/dir/model.safetensors");
    auto stage_both = [&] {
        StagedFile staged_state(state, {"newer state"});
        StagedFile staged_model(unwritable, {"newer model"});
        staged_model.commit();
        staged_state.commit();
    };
    REQUIRE_THROWS_WITH(stage_both(), StartsWith(unwritable + ": cannot write"));
    REQUIRE(read_file(state) == "old state");
    REQUIRE(dir.entries() == std::set<std::string>{"model.safetensors", "train_state.safetensors"});
}

TEST_CASE("remove_stale_temporaries removes what killed writers left, and nothing else", "[checkpoint]") {
    testing::TempDir dir("tinyformer_test_checkpoint");
    const std::string mine = ".model.safetensors.tmp." + std::to_string(::getpid());
    for (const std::string name : {".model.safetensors.tmp.99999999", ".summary.json.tmp.4194305", mine.c_str(),
                                   "model.safetensors", "notes.tmp.1", ".hidden", ".x.tmp.12ab"})
        write_bytes(dir.file(name), "x");
    remove_stale_temporaries(dir.path.string());
    REQUIRE(dir.entries() == std::set<std::string>{mine, "model.safetensors", "notes.tmp.1", ".hidden", ".x.tmp.12ab"});
    remove_stale_temporaries(dir.file("no_such_directory"));  // ignored
}
