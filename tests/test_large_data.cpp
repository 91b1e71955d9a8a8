// Large corpora (issue 16): texts read a block at a time, ids at one or two bytes, prepared
// ids read from their files, the corpus fingerprint, and evaluation on random windows.
#include "catch.hpp"

#include <filesystem>
#include <fstream>
#include <random>

#include "test_helpers.hpp"
#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/prepared_data.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/data/text_file.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"
#include "tinyformer/train/evaluate.hpp"
#include "tinyformer/train/trainer.hpp"

using namespace tinyformer;
using tinyformer::testing::TempDir;

namespace {

// Bytes with a mix of 1-, 2-, 3- and 4-byte characters, CRLF and lone CRs.
std::string mixed_text(int characters, uint32_t seed) {
    const char* pieces[] = {"a", "b", " ", "\n", "\r\n", "\r", "é", "小", "丁", "。", "\xF0\x9F\x8D\x8E" /* 🍎 */};
    std::mt19937 gen(seed);
    std::string text = "\xEF\xBB\xBF";
    for (int i = 0; i < characters; ++i) text += pieces[gen() % 11];
    return text;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// 64-bit FNV-1a byte by byte, written out plainly: what CorpusFingerprint must equal.
uint64_t fnv1a(const std::vector<uint32_t>& values) {
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (uint32_t value : values)
        for (int byte = 0; byte < 4; ++byte) {
            hash ^= (value >> (8 * byte)) & 0xff;
            hash *= 0x100000001b3ULL;
        }
    return hash;
}

}  // namespace

TEST_CASE("a text read in blocks of any size gives the characters read in one piece", "[large_data]") {
    TempDir dir("tinyformer_blocks");
    const std::string bytes = mixed_text(3000, 7);
    const std::string path = dir.write("mixed.txt", bytes);
    // The reference: the whole text decoded at once, then BOM and line ends handled.
    std::u32string whole = decode_utf8(std::string_view(bytes).substr(3), "mixed.txt"), expected;
    for (size_t i = 0; i < whole.size(); ++i) {
        if (whole[i] == U'\r') {
            expected += U'\n';
            if (i + 1 < whole.size() && whole[i + 1] == U'\n') ++i;
        } else {
            expected += whole[i];
        }
    }
    for (size_t block : {4, 5, 6, 7, 13, 64, 4096}) {
        INFO("block bytes " << block);
        TextFileReader reader(path, block);
        std::u32string read, chunk;
        while (reader.next_block(chunk)) read += chunk;
        CHECK(read == expected);
        CHECK(reader.bytes_read() == static_cast<int64_t>(bytes.size()));
    }
}

TEST_CASE("an invalid byte deep in a text is named by its offset in the file, whatever the block", "[large_data]") {
    TempDir dir("tinyformer_bad_byte");
    std::string bytes = mixed_text(20000, 3);
    size_t bad = bytes.size() - 1000;
    while ((static_cast<unsigned char>(bytes[bad]) & 0xC0) == 0x80) ++bad;  // where a character starts
    std::string broken = bytes.substr(0, bad);
    broken += '\xFF';
    broken += "tail";
    const std::string path = dir.write("deep.txt", broken);
    for (size_t block : {5, 1000, 1 << 20}) {
        TextFileReader reader(path, block);
        std::u32string chunk;
        CHECK_THROWS_WITH([&] { while (reader.next_block(chunk)) {} }(),
                          ContainsSubstring("deep.txt: invalid UTF-8 at byte " + std::to_string(bad) + " (0xFF)"));
    }
    DataConfig data;
    data.path = path;
    CHECK_THROWS_WITH(load_corpus(data), ContainsSubstring("invalid UTF-8 at byte " + std::to_string(bad)));
}

TEST_CASE("ids take one byte up to 256 characters, two up to 65,536, and no more", "[large_data]") {
    CHECK(id_width(1, "t") == 1);
    CHECK(id_width(256, "t") == 1);
    CHECK(id_width(257, "t") == 2);
    CHECK(id_width(65536, "t") == 2);
    CHECK_THROWS_WITH(id_width(65537, "big.txt"),
                      ContainsSubstring("big.txt: 65537 distinct characters, more than the 65,536"));
    const std::vector<int32_t> ids = {0, 255, 256, 65535, 7};
    const TokenIds wide(ids, 2);
    CHECK(wide.to_vector() == ids);
    CHECK(wide.slice(2, 2) == std::vector<int32_t>{256, 65535});
    const TokenIds narrow({0, 255, 3}, 1);
    CHECK(narrow[1] == 255);
    CHECK(narrow.size() == 3);

    // A text of 65,537 distinct characters is refused when it is read, naming it.
    TempDir dir("tinyformer_huge_vocab");
    std::u32string text;
    for (char32_t c = 0x20; text.size() < 65537; ++c)
        if (c < 0xD800 || c > 0xDFFF) text += c;
    DataConfig data;
    data.path = dir.write("huge.txt", encode_utf8(text + text));
    CHECK_THROWS_WITH(load_corpus(data), ContainsSubstring("huge.txt: 65537 distinct characters"));
    CHECK_THROWS_AS(load_corpus(data), InputError);
}

TEST_CASE("the corpus fingerprint is FNV-1a over 4-byte ids, computed while reading", "[large_data]") {
    TempDir dir("tinyformer_fingerprint");
    DataConfig data;
    std::u32string text;  // 300 distinct characters: ids past 255 too
    for (int i = 0; i < 3000; ++i) text += static_cast<char32_t>(0x4E00 + (i * 7919) % 300);
    data.path = dir.write("t.txt", encode_utf8(text));
    const Corpus corpus = load_corpus(data);
    REQUIRE(corpus.train.width() == 2);
    std::vector<uint32_t> values;
    for (char32_t c : corpus.vocab.chars()) values.push_back(c);
    values.push_back(0xffffffffu);
    for (int32_t id : corpus.train.to_vector()) values.push_back(static_cast<uint32_t>(id));
    values.push_back(0xffffffffu);
    for (int32_t id : corpus.val.to_vector()) values.push_back(static_cast<uint32_t>(id));
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(values)));
    CHECK(corpus.fingerprint == hex);
    CHECK(corpus_fingerprint(corpus) == hex);
    // Moving the split changes it.
    data.val_fraction = 0.2;
    CHECK(load_corpus(data).fingerprint != corpus.fingerprint);
}

TEST_CASE("prepared ids are the text's ids, read from their files, with the same fingerprint", "[large_data]") {
    TempDir dir("tinyformer_prepared");
    for (int distinct : {60, 3000}) {  // uint8 and uint16
        INFO(distinct << " distinct characters");
        std::u32string text;
        for (int i = 0; i < 20000; ++i) text += static_cast<char32_t>(0x4E00 + (i * 7919 + i / 7) % distinct);
        DataConfig data;
        data.path = dir.write("t" + std::to_string(distinct) + ".txt", encode_utf8(text));
        const Corpus from_text = load_corpus(data);
        const std::string out = dir.file("p" + std::to_string(distinct));
        const PreparedSummary summary = prepare_corpus(data, out, false);
        CHECK(summary.id_bytes == (distinct <= 256 ? 1 : 2));
        DataConfig prepared;
        prepared.prepared = out;
        const Corpus mapped = load_corpus(prepared);
        CHECK(mapped.train.in_file());
        CHECK(mapped.vocab.chars() == from_text.vocab.chars());
        CHECK(mapped.train.to_vector() == from_text.train.to_vector());
        CHECK(mapped.val.to_vector() == from_text.val.to_vector());
        CHECK(mapped.fingerprint == from_text.fingerprint);
        CHECK(corpus_description(mapped) == corpus_description(from_text));
        CHECK(static_cast<int64_t>(std::filesystem::file_size(out + "/train.bin")) ==
              kPreparedHeaderBytes + from_text.train.size() * summary.id_bytes);
    }
}

TEST_CASE("a damaged prepared directory is a one-line error naming the file", "[large_data]") {
    TempDir dir("tinyformer_prepared_bad");
    DataConfig a, b;
    a.path = dir.write("a.txt", std::string(4000, 'a') + std::string(4000, 'b'));
    b.path = dir.write("b.txt", std::string(4000, 'a') + std::string(4000, 'c'));  // another corpus, same shape
    const std::string A = dir.file("A"), B = dir.file("B");
    prepare_corpus(a, A, false);
    prepare_corpus(b, B, false);
    DataConfig prepared;
    prepared.prepared = A;
    REQUIRE_NOTHROW(load_corpus(prepared));
    const std::string train_bin = read_bytes(A + "/train.bin"), val_bin = read_bytes(A + "/val.bin");

    SECTION("truncated") {
        write_bytes(A + "/train.bin", train_bin.substr(0, train_bin.size() - 1));
        CHECK_THROWS_WITH(load_corpus(prepared), ContainsSubstring("A/train.bin: " + std::to_string(train_bin.size() - 1) +
                                                                   " bytes, expected " + std::to_string(train_bin.size())) &&
                                                     ContainsSubstring("truncated"));
    }
    SECTION("shorter than its header") {
        write_bytes(A + "/val.bin", val_bin.substr(0, 10));
        CHECK_THROWS_WITH(load_corpus(prepared), ContainsSubstring("A/val.bin: 10 bytes, shorter than the 64-byte header"));
    }
    SECTION("from another corpus") {
        std::filesystem::copy_file(B + "/val.bin", A + "/val.bin", std::filesystem::copy_options::overwrite_existing);
        CHECK_THROWS_WITH(load_corpus(prepared), ContainsSubstring("A/val.bin: has fingerprint") &&
                                                     ContainsSubstring("written for another corpus"));
    }
    SECTION("the other split's file") {
        std::filesystem::copy_file(A + "/val.bin", A + "/train.bin", std::filesystem::copy_options::overwrite_existing);
        CHECK_THROWS_WITH(load_corpus(prepared), ContainsSubstring("A/train.bin: holds the ids of \"val\""));
    }
    SECTION("not ids at all") {
        write_bytes(A + "/train.bin", std::string(100, 'x'));
        CHECK_THROWS_WITH(load_corpus(prepared), ContainsSubstring("does not start with \"TFIDS001\""));
    }
    SECTION("no meta.json") {
        std::filesystem::remove(A + "/meta.json");
        CHECK_THROWS_WITH(load_corpus(prepared), ContainsSubstring("A/meta.json: missing"));
    }
    SECTION("a bad meta.json") {
        write_bytes(A + "/meta.json", "{\"format\": \"tinyformer-prepared/1\", \"vocab\": 3}");
        CHECK_THROWS_WITH(load_corpus(prepared), ContainsSubstring("meta.json: \"vocab\" is 3, expected a list of characters"));
    }
    SECTION("an id outside the vocabulary") {
        std::string damaged = train_bin;
        damaged[kPreparedHeaderBytes + 100] = static_cast<char>(200);  // the vocabulary has 2 characters
        write_bytes(A + "/train.bin", damaged);
        const Corpus corpus = load_corpus(prepared);  // not read until used
        std::vector<int32_t> window(10);
        CHECK_NOTHROW(corpus.train.copy_to(0, 10, window.data()));
        CHECK_THROWS_WITH(corpus.train.copy_to(95, 10, window.data()),
                          ContainsSubstring("A/train.bin: id 200 at id 100 is outside the 2-character vocabulary"));
    }
    SECTION("resaved as it was, it loads") {
        write_bytes(A + "/train.bin", train_bin);
        CHECK_NOTHROW(load_corpus(prepared));
    }
}

TEST_CASE("random evaluation windows: uniform full windows from their own seed", "[large_data]") {
    const std::vector<int64_t> a = random_windows(1000, 64, 500, 42), b = random_windows(1000, 64, 500, 42);
    CHECK(a == b);
    CHECK(random_windows(1000, 64, 500, 43) != a);
    int64_t lowest = 1000, highest = -1;
    for (int64_t start : a) {
        lowest = std::min(lowest, start);
        highest = std::max(highest, start);
    }
    CHECK(lowest >= 0);
    CHECK(highest <= 1000 - 64 - 1);  // a whole window of T + 1 ids fits
    CHECK(highest > 800);             // and the draws reach near the end
    CHECK_THROWS_WITH(random_windows(64, 64, 1, 1), ContainsSubstring("64 characters, fewer than one window"));
}

TEST_CASE("train.eval_batches scores random windows without changing the training", "[large_data]") {
    TempDir dir("tinyformer_eval_batches");
    std::string text;
    std::mt19937 gen(5);
    for (int i = 0; i < 30000; ++i) text += "abcdefgh \n"[gen() % 10];
    RunConfig config;
    config.data.path = dir.write("t.txt", text);
    config.model = {0, 16, 2, 1, 16, "rope"};
    config.train.steps = 30;
    config.train.batch_size = 4;
    config.train.eval_every = 10;
    config.train.threads = 1;
    config.logging.progress_bar = false;
    auto run = [&](const std::string& name, int64_t eval_batches, const std::string& final_eval) {
        TrainOptions options;
        options.config = config;
        options.config.train.eval_batches = eval_batches;
        options.config.train.final_eval = final_eval;
        options.run_dir = dir.file(name);
        return train(options);
    };
    const nlohmann::json plain = run("plain", 0, "full");
    const nlohmann::json sampled = run("sampled", 3, "full");
    const nlohmann::json sampled_final = run("sampled_final", 3, "sampled");
    // The same weights: the evaluation windows come from a generator of their own.
    const SafetensorsFile w0 = read_safetensors(dir.file("plain/train_state.safetensors"));
    const SafetensorsFile w1 = read_safetensors(dir.file("sampled/train_state.safetensors"));
    REQUIRE(w0.tensors.size() == w1.tensors.size());
    for (size_t i = 0; i < w0.tensors.size(); ++i) {
        INFO(w0.tensors[i].first);
        CHECK(w0.tensors[i].second.to_vector() == w1.tensors[i].second.to_vector());
    }
    // A full final evaluation is the same either way; summary.json says what it was over.
    CHECK(plain["val_loss"] == sampled["val_loss"]);
    CHECK(sampled["val_eval"]["over"] == "the full validation text");
    CHECK(sampled_final["val_eval"]["over"] == "the evaluations' sampled windows");
    CHECK(sampled_final["val_eval"]["windows"] == 12);
    // The sampled final loss is score_windows over the windows drawn from the run's eval seed.
    Corpus corpus = load_corpus(config.data);
    LoadedModel loaded = load_model(dir.file("sampled_final"));
    const std::vector<int64_t> starts =
        random_windows(corpus.val.size(), 16, 12, static_cast<uint64_t>(config.train.seed) ^ 0xe7a15eedULL);
    CHECK(sampled_final["val_loss"].get<double>() == Approx(score_windows(*loaded.model, corpus.val, starts, false, 4).loss).epsilon(1e-12));
    CHECK(sampled_final["val_loss"] != sampled["val_loss"]);
}
