// tinyformer inspect: the attention it captures is a causal attention map, the role scores
// follow TransformerLens's definitions, answer sources and ablations measure what they say,
// the files it writes are byte-exact (.npy, safetensors) or well-formed (SVG, HTML: checked
// with xmllint, a real XML parser), and the terminal view keeps CJK columns aligned.
#include "catch.hpp"
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_helpers.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/inspect/heatmap.hpp"
#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/inspect/inspect_report.hpp"
#include "tinyformer/inspect/npy.hpp"
#include "tinyformer/model/sampler.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"
#include "tinyformer/train/config.hpp"
#include "tinyformer/train/evaluate.hpp"

using namespace tinyformer;
namespace fs = std::filesystem;

namespace {

using tinyformer::testing::kSource;
const std::u32string kStory = U"小丁拿着红色的苹果。谁拿着苹果？小丁。";
const std::u32string kVocabText = U"小丁拿着红色的苹果。谁拿？阿芳蓝";

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

// A scratch file of its own, removed at the end of the test.
struct ScratchFile {
    std::string path;
    explicit ScratchFile(const std::string& name) {
        static int count = 0;
        path = (fs::temp_directory_path() / ("tinyformer_test_inspect_" + std::to_string(::getpid()) + "_" +
                                             std::to_string(count++) + "_" + name))
                   .string();
    }
    ~ScratchFile() { std::remove(path.c_str()); }
    void write(const std::string& bytes) const {
        std::ofstream out(path, std::ios::binary);
        out << bytes;
    }
};

// xmllint (Debian's libxml2-utils) parses the file as XML: 0 = well-formed.
int xmllint(const std::string& document) {
    ScratchFile file("doc.xml");
    file.write(document);
    return std::system(("xmllint --noout --nonet '" + file.path + "' 2>/dev/null").c_str());
}

// A small untrained model: its attention is not meaningful, but it is a real model's attention.
Transformer small_model(int64_t n_heads = 2, int64_t n_layers = 2, int64_t context = 24) {
    ModelConfig config;
    config.vocab_size = Vocabulary::from_text(kVocabText).size();
    config.d_model = 16;
    config.n_heads = n_heads;
    config.n_layers = n_layers;
    config.context = context;
    return Transformer(config, 11);
}

// Display columns of a UTF-8 line, by display_width.
int columns(const std::string& line) {
    int width = 0;
    for (char32_t c : decode_utf8(line, "line")) width += display_width(c);
    return width;
}

}  // namespace

// ---- byte-exact files ----

TEST_CASE("the .npy writer's bytes equal NumPy's np.save", "[inspect][npy]") {
    // tests/data/known_good*.npy were written once by NumPy 1.24 (Debian 12):
    //   np.save("known_good.npy", np.array([[0, .5, -1.25], [1e-8, 3, np.float32(1/3)]], np.float32))
    //   np.save("known_good_4d.npy", (np.arange(48, dtype=np.float32) / 7).reshape(12, 1, 2, 2))
    const std::vector<float> small = {0.0f, 0.5f, -1.25f, 1e-8f, 3.0f, 1.0f / 3.0f};
    const std::string bytes = npy_bytes(small, {2, 3});
    REQUIRE(bytes == file_bytes(kSource + "/tests/data/known_good.npy"));

    std::vector<float> counting(48);
    for (int i = 0; i < 48; ++i) counting[i] = static_cast<float>(i) / 7.0f;
    REQUIRE(npy_bytes(counting, {12, 1, 2, 2}) == file_bytes(kSource + "/tests/data/known_good_4d.npy"));
    // A header long enough that NumPy's room for the first axis to grow pushes the data from
    // byte 128 to byte 192:
    //   np.save("known_good_long_header.npy", (np.arange(6, dtype=np.float32) - 2.5).reshape((3,) + (1,) * 13 + (2,)))
    Shape long_shape(15, 1);
    long_shape.front() = 3, long_shape.back() = 2;
    const std::string long_header = npy_bytes({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f}, long_shape);
    REQUIRE(long_header == file_bytes(kSource + "/tests/data/known_good_long_header.npy"));
    REQUIRE(long_header.size() == 192 + 6 * 4);

    // The layout itself: magic, version 1.0, a header that ends in "\n" at a multiple of 64.
    REQUIRE(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    const size_t header_length = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    REQUIRE((10 + header_length) % 64 == 0);
    REQUIRE(bytes[10 + header_length - 1] == '\n');
    REQUIRE(bytes.size() == 10 + header_length + 6 * 4);
    REQUIRE_THROWS_AS(npy_bytes(small, {4, 2}), std::invalid_argument);
}

TEST_CASE("the safetensors writer's bytes equal the reference writer's file", "[inspect][safetensors]") {
    // tests/data/known_good.safetensors was written once by the PyTorch reference's
    // write_safetensors (PyTorch 1.13, Debian 12; scripts/torch_reference.py's, PyTorch 2.6,
    // writes the same bytes) from
    //   {"b.weight": [[0.5, -1, 3]], "a": [1, 2], "c": [[[0.25]]]}, meta {"format": "tinyformer/1", "step": "7"}
    // (it writes the tensors sorted by name, as we are given them here).
    const NamedTensors tensors = {{"a", Tensor::from({1, 2}, {2})},
                                  {"b.weight", Tensor::from({0.5, -1, 3}, {1, 3})},
                                  {"c", Tensor::from({0.25}, {1, 1, 1})}};
    const std::string bytes = safetensors_bytes(tensors, {{"format", "tinyformer/1"}, {"step", "7"}});
    REQUIRE(bytes == file_bytes(kSource + "/tests/data/known_good.safetensors"));
}

// ---- attention capture ----

TEST_CASE("captured attention: rows sum to 1, the future is exactly 0, nothing is NaN", "[inspect]") {
    const Transformer model = small_model();
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const AttentionMaps maps = capture_attention(model, vocab, kStory, "--text");
    const int64_t T = static_cast<int64_t>(kStory.size());
    REQUIRE(maps.layers == 2);
    REQUIRE(maps.heads == 2);
    REQUIRE(maps.length() == T);
    REQUIRE(static_cast<int64_t>(maps.weights.size()) == 2 * 2 * T * T);
    for (int64_t l = 0; l < 2; ++l)
        for (int64_t h = 0; h < 2; ++h) {
            const float* a = maps.map(l, h);
            for (int64_t i = 0; i < T; ++i) {
                double sum = 0;
                for (int64_t j = 0; j < T; ++j) {
                    REQUIRE(std::isfinite(a[i * T + j]));
                    if (j > i) REQUIRE(a[i * T + j] == 0.0f);
                    sum += a[i * T + j];
                }
                REQUIRE(sum == Approx(1.0).margin(1e-5));
            }
        }
    REQUIRE(check_attention(maps).empty());

    // The maps are the model's own: layer 1 head 1 as forward() returns it.
    std::vector<Tensor> forward_maps;
    {
        NoGradScope no_grad;
        model.forward(Tensor::ids(vocab.encode(kStory, "test"), {1, T}), &forward_maps);
    }
    const std::vector<double> expected = forward_maps[1].to_vector();  // [1,H,T,T]
    for (int64_t k = 0; k < T * T; ++k) REQUIRE(maps.map(1, 1)[k] == static_cast<float>(expected[T * T + k]));
}

TEST_CASE("check_attention catches a map that reads the future, is not normalised or holds NaN", "[inspect]") {
    const AttentionMaps good = capture_attention(small_model(), Vocabulary::from_text(kVocabText), kStory, "--text");
    const int64_t T = good.length();
    AttentionMaps future = good;
    future.weights[(1 * good.heads + 0) * T * T + 2 * T + 5] = 1e-7f;  // layer 1 head 0, row 2 reads column 5
    REQUIRE_THAT(check_attention(future), ContainsSubstring("layer 1 head 0 row 2 column 5") && ContainsSubstring("future"));
    AttentionMaps unnormalised = good;
    unnormalised.weights[3 * T + 0] += 0.01f;  // layer 0 head 0 row 3
    REQUIRE_THAT(check_attention(unnormalised), ContainsSubstring("row 3 sums to"));
    AttentionMaps nan = good;
    nan.weights[T * T + 0] = std::numeric_limits<float>::quiet_NaN();  // layer 0 head 1 row 0
    REQUIRE_THAT(check_attention(nan), ContainsSubstring("not finite"));
}

TEST_CASE("capture refuses text outside the vocabulary or longer than the context, naming it", "[inspect]") {
    const Transformer model = small_model(2, 2, 8);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    REQUIRE_THROWS_WITH(capture_attention(model, vocab, U"小丁X", "--text"),
                        ContainsSubstring("--text") && ContainsSubstring("'X' (U+0058)") && ContainsSubstring("vocabulary"));
    REQUIRE_THROWS_AS(capture_attention(model, vocab, kStory, "--text"), InputError);  // 19 > 8
    REQUIRE_THROWS_AS(capture_attention(model, vocab, U"", "--text"), InputError);
}

// ---- role scores ----

TEST_CASE("role scores follow TransformerLens's detection patterns", "[inspect][roles]") {
    // Tokens a b c a b c: the duplicate pattern marks (3,0) (4,1) (5,2); induction shifts it
    // one column right: (3,1) (4,2) (5,3).
    const std::vector<int32_t> ids = {0, 1, 2, 0, 1, 2};
    const int64_t T = 6;
    auto pattern = [&](auto reads) {  // a causal map where row i puts all its weight on column reads(i)
        std::vector<float> a(T * T, 0.0f);
        for (int64_t i = 0; i < T; ++i) a[i * T + reads(i)] = 1.0f;
        return a;
    };
    const auto previous = pattern([](int64_t i) { return i > 0 ? i - 1 : 0; });
    HeadRoles r = role_scores(previous.data(), ids);
    REQUIRE(r.previous == Approx(5.0 / 6));  // row 0 can only read itself
    REQUIRE(r.self == Approx(1.0 / 6));
    REQUIRE(r.first == Approx(2.0 / 6));     // rows 0 and 1 read column 0
    REQUIRE(r.duplicate == Approx(0.0));
    REQUIRE(r.distance == Approx(5.0 / 6));
    REQUIRE(r.entropy == Approx(0.0));

    const auto duplicate = pattern([](int64_t i) { return i >= 3 ? i - 3 : i; });
    r = role_scores(duplicate.data(), ids);
    REQUIRE(r.duplicate == Approx(3.0 / 6));
    REQUIRE(r.self == Approx(3.0 / 6));
    REQUIRE(r.induction == Approx(0.0));
    REQUIRE(r.distance == Approx(9.0 / 6));

    const auto induction = pattern([](int64_t i) { return i >= 3 ? i - 2 : i; });
    r = role_scores(induction.data(), ids);
    REQUIRE(r.induction == Approx(3.0 / 6));
    REQUIRE(r.duplicate == Approx(0.0));
    REQUIRE(r.previous == Approx(0.0));

    // Uniform causal attention: row i gives 1/(i+1) to each of 0..i; entropy ln(i+1).
    std::vector<float> uniform(T * T, 0.0f);
    double entropy = 0, first = 0;
    for (int64_t i = 0; i < T; ++i) {
        for (int64_t j = 0; j <= i; ++j) uniform[i * T + j] = 1.0f / static_cast<float>(i + 1);
        entropy += std::log(static_cast<double>(i + 1)) / T;
        first += 1.0 / static_cast<double>(i + 1) / T;
    }
    r = role_scores(uniform.data(), ids);
    REQUIRE(r.entropy == Approx(entropy).epsilon(1e-6));
    REQUIRE(r.first == Approx(first).epsilon(1e-6));
    REQUIRE(r.self == Approx(first).epsilon(1e-6));  // 1/(i+1) on itself too
}

TEST_CASE("text_head_roles averages over the text's windows, and each score is a share", "[inspect][roles]") {
    const Transformer model = small_model(2, 2, 8);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const std::vector<int32_t> ids = vocab.encode(kStory + kStory, "test");  // 38 characters: windows 8,8,8,8,5
    const std::vector<HeadRoles> roles = text_head_roles(model, ids);
    REQUIRE(roles.size() == 4);
    for (const HeadRoles& r : roles) {
        for (double share : {r.previous, r.self, r.first, r.duplicate, r.induction}) {
            REQUIRE(share >= 0.0);
            REQUIRE(share <= 1.0 + 1e-9);
        }
        REQUIRE(r.distance >= 0.0);
        REQUIRE(r.distance <= 7.0);
    }
    // The first window alone, by hand.
    const AttentionMaps first = capture_attention(model, vocab, kStory.substr(0, 8), "window");
    const std::vector<int32_t> first_ids(ids.begin(), ids.begin() + 8);
    double self_sum = role_scores(first.map(1, 0), first_ids).self;
    for (int64_t start : {8, 16, 24, 32}) {
        const int64_t length = std::min<int64_t>(8, 37 - start);
        const AttentionMaps window = capture_attention(model, vocab, (kStory + kStory).substr(start, length), "window");
        self_sum += role_scores(window.map(1, 0), std::vector<int32_t>(ids.begin() + start, ids.begin() + start + length)).self;
    }
    REQUIRE(roles[1 * 2 + 0].self == Approx(self_sum / 5));
}

// ---- answer sources ----

TEST_CASE("answer sources read the attention at the position that predicts each answer character", "[inspect]") {
    const Transformer model = small_model();
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const std::vector<Probe> probes = {{U"小丁拿着红色的苹果。谁拿着苹果？", U"小丁", "who"},
                                       {U"阿芳拿着蓝色的苹果。谁拿着苹果？", U"阿芳", "who"},
                                       {U"小丁拿着红色的苹果。苹果？", U"红色", "colour"}};
    const auto sources = answer_sources(model, vocab, probes);
    REQUIRE(sources.size() == 4);
    // By hand, layer 1 head 0, the who-probes: 小 is predicted at ？ (position 15) and 丁 at
    // the answer's 小 (16); the story holds 小 at 0 and 丁 at 1 (阿 and 芳 likewise).
    const AttentionMaps maps = capture_attention(model, vocab, probes[0].prompt + probes[0].answer, "probe");
    const int64_t T = maps.length();
    const float* a = maps.map(1, 0);
    const double xiao = a[15 * T + 0], ding = a[16 * T + 1];
    const AttentionMaps maps2 = capture_attention(model, vocab, probes[1].prompt + probes[1].answer, "probe");
    const float* b = maps2.map(1, 0);
    const double a_share = b[15 * T + 0], fang = b[16 * T + 1];
    // The answer's place in the story is positions 0–1 in both: span shares add both columns.
    const double span0 = (a[15 * T + 0] + a[15 * T + 1] + b[15 * T + 0] + b[15 * T + 1]) / 2;
    const double span1 = (a[16 * T + 0] + a[16 * T + 1] + b[16 * T + 0] + b[16 * T + 1]) / 2;
    const AnswerSource& who = sources[2].at("who");
    REQUIRE(who.probes == 2);
    REQUIRE(who.by_answer_char.size() == 2);
    REQUIRE(who.by_answer_char[0] == Approx((xiao + a_share) / 2).margin(1e-6));
    REQUIRE(who.by_answer_char[1] == Approx((ding + fang) / 2).margin(1e-6));
    REQUIRE(who.share == Approx((xiao + a_share + ding + fang) / 4).margin(1e-6));
    REQUIRE(who.stated == 2);
    REQUIRE(who.span_by_answer_char[0] == Approx(span0).margin(1e-6));
    REQUIRE(who.span_by_answer_char[1] == Approx(span1).margin(1e-6));
    REQUIRE(who.span_share == Approx((span0 + span1) / 2).margin(1e-6));
    // The colour probe: 红色 stands at positions 4–5 of its prompt (13 characters).
    const AttentionMaps maps3 = capture_attention(model, vocab, probes[2].prompt + probes[2].answer, "probe");
    const int64_t T3 = maps3.length();
    const float* c = maps3.map(1, 0);
    const AnswerSource& colour = sources[2].at("colour");
    REQUIRE(colour.probes == 1);
    REQUIRE(colour.span_by_answer_char[0] == Approx(c[12 * T3 + 4] + c[12 * T3 + 5]).margin(1e-6));
    REQUIRE(colour.by_answer_char[1] == Approx(c[13 * T3 + 5]).margin(1e-6));  // 色 only at 5
}

// ---- ablation ----

TEST_CASE("zeroing a head equals removing its columns of out_proj, and mean ablation puts a vector in its place",
          "[inspect][ablation]") {
    Transformer model = small_model();
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const int64_t T = static_cast<int64_t>(kStory.size()), d = model.config().head_width();
    const Tensor ids = Tensor::ids(vocab.encode(kStory, "test"), {1, T});
    NoGradScope no_grad;
    const std::vector<double> plain = model.forward(ids).to_vector();
    const std::vector<double> zeroed = model.forward(ids, ForwardHooks{.ablations = {{.layer = 1, .head = 1}}}).to_vector();
    REQUIRE(zeroed != plain);

    // The same model with layer 1's out_proj columns for head 1 (features d..2d-1) set to 0.
    Transformer cut = small_model();
    Tensor out_proj = cut.parameters().get("blocks.1.attn.out_proj.weight");  // [D,D] = [out,in]
    const int64_t D = out_proj.dim(0);
    for (int64_t row = 0; row < D; ++row)
        for (int64_t col = d; col < 2 * d; ++col) out_proj.data<float>()[row * D + col] = 0.0f;
    const std::vector<double> removed = cut.forward(ids).to_vector();
    REQUIRE(zeroed.size() == removed.size());
    for (size_t i = 0; i < zeroed.size(); ++i) REQUIRE(zeroed[i] == Approx(removed[i]).margin(1e-5));

    // A zero replacement is zero ablation; another vector changes the result; the layer
    // before is untouched (its attention maps are the same).
    const Tensor zeros = Tensor::zeros({d});
    const std::vector<double> with_zeros =
        model.forward(ids, ForwardHooks{.ablations = {{.layer = 1, .head = 1, .with = zeros}}}).to_vector();
    REQUIRE(with_zeros == zeroed);
    std::vector<Tensor> maps_plain, maps_ablated;
    model.forward(ids, &maps_plain);
    const std::vector<double> with_mean =
        model
            .forward(ids, ForwardHooks{.attention_maps = &maps_ablated,
                                       .ablations = {{.layer = 1, .head = 1, .with = Tensor::full({d}, 0.5)}}})
            .to_vector();
    REQUIRE(with_mean != zeroed);
    REQUIRE(maps_ablated[0].to_vector() == maps_plain[0].to_vector());
    REQUIRE_THROWS(model.forward(ids, ForwardHooks{.ablations = {{.layer = 0, .head = 2}}}));
    REQUIRE_THROWS(model.forward(ids, ForwardHooks{.ablations = {{.layer = 2, .head = 0}}}));

    // Several heads at once, in two layers: the same as cutting each one's columns of out_proj.
    Transformer cut_both = small_model();
    for (const auto& [layer, head] : {std::pair<int, int64_t>{0, 0}, {1, 1}}) {
        Tensor w = cut_both.parameters().get("blocks." + std::to_string(layer) + ".attn.out_proj.weight");
        for (int64_t row = 0; row < D; ++row)
            for (int64_t col = head * d; col < (head + 1) * d; ++col) w.data<float>()[row * D + col] = 0.0f;
    }
    const std::vector<double> both =
        model.forward(ids, ForwardHooks{.ablations = {{.layer = 0, .head = 0}, {.layer = 1, .head = 1}}}).to_vector();
    const std::vector<double> both_removed = cut_both.forward(ids).to_vector();
    REQUIRE(both != zeroed);
    for (size_t i = 0; i < both.size(); ++i) REQUIRE(both[i] == Approx(both_removed[i]).margin(1e-5));
}

TEST_CASE("without ablation, text_loss and probe_accuracy are eval's numbers", "[inspect][ablation]") {
    const Transformer model = small_model(2, 2, 8);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const std::vector<int32_t> ids = vocab.encode(kStory + kStory + U"阿芳", "test");
    REQUIRE(text_loss(model, ids) == Approx(score_text(model, TokenIds(ids, 1)).loss).epsilon(1e-9));

    // Probes whose answers are the model's own greedy continuations are all correct; a
    // changed answer is not — in both scorers.
    SampleOptions greedy;
    greedy.temperature = 0;
    greedy.max_new = 2;
    Rng rng(0);
    std::vector<Probe> probes;
    for (const std::u32string prompt : {U"小丁拿着", U"阿芳拿着蓝", U"谁拿", U"小"})
        probes.push_back({prompt, generate(model, vocab, prompt, greedy, rng), "who"});
    probes.push_back({U"红色的", generate(model, vocab, U"红色的", greedy, rng), "colour"});
    probes.push_back({U"苹果", generate(model, vocab, U"苹果", greedy, rng), "colour"});
    probes.back().answer[1] = probes.back().answer[1] == U'丁' ? U'小' : U'丁';  // now wrong
    const ProbeScore reference = score_probes(model, vocab, probes);
    const ProbeTally ours = probe_accuracy(model, vocab, probes);
    REQUIRE(ours.total == 6);
    REQUIRE(ours.correct == 5);
    REQUIRE(ours.correct == reference.correct);
    REQUIRE(ours.accuracy("who") == 1.0);
    REQUIRE(ours.accuracy("colour") == 0.5);
}

TEST_CASE("mean_head_outputs averages each head's output over every position of the text", "[inspect][ablation]") {
    const Transformer model = small_model(2, 1, 24);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const std::vector<int32_t> ids = vocab.encode(kStory, "test");  // one window: inputs ids[0..18)
    const std::vector<Tensor> means = mean_head_outputs(model, ids);
    REQUIRE(means.size() == 2);
    // By hand, from the per-position outputs the forward pass hands back (one window of 18).
    NoGradScope no_grad;
    std::vector<Tensor> outputs;
    const int64_t T = 18, d = 8;
    model.forward(Tensor::ids(std::vector<int32_t>(ids.begin(), ids.begin() + T), {1, T}),
                  ForwardHooks{.head_outputs = &outputs});
    const std::vector<double> heads = outputs[0].to_vector();  // [1,2,T,d]
    for (int64_t i = 0; i < d; ++i) {
        double sum = 0;
        for (int64_t t = 0; t < T; ++t) sum += heads[(1 * T + t) * d + i];
        REQUIRE(means[1].at(i) == Approx(sum / T).margin(1e-6));
    }
}

// ---- findings ----

TEST_CASE("a head's sentence states only what its numbers support", "[inspect][findings]") {
    InspectResult result;
    result.has_text = result.has_probes = true;
    result.val_loss = 0.44;
    result.probes.by_kind = {{"colour", {99, 100}}, {"who", {98, 100}}};
    HeadReport head;
    head.layer = 1, head.head = 0;
    head.roles.duplicate = 0.55;
    head.roles.previous = 0.2;
    head.answer_source["who"].span_share = 0.7;
    head.answer_source["who"].share = 0.25;
    head.answer_source["colour"].span_share = 0.1;
    head.zeroed.val_loss = head.mean_replaced.val_loss = 0.9;
    head.zeroed.probes.by_kind = head.mean_replaced.probes.by_kind = {{"colour", {97, 100}}, {"who", {20, 100}}};
    std::string s = describe_head(head, result);
    REQUIRE_THAT(s, ContainsSubstring("L1H0") && ContainsSubstring("0.55") && ContainsSubstring("earlier copies of the query's character"));
    REQUIRE_THAT(s, ContainsSubstring("it reads the name") && ContainsSubstring("story: colour 0.10, who 0.70") &&
                        ContainsSubstring("characters: colour 0.00, who 0.25"));
    REQUIRE_THAT(s, ContainsSubstring("the who answers need it") && ContainsSubstring("who 98 % → 20 %"));

    // Weak or shared numbers: no label.
    head.roles.duplicate = 0.3;
    head.answer_source["who"].span_share = 0.35;
    head.answer_source["colour"].span_share = 0.3;
    head.mean_replaced.probes.by_kind = {{"colour", {97, 100}}, {"who", {95, 100}}};
    s = describe_head(head, result);
    REQUIRE_THAT(s, ContainsSubstring("follows no single pattern"));
    REQUIRE_THAT(s, ContainsSubstring("reads no answer more than another"));
    REQUIRE_THAT(s, ContainsSubstring("no answer kind needs it"));
}

// ---- pictures and pages ----

TEST_CASE("heatmap SVG: well-formed, one tooltip per readable cell, the future grey, Chinese labels", "[inspect][svg]") {
    const AttentionMaps maps = capture_attention(small_model(), Vocabulary::from_text(kVocabText), kStory, "--text");
    const int64_t T = maps.length();
    const std::string svg = attention_heatmap_svg(maps.text, maps.map(0, 1), "L0H1: <layer 0> & head 1");
    REQUIRE(xmllint(svg) == 0);
    REQUIRE_THAT(svg, ContainsSubstring("Noto Sans CJK SC") && ContainsSubstring("Microsoft YaHei") && ContainsSubstring(">果<"));
    REQUIRE_THAT(svg, ContainsSubstring("L0H1: &lt;layer 0&gt; &amp; head 1"));
    size_t tooltips = 0, future = 0;
    for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) ++tooltips;
    for (size_t at = svg.find("#d4d4d4"); at != std::string::npos; at = svg.find("#d4d4d4", at + 1)) ++future;
    REQUIRE(static_cast<int64_t>(tooltips) == T * (T + 1) / 2 + (T - 1));  // each readable cell + each future strip
    REQUIRE(static_cast<int64_t>(future) == T - 1);
    REQUIRE_THAT(svg, ContainsSubstring("<title>18 。 reads 0 小: "));
    // One scale for every head: the same weight, the same colour; 0 light, 1 dark.
    REQUIRE(attention_colour(0.0) == "#f7fbff");
    REQUIRE(attention_colour(1.0) == "#08306b");

    // The checker itself rejects what is not XML.
    REQUIRE(xmllint("<svg><rect></svg>") != 0);
    REQUIRE(xmllint(svg.substr(0, svg.size() - 8)) != 0);
}

TEST_CASE("report.html is well-formed, self-contained, with every head and the numbers", "[inspect][html]") {
    const Transformer model = small_model(2, 2, 24);
    const Vocabulary vocab = Vocabulary::from_text(kVocabText);
    const AttentionMaps maps = capture_attention(model, vocab, kStory, "--text");
    const std::vector<Probe> probes = {{U"小丁拿着红色的苹果。谁拿着苹果？", U"小丁", "who"},
                                       {U"小丁拿着红色的苹果。苹果？", U"红色", "colour"}};
    const InspectResult result = inspect_heads(model, vocab, vocab.encode(kStory + kStory, "test"), probes);
    REQUIRE(result.heads.size() == 4);
    ReportContext context;
    context.checkpoint = "runs/x/model.safetensors";
    context.model = model.config();
    context.maps_source = "--text";
    context.text_name = "val <&> text";
    context.probes_name = "probes.tsv";
    context.loss_svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>loss</text></svg>";
    const std::string html = report_html(maps, result, context);
    REQUIRE(xmllint(html) == 0);
    for (const char* head : {"L0H0", "L0H1", "L1H0", "L1H1"}) REQUIRE_THAT(html, ContainsSubstring(std::string(head) + ": layer"));
    REQUIRE_THAT(html, ContainsSubstring("<meta charset=\"utf-8\"/>") && ContainsSubstring("小丁拿着红色的苹果"));
    REQUIRE_THAT(html, ContainsSubstring("val &lt;&amp;&gt; text") && ContainsSubstring("<text>loss</text>"));
    REQUIRE_THAT(html, ContainsSubstring("Reading patterns") && ContainsSubstring("Probe readout") && ContainsSubstring("Ablation"));
    REQUIRE_THAT(html, !ContainsSubstring("<script") && !ContainsSubstring("src=") && !ContainsSubstring("href=") && !ContainsSubstring("@import"));
    REQUIRE(xmllint(html.substr(0, html.find("</table>")) + html.substr(html.find("</table>") + 8)) != 0);

    const nlohmann::json heads = heads_json(result, context);
    REQUIRE(heads["heads"].size() == 4);
    for (const char* kind : {"who", "colour"}) {
        REQUIRE(heads["by_kind"][kind]["heads"].size() == 4);
        for (const auto& [name, numbers] : heads["by_kind"][kind]["heads"].items()) {
            REQUIRE(numbers["answer_source"].get<double>() >= 0.0);
            REQUIRE(numbers["answer_source"].get<double>() <= 1.0);
            REQUIRE(numbers.contains("zero_ablation_accuracy_delta"));
            REQUIRE(numbers.contains("mean_ablation_accuracy_delta"));
        }
    }
    const auto& h = heads["heads"][3];
    REQUIRE(h["ablation"]["zero"]["val_loss_delta"].get<double>() ==
            Approx(h["ablation"]["zero"]["val_loss"].get<double>() - result.val_loss));
    REQUIRE(h["finding"].get<std::string>() == result.heads[3].finding);
    REQUIRE(heads["definitions"].size() == measure_definitions().size());

    const nlohmann::json attention = attention_json(maps, "--text");
    REQUIRE(attention["characters"][0] == "小");
    REQUIRE(attention["code_points"][0] == 0x5C0F);
    REQUIRE(attention["shape"] == nlohmann::json({2, 2, 19, 19}));
    REQUIRE(attention["weights"][1][0][4][2].get<double>() == Approx(maps.map(1, 0)[4 * 19 + 2]));
    REQUIRE(attention["weights"][1][0][4][5].get<double>() == 0.0);
}

TEST_CASE("terminal view: the top three reads per character, and a grid whose columns line up", "[inspect][terminal]") {
    REQUIRE(display_width(U'果') == 2);
    REQUIRE(display_width(U'。') == 2);
    REQUIRE(display_width(U'？') == 2);
    REQUIRE(display_width(U'a') == 1);
    AttentionMaps maps;
    maps.text = U"苹果a。";
    maps.layers = maps.heads = 1;
    maps.weights = {1.0f,  0,     0,     0,      // 苹
                    0.9f,  0.1f,  0,     0,      // 果
                    0.2f,  0.7f,  0.1f,  0,      // a
                    0.81f, 0.12f, 0.04f, 0.03f};  // 。
    const std::string view = terminal_view(maps);
    REQUIRE_THAT(view, ContainsSubstring("。 → 苹(0) 0.81, 果(1) 0.12, a(2) 0.04\n"));
    REQUIRE_THAT(view, ContainsSubstring("a  → 果(1) 0.70, 苹(0) 0.20, a(2) 0.10\n"));
    // Every grid row (and the header) is 5 + 2 T columns wide, whatever its label.
    std::istringstream lines(view);
    std::string line;
    int grid_rows = 0;
    bool in_grid = false;
    while (std::getline(lines, line)) {
        if (line.rfind("     苹", 0) == 0) in_grid = true;
        if (in_grid && line.rfind("     shades", 0) == 0) break;
        if (in_grid) {
            REQUIRE(columns(line) == 5 + 2 * 4);
            ++grid_rows;
        }
    }
    REQUIRE(grid_rows == 1 + 4);
    REQUIRE_THAT(view, ContainsSubstring("   苹██      \n") && ContainsSubstring("   果██░░    \n") && ContainsSubstring("   。██░░ . .\n"));
}

TEST_CASE("characters of three and four UTF-8 bytes label the terminal view and the attention map whole",
          "[inspect][terminal][svg]") {
    // 丂 (U+4E02), ㄅ (U+3105), and two of CJK extension B, four bytes of UTF-8 each.
    const std::string ext0 = encode_utf8(U'\U00020000'), ext1 = encode_utf8(U'\U00020031');
    REQUIRE(ext0.size() == 4);
    AttentionMaps maps;
    maps.text = U"丂\U00020000ㄅ\U00020031";
    maps.layers = maps.heads = 1;
    maps.weights = {1.0f, 0,    0,    0,      // 丂
                    0.3f, 0.7f, 0,    0,      // ext0
                    0.1f, 0.6f, 0.3f, 0,      // ㄅ
                    0.1f, 0.2f, 0.3f, 0.4f};  // ext1
    REQUIRE(display_width(U'\U00020000') == 2);
    const std::string view = terminal_view(maps);
    check_utf8(view, "terminal view");  // no character cut in the middle
    REQUIRE_THAT(view, ContainsSubstring("  1 " + ext0 + " → " + ext0 + "(1) 0.70, 丂(0) 0.30\n"));
    REQUIRE_THAT(view, ContainsSubstring("  3 " + ext1 + " → " + ext1 + "(3) 0.40, ㄅ(2) 0.30, " + ext0 + "(1) 0.20\n"));
    REQUIRE_THAT(view, ContainsSubstring("     丂" + ext0 + "ㄅ" + ext1 + "\n"));  // the grid's header, two columns each
    const std::string svg = attention_heatmap_svg(maps.text, maps.map(0, 0), "four bytes");
    REQUIRE(xmllint(svg) == 0);
    REQUIRE_THAT(svg, ContainsSubstring(">" + ext1 + "</text>") &&
                          ContainsSubstring("<title>3 " + ext1 + " reads 1 " + ext0 + ": "));
}

// ---- one head, two, four ----

TEST_CASE("the 1-head and 4-head lesson configs differ from lesson12 only in how D is split", "[inspect][config]") {
    const RunConfig two = load_config(kSource + "/configs/lesson12.toml");
    for (const auto& [file, heads] : {std::pair{"lesson12_1head", 1}, std::pair{"lesson12_4heads", 4}}) {
        RunConfig c = load_config(kSource + "/configs/" + file + ".toml");
        REQUIRE(c.name == file);
        REQUIRE(c.model.n_heads == heads);
        REQUIRE(c.model.d_model == 64);
        c.model.vocab_size = 79;
        ModelConfig lesson = two.model;
        lesson.vocab_size = 79;
        int64_t count = 0, lesson_count = 0;
        for (const ParameterSpec& spec : parameter_specs(c.model)) count += numel_of(spec.shape);
        for (const ParameterSpec& spec : parameter_specs(lesson)) lesson_count += numel_of(spec.shape);
        REQUIRE(count == 109696);
        REQUIRE(count == lesson_count);
        // Everything else as lesson12 has it.
        c.name = two.name, c.model.n_heads = two.model.n_heads, c.model.vocab_size = two.model.vocab_size;
        REQUIRE(config_to_json(c) == config_to_json(two));
    }
}
