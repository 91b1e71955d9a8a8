// A text as token ids, at the narrowest width its vocabulary allows: one byte per character
// up to 256 distinct characters, two up to 65,536. The ids live either in memory or in a
// file that `tinyformer prepare` wrote (prepared_data.hpp), read a window at a time, so a
// gigabyte of text costs a gigabyte of ids at most, and nothing resident when it is a file.
//
//   1 GB of English (65 characters)   → 1 GB of uint8 ids   (int32 ids would be 4 GB)
//   1 GB of Chinese (~5,000 chars)    → 0.67 GB of uint16 ids (3 bytes per character in UTF-8)
//
// Why a file's windows are read with pread(2), not through a memory map: a mapped page
// counts in the process's resident memory until it is let go, and this machine's kernel
// (6.18, ext4 with large page-cache folios) maps a whole folio, up to 2 MB, for one page
// read. Random windows would make the whole gigabyte resident; letting go of it (madvise
// MADV_DONTNEED) costs 25–50 µs a window, and the training step a measured 10–20 %. pread
// copies the 65 bytes of a window out of the page cache in 2 µs and leaves nothing
// resident (docs/large-corpora.md; scripts/bench_window_reads.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tinyformer {

// Bytes per id for a vocabulary of `vocab_size` characters: 1 up to 256, 2 up to 65,536.
// Throws InputError past 65,536 (`source` names the text).
int id_width(int64_t vocab_size, const std::string& source);

class TokenIds {
public:
    TokenIds() = default;
    // Empty, in memory, `width` bytes per id, to push_back into.
    explicit TokenIds(int width);
    // A copy of `ids` in memory (each must fit `width` bytes).
    TokenIds(const std::vector<int32_t>& ids, int width);
    // `count` ids of `width` bytes at byte `offset` of the file `path`, read when asked for.
    // Throws InputError if the file cannot be opened or is shorter than offset + count·width.
    // The ids are not read here: copy_to checks each id it reads against `vocab_size`, so a
    // damaged file is an error naming it, never an id past the embedding table.
    static TokenIds open_file(const std::string& path, int64_t offset, int64_t count, int width, int64_t vocab_size);

    void reserve(int64_t count);
    void push_back(int32_t id);  // in memory only

    int64_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    int width() const { return width_; }
    bool in_file() const { return file_ != nullptr; }

    // ids [from, from + count) into `out`, as int32 (from the file: one pread). Throws
    // InputError for an id in the file outside the vocabulary, std::runtime_error if the
    // read fails.
    void copy_to(int64_t from, int64_t count, int32_t* out) const;
    std::vector<int32_t> slice(int64_t from, int64_t count) const;
    std::vector<int32_t> to_vector() const { return slice(0, count_); }
    int32_t operator[](int64_t i) const {
        int32_t id = 0;
        copy_to(i, 1, &id);
        return id;
    }
    bool operator==(const std::vector<int32_t>& ids) const { return to_vector() == ids; }

private:
    struct File;  // an open file descriptor, closed with the last TokenIds that reads it
    int width_ = 1;
    int64_t count_ = 0;
    std::vector<uint8_t> owned_;
    std::shared_ptr<const File> file_;
    int64_t offset_ = 0;  // of the first id in the file
    std::string path_;    // the file, for errors
    int64_t vocab_size_ = 0;
};

}  // namespace tinyformer
