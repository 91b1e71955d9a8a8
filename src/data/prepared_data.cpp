#include "tinyformer/data/prepared_data.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tinyformer/support/atomic_write.hpp"
#include "tinyformer/support/errors.hpp"

namespace fs = std::filesystem;

namespace tinyformer {
namespace {

constexpr char kMagic[8] = {'T', 'F', 'I', 'D', 'S', '0', '0', '1'};
const char* const kFormat = "tinyformer-prepared/1";

struct Header {
    uint32_t id_bytes = 0, vocab_size = 0;
    uint64_t count = 0;
    std::string fingerprint;  // 16 hex digits
    std::string split;        // "train" or "val"
};

std::string header_bytes(const Header& header) {
    std::string bytes(kPreparedHeaderBytes, '\0');
    std::memcpy(bytes.data(), kMagic, 8);
    std::memcpy(bytes.data() + 8, &header.id_bytes, 4);  // little-endian, as on every machine we build for
    std::memcpy(bytes.data() + 12, &header.vocab_size, 4);
    std::memcpy(bytes.data() + 16, &header.count, 8);
    std::memcpy(bytes.data() + 24, header.fingerprint.data(), std::min<size_t>(header.fingerprint.size(), 16));
    std::memcpy(bytes.data() + 40, header.split.data(), std::min<size_t>(header.split.size(), 8));
    return bytes;
}

Header read_header(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open for reading; run tinyformer prepare again");
    char bytes[kPreparedHeaderBytes] = {};
    in.read(bytes, kPreparedHeaderBytes);
    if (in.gcount() != kPreparedHeaderBytes)
        throw InputError(path + ": " + std::to_string(in.gcount()) + " bytes, shorter than the " +
                         std::to_string(kPreparedHeaderBytes) + "-byte header: the file is truncated");
    if (std::memcmp(bytes, kMagic, 8) != 0)
        throw InputError(path + ": does not start with \"TFIDS001\", expected ids written by tinyformer prepare");
    Header header;
    std::memcpy(&header.id_bytes, bytes + 8, 4);
    std::memcpy(&header.vocab_size, bytes + 12, 4);
    std::memcpy(&header.count, bytes + 16, 8);
    header.fingerprint.assign(bytes + 24, 16);
    header.split.assign(bytes + 40, strnlen(bytes + 40, 8));
    return header;
}

// Writes a .bin file's ids through a buffer, then its header, under a temporary name.
class IdsFileWriter {
public:
    IdsFileWriter(const std::string& path, Header header) : path_(path), header_(std::move(header)) {
        temporary_ = (fs::path(path).parent_path() / ("." + fs::path(path).filename().string() + ".tmp." +
                                                      std::to_string(getpid())))
                         .string();
        file_ = std::fopen(temporary_.c_str(), "wb");
        if (!file_) fail("cannot create");
        write(header_bytes(header_));  // rewritten with the fingerprint once it is known
    }
    ~IdsFileWriter() {
        if (file_) {  // not finished: an error on the way
            std::fclose(file_);
            std::remove(temporary_.c_str());
        }
    }
    void add(const std::vector<int32_t>& ids) {
        bytes_.clear();
        for (int32_t id : ids) {
            bytes_.push_back(static_cast<char>(id & 0xff));
            if (header_.id_bytes == 2) bytes_.push_back(static_cast<char>((id >> 8) & 0xff));
        }
        write(bytes_);
        count_ += static_cast<uint64_t>(ids.size());
    }
    void finish(const std::string& fingerprint) {
        header_.fingerprint = fingerprint;
        if (count_ != header_.count)
            throw std::runtime_error(path_ + ": wrote " + std::to_string(count_) + " ids, expected " +
                                     std::to_string(header_.count) + " (did the text change while it was read?)");
        if (std::fseek(file_, 0, SEEK_SET) != 0) fail("cannot seek");
        write(header_bytes(header_));
        if (std::fflush(file_) != 0 || fsync(fileno(file_)) != 0) fail("cannot write");
        if (std::fclose(file_) != 0) {
            file_ = nullptr;
            fail("cannot write");
        }
        file_ = nullptr;
        if (std::rename(temporary_.c_str(), path_.c_str()) != 0) fail("cannot rename into place");
    }

private:
    void write(const std::string& bytes) {
        if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) fail("cannot write");
    }
    [[noreturn]] void fail(const char* what) {
        throw std::runtime_error(path_ + ": " + what + " (" + std::strerror(errno) + ")");
    }
    std::string path_, temporary_;
    Header header_;
    std::FILE* file_ = nullptr;
    std::string bytes_;
    uint64_t count_ = 0;
};

// meta.json's value at `key`, of the type `T`; an error names the file and the key.
template <class T>
T meta_value(const nlohmann::json& meta, const std::string& key, const std::string& meta_path, const char* expected) {
    const nlohmann::json* value = &meta;
    size_t from = 0;
    while (from <= key.size()) {  // "train.ids" walks into "train"
        const size_t dot = std::min(key.find('.', from), key.size());
        const std::string part = key.substr(from, dot - from);
        if (!value->is_object() || !value->contains(part)) throw InputError(meta_path + ": no \"" + key + "\", expected " + expected);
        value = &(*value)[part];
        from = dot + 1;
    }
    try {
        return value->get<T>();
    } catch (const nlohmann::json::exception&) {
        throw InputError(meta_path + ": \"" + key + "\" is " + value->dump() + ", expected " + expected);
    }
}

}  // namespace

PreparedSummary prepare_corpus(const DataConfig& data, const std::string& dir, bool progress_bar) {
    const CorpusScan scan = scan_corpus(data, progress_bar);
    std::error_code error;
    fs::create_directories(dir, error);
    if (error) throw InputError(dir + ": cannot create the directory: " + error.message());
    const std::string meta_path = (fs::path(dir) / "meta.json").string();
    fs::remove(meta_path, error);  // until the new files are all in place, DIR does not load

    const uint32_t id_bytes = static_cast<uint32_t>(scan.id_bytes), vocab_size = static_cast<uint32_t>(scan.vocab.size());
    IdsFileWriter train((fs::path(dir) / "train.bin").string(),
                        Header{id_bytes, vocab_size, static_cast<uint64_t>(scan.train_chars), "", "train"});
    IdsFileWriter val((fs::path(dir) / "val.bin").string(),
                      Header{id_bytes, vocab_size, static_cast<uint64_t>(scan.val_chars), "", "val"});
    const std::string fingerprint =
        encode_corpus(data, scan, progress_bar, [&](bool is_validation, const std::vector<int32_t>& ids) {
            (is_validation ? val : train).add(ids);
        });
    train.finish(fingerprint);
    val.finish(fingerprint);

    PreparedSummary summary;
    for (const std::string& path : {data.path, data.train_path, data.val_path})
        if (!path.empty()) summary.text_bytes += static_cast<int64_t>(fs::file_size(path, error));
    summary.train_ids = scan.train_chars;
    summary.val_ids = scan.val_chars;
    summary.vocab_size = scan.vocab.size();
    summary.id_bytes = scan.id_bytes;
    summary.fingerprint = fingerprint;

    nlohmann::json vocab = nlohmann::json::array();
    for (char32_t c : scan.vocab.chars()) vocab.push_back(encode_utf8(c));
    nlohmann::json source = {{"bytes", summary.text_bytes}};
    if (!data.path.empty()) {
        source["path"] = fs::absolute(data.path).lexically_normal().string();
        source["val_fraction"] = data.val_fraction;
    } else {
        source["train_path"] = fs::absolute(data.train_path).lexically_normal().string();
        source["val_path"] = fs::absolute(data.val_path).lexically_normal().string();
    }
    const nlohmann::json meta = {
        {"format", kFormat},
        {"vocab", vocab},
        {"id_bytes", scan.id_bytes},
        {"dtype", scan.id_bytes == 1 ? "uint8" : "uint16"},
        {"header_bytes", kPreparedHeaderBytes},
        {"train", {{"file", "train.bin"}, {"ids", scan.train_chars}}},
        {"val", {{"file", "val.bin"}, {"ids", scan.val_chars}}},
        {"fingerprint", fingerprint},
        {"source", source},
    };
    write_file_atomic(meta_path, meta.dump(1) + "\n");
    return summary;
}

Corpus load_prepared(const std::string& dir) {
    const std::string meta_path = (fs::path(dir) / "meta.json").string();
    std::error_code error;
    if (!fs::is_directory(dir, error))
        throw InputError(dir + ": no such directory, expected the output of tinyformer prepare (data.prepared)");
    if (!fs::exists(meta_path, error))
        throw InputError(meta_path + ": missing, expected the output of tinyformer prepare (was it stopped?)");
    const nlohmann::json meta = nlohmann::json::parse(read_file(meta_path), nullptr, false);
    if (meta.is_discarded() || !meta.is_object()) throw InputError(meta_path + ": not a JSON object, expected tinyformer prepare's meta.json");
    const std::string format = meta_value<std::string>(meta, "format", meta_path, "\"tinyformer-prepared/1\"");
    if (format != kFormat) throw InputError(meta_path + ": format \"" + format + "\", expected \"" + kFormat + "\"");

    std::vector<char32_t> chars;
    for (const std::string& text : meta_value<std::vector<std::string>>(meta, "vocab", meta_path, "a list of characters")) {
        const std::u32string c = decode_utf8(text, meta_path + " vocab");
        if (c.size() != 1) throw InputError(meta_path + ": vocab entry \"" + text + "\" is not one character");
        chars.push_back(c[0]);
    }
    Corpus corpus;
    try {
        corpus.vocab = Vocabulary(std::move(chars));
    } catch (const InputError& e) {
        throw InputError(meta_path + ": " + e.what());
    }
    if (corpus.vocab.size() < 1) throw InputError(meta_path + ": an empty vocab, expected at least one character");
    const int id_bytes = meta_value<int>(meta, "id_bytes", meta_path, "1 or 2");
    if (id_bytes != id_width(corpus.vocab.size(), meta_path))
        throw InputError(meta_path + ": id_bytes " + std::to_string(id_bytes) + " for a vocabulary of " +
                         std::to_string(corpus.vocab.size()) + ", expected " +
                         std::to_string(id_width(corpus.vocab.size(), meta_path)));
    corpus.fingerprint = meta_value<std::string>(meta, "fingerprint", meta_path, "16 hex digits");

    auto load_split = [&](const std::string& split) {
        const std::string file = meta_value<std::string>(meta, split + ".file", meta_path, "a file name");
        const int64_t count = meta_value<int64_t>(meta, split + ".ids", meta_path, "a number of ids");
        if (file.empty() || file.find('/') != std::string::npos)
            throw InputError(meta_path + ": \"" + split + ".file\" is \"" + file + "\", expected a file name in " + dir);
        const std::string path = (fs::path(dir) / file).string();
        if (!fs::exists(path, error)) throw InputError(path + ": missing; run tinyformer prepare again");
        const Header header = read_header(path);
        auto mismatch = [&](const std::string& what, const std::string& in_file, const std::string& in_meta) {
            throw InputError(path + ": " + what + " " + in_file + ", but meta.json says " + in_meta +
                             ": the file was written for another corpus; run tinyformer prepare again");
        };
        if (header.split != split) mismatch("holds the ids of", "\"" + header.split + "\"", "\"" + split + "\"");
        if (header.fingerprint != corpus.fingerprint) mismatch("has fingerprint", header.fingerprint, corpus.fingerprint);
        if (header.vocab_size != static_cast<uint64_t>(corpus.vocab.size()))
            mismatch("has a vocabulary of", std::to_string(header.vocab_size), std::to_string(corpus.vocab.size()));
        if (header.id_bytes != static_cast<uint32_t>(id_bytes))
            mismatch("has ids of", std::to_string(header.id_bytes) + " bytes", std::to_string(id_bytes));
        if (header.count != static_cast<uint64_t>(count))
            mismatch("holds", std::to_string(header.count) + " ids", std::to_string(count));
        const int64_t expected = kPreparedHeaderBytes + count * id_bytes;
        const int64_t size = static_cast<int64_t>(fs::file_size(path, error));
        if (size != expected)
            throw InputError(path + ": " + std::to_string(size) + " bytes, expected " + std::to_string(expected) +
                             " (the header and " + std::to_string(count) + " ids of " + std::to_string(id_bytes) +
                             " bytes): the file is " + (size < expected ? "truncated" : "longer than written") +
                             "; run tinyformer prepare again");
        if (count < 2) throw InputError(path + ": " + std::to_string(count) + " ids, expected at least 2");
        return TokenIds::open_file(path, kPreparedHeaderBytes, count, id_bytes, corpus.vocab.size());
    };
    corpus.train = load_split("train");
    corpus.val = load_split("val");
    corpus.train_name = (fs::path(dir) / "train.bin").string();
    corpus.val_name = (fs::path(dir) / "val.bin").string();
    return corpus;
}

}  // namespace tinyformer
