// UTF-8 decoding, the vocabulary, probes and training windows.
#include "catch.hpp"
#include <filesystem>
#include <fstream>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/support/errors.hpp"

using namespace tinyformer;

TEST_CASE("UTF-8 decodes Chinese text and round-trips", "[text]") {
    const std::string bytes = "小丁拿着红色的苹果。\n";
    std::u32string text = decode_utf8(bytes, "t");
    REQUIRE(text.size() == 11);
    REQUIRE(text[0] == U'小');
    REQUIRE(text[10] == U'\n');
    REQUIRE(encode_utf8(text) == bytes);
}

TEST_CASE("invalid UTF-8 is an error at the first bad byte's offset", "[text]") {
    struct Case { std::string bytes; size_t offset; const char* why; };
    std::vector<Case> cases = {
        {"ab\xff", 2, "leading"},
        {"小\xe4\xb8", 3, "cut off"},           // a three-byte sequence missing its last byte
        {"a\xe4" "bc", 1, "continuation"},
        {"\xc0\xaf", 0, "overlong"},            // '/' encoded in two bytes
        {"ok\xed\xa0\x80", 2, "scalar"},        // a UTF-16 surrogate
        {"\xf4\x90\x80\x80", 0, "scalar"},      // past U+10FFFF
    };
    for (const Case& c : cases) {
        INFO(c.why);
        REQUIRE_THROWS_AS(decode_utf8(c.bytes, "corpus.txt"), InputError);
        REQUIRE_THROWS_WITH(decode_utf8(c.bytes, "corpus.txt"),
                            ContainsSubstring("corpus.txt") && ContainsSubstring("byte " + std::to_string(c.offset)) &&
                                ContainsSubstring(c.why));
    }
}

TEST_CASE("the vocabulary is the sorted distinct code points", "[text]") {
    Vocabulary vocab = Vocabulary::from_text(U"果苹果\n。");
    REQUIRE(vocab.size() == 4);
    REQUIRE(vocab.chars() == std::vector<char32_t>{U'\n', U'。', U'果', U'苹'});  // U+000A < U+3002 < U+679C < U+82F9
    REQUIRE(vocab.encode(U"苹果", "t") == std::vector<int32_t>{3, 2});
    REQUIRE(vocab.decode({3, 2, 0}) == U"苹果\n");
    REQUIRE_THROWS_WITH(vocab.encode(U"苹X", "prompt"),
                        ContainsSubstring("prompt") && ContainsSubstring("'X'") && ContainsSubstring("U+0058") &&
                            ContainsSubstring("character 1"));
}

TEST_CASE("the lesson corpus has exactly 79 characters and probes of both kinds", "[text]") {
    const std::string corpus = std::string(TINYFORMER_SOURCE_DIR) + "/corpus/";
    DataConfig data;
    data.train_path = corpus + "lesson_train.txt";
    data.val_path = corpus + "lesson_val.txt";
    data.probes_path = corpus + "lesson_probes.tsv";
    Corpus loaded = load_corpus(data);
    REQUIRE(loaded.vocab.size() == 79);
    REQUIRE(loaded.probes.size() >= 100);
    int who = 0, colour = 0;
    for (const Probe& p : loaded.probes) (p.kind == "who" ? who : colour) += p.kind != "other";
    REQUIRE(who > 0);
    REQUIRE(colour > 0);
    // a probe's answer is read from its own story
    for (const Probe& p : loaded.probes) REQUIRE(p.prompt.find(p.answer) != std::u32string::npos);
}

TEST_CASE("probe files must be prompt<TAB>answer", "[text]") {
    auto path = std::filesystem::temp_directory_path() / "tinyformer_bad_probes.tsv";
    std::ofstream(path) << "谁拿着苹果？\t小丁\nno tab here\n";
    REQUIRE_THROWS_WITH(load_probes(path.string()), ContainsSubstring(path.string() + ":2") && ContainsSubstring("TAB"));
    std::filesystem::remove(path);
}

TEST_CASE("training windows are T+1 consecutive ids, targets shifted by one", "[text]") {
    std::vector<int32_t> ids(100);
    for (int i = 0; i < 100; ++i) ids[i] = i;
    Rng rng(3);
    Batch batch = sample_batch(TokenIds(ids, 1), 4, 8, rng);
    REQUIRE(batch.inputs.shape() == Shape{4, 8});
    for (int b = 0; b < 4; ++b)
        for (int t = 0; t < 8; ++t) {
            REQUIRE(batch.targets.at(b * 8 + t) == batch.inputs.at(b * 8 + t) + 1);
            if (t) REQUIRE(batch.inputs.at(b * 8 + t) == batch.inputs.at(b * 8 + t - 1) + 1);
        }
    Rng same(3);
    REQUIRE(sample_batch(TokenIds(ids, 2), 4, 8, same).inputs.to_vector() == batch.inputs.to_vector());  // width 2: the same
    REQUIRE_THROWS_WITH(sample_batch(TokenIds(std::vector<int32_t>(8, 0), 1), 1, 8, rng), ContainsSubstring("context + 1"));
}

TEST_CASE("text files: a BOM is dropped, CRLF and lone CR read as LF, ids without a copy", "[text]") {
    const auto dir = std::filesystem::temp_directory_path() / "tinyformer_test_text_files";
    std::filesystem::create_directories(dir);
    auto write = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(dir / name, std::ios::binary) << bytes;
        return (dir / name).string();
    };
    REQUIRE(read_text(write("bom.txt", "\xEF\xBB\xBF小丁\n")) == U"小丁\n");
    REQUIRE(read_text(write("crlf.txt", "a\r\nb\r\n")) == U"a\nb\n");
    REQUIRE(read_text(write("cr.txt", "a\rb\r")) == U"a\nb\n");
    REQUIRE(read_text(write("mixed.txt", "\xEF\xBB\xBF" "a\r\r\nb")) == U"a\n\nb");  // CR, then CRLF
    REQUIRE(read_text(write("bom_only.txt", "\xEF\xBB\xBF")).empty());
    REQUIRE(read_text(write("inner_bom.txt", "a\xEF\xBB\xBF")) == U"a\uFEFF");  // only a leading BOM is dropped

    const Vocabulary vocab({U'\n', U'a', U'b', U'小'});
    REQUIRE(read_ids(write("ids.txt", "\xEF\xBB\xBF" "ab\r\n小"), vocab) == std::vector<int32_t>{1, 2, 0, 3});
    REQUIRE_THROWS_WITH(read_ids(write("unknown.txt", "ab\r\nX"), vocab),
                        ContainsSubstring("unknown.txt: character 'X' (U+0058) at character 3 is not in the model's "
                                        "4-character vocabulary"));
    REQUIRE_THROWS_WITH(read_ids(write("bad.txt", "ab\xff"), vocab), ContainsSubstring("bad.txt: invalid UTF-8 at byte 2"));
    REQUIRE_THROWS_WITH(read_text(dir.string()), ContainsSubstring("is a directory"));

    // One text split at 1 - val_fraction, by characters after the BOM and CRLF are gone.
    DataConfig data;
    data.path = write("split.txt", "\xEF\xBB\xBF" "abab\r\nabab\r\n");  // 10 characters: abab\nabab\n
    data.val_fraction = 0.2;
    const Corpus corpus = load_corpus(data);
    REQUIRE(corpus.vocab.chars() == std::vector<char32_t>{U'\n', U'a', U'b'});
    REQUIRE(corpus.train == std::vector<int32_t>{1, 2, 1, 2, 0, 1, 2, 1});
    REQUIRE(corpus.val == std::vector<int32_t>{2, 0});
    data.path = write("tiny.txt", "abc");
    REQUIRE_THROWS_WITH(load_corpus(data), ContainsSubstring("tiny.txt (validation part)") &&
                                               ContainsSubstring("needs at least 2 characters"));
    std::filesystem::remove_all(dir);
}
