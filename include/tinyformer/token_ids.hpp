// A text as token ids, at the narrowest width its vocabulary allows: one byte per character
// up to 256 distinct characters, two up to 65,536. The ids live either in memory or in a
// file read through a memory map (a prepared corpus, prepared_data.hpp), so a gigabyte of
// text costs a gigabyte of ids at most, and nothing resident when it is mapped.
//
//   1 GB of English (65 characters)   → 1 GB of uint8 ids   (int32 ids would be 4 GB)
//   1 GB of Chinese (~5,000 chars)    → 0.67 GB of uint16 ids (3 bytes per character in UTF-8)
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
    // `count` ids of `width` bytes at byte `offset` of the file `path`, memory-mapped read-only.
    // Throws InputError if the file cannot be opened or is shorter than offset + count·width.
    // The file is not read here: copy_to checks each id it copies against `vocab_size`, so a
    // damaged file is an error naming it, never an id past the embedding table.
    static TokenIds map_file(const std::string& path, int64_t offset, int64_t count, int width, int64_t vocab_size);

    void reserve(int64_t count);
    void push_back(int32_t id);  // in memory only

    int64_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    int width() const { return width_; }
    bool is_mapped() const { return mapping_ != nullptr; }

    int32_t operator[](int64_t i) const {
        const uint8_t* bytes = data();
        return width_ == 1 ? bytes[i] : reinterpret_cast<const uint16_t*>(bytes)[i];
    }
    // ids [from, from + count) into `out`, as int32. Throws InputError for a mapped id outside
    // the vocabulary.
    //
    // A mapped file's pages stay in the kernel's page cache, but each page read also counts
    // in this process's resident memory until it is let go, and the kernel maps more than
    // the page asked for (64 KB around it; a whole 2 MB folio of the page cache unless the
    // mapping says MADV_NOHUGEPAGE, which it does): random windows from a gigabyte would,
    // step by step, make the whole file resident (as nanoGPT's np.memmap does, which is why
    // its get_batch re-creates the memmap every batch). So every kReadsPerRelease reads the
    // process lets go of the mapping's pages (madvise MADV_DONTNEED): the page cache keeps
    // them, the next read maps them again without touching the disk, and at most
    // 256 × 64 KB = 16 MB of the corpus is resident.
    void copy_to(int64_t from, int64_t count, int32_t* out) const;
    std::vector<int32_t> slice(int64_t from, int64_t count) const;
    std::vector<int32_t> to_vector() const { return slice(0, count_); }
    bool operator==(const std::vector<int32_t>& ids) const { return to_vector() == ids; }

    // The bytes as stored: `size() * width()` of them, little-endian.
    const uint8_t* data() const;

private:
    static constexpr int64_t kReadsPerRelease = 256;
    struct Mapping;  // an mmap of a whole file, unmapped with the last TokenIds that uses it
    int width_ = 1;
    int64_t count_ = 0;
    std::vector<uint8_t> owned_;
    std::shared_ptr<const Mapping> mapping_;
    int64_t offset_ = 0;  // into the mapping
    std::string path_;    // the mapped file, for errors
    int64_t vocab_size_ = 0;
};

}  // namespace tinyformer
