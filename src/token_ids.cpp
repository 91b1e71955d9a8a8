#include "tinyformer/token_ids.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "tinyformer/errors.hpp"

namespace tinyformer {

int id_width(int64_t vocab_size, const std::string& source) {
    if (vocab_size <= 256) return 1;
    if (vocab_size <= 65536) return 2;
    throw InputError(source + ": " + std::to_string(vocab_size) +
                     " distinct characters, more than the 65,536 that 16-bit ids can number; expected a text with "
                     "at most 65,536 distinct characters");
}

struct TokenIds::Mapping {
    const uint8_t* bytes = nullptr;
    size_t length = 0;
    mutable std::atomic<int64_t> reads{0};  // copy_to calls, for letting go of the pages
    ~Mapping() {
        if (bytes) munmap(const_cast<uint8_t*>(bytes), length);
    }
};

TokenIds::TokenIds(int width) : width_(width) {}

TokenIds::TokenIds(const std::vector<int32_t>& ids, int width) : width_(width) {
    reserve(static_cast<int64_t>(ids.size()));
    for (int32_t id : ids) push_back(id);
}

TokenIds TokenIds::map_file(const std::string& path, int64_t offset, int64_t count, int width, int64_t vocab_size) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
    struct stat status {};
    if (fstat(fd, &status) != 0) {
        const int error = errno;
        close(fd);
        throw InputError(path + ": cannot read its size (" + std::strerror(error) + ")");
    }
    const int64_t needed = offset + count * width, size = static_cast<int64_t>(status.st_size);
    if (size < needed) {
        close(fd);
        throw InputError(path + ": " + std::to_string(size) + " bytes, expected " + std::to_string(needed) +
                         " (a header and " + std::to_string(count) + " ids of " + std::to_string(width) +
                         " bytes): the file is truncated; run tinyformer prepare again");
    }
    auto mapping = std::make_shared<Mapping>();
    mapping->length = static_cast<size_t>(size);
    void* address = mmap(nullptr, mapping->length, PROT_READ, MAP_SHARED, fd, 0);
    const int error = errno;
    close(fd);  // the mapping keeps the file
    if (address == MAP_FAILED) throw InputError(path + ": cannot memory-map (" + std::strerror(error) + ")");
    mapping->bytes = static_cast<const uint8_t*>(address);
    madvise(address, mapping->length, MADV_RANDOM);      // windows are read at random: no read-ahead
    madvise(address, mapping->length, MADV_NOHUGEPAGE);  // a read maps 64 KB at most, not a 2 MB folio

    TokenIds ids(width);
    ids.count_ = count;
    ids.mapping_ = std::move(mapping);
    ids.offset_ = offset;
    ids.path_ = path;
    ids.vocab_size_ = vocab_size;
    return ids;
}

void TokenIds::reserve(int64_t count) { owned_.reserve(static_cast<size_t>(count * width_)); }

void TokenIds::push_back(int32_t id) {
    owned_.push_back(static_cast<uint8_t>(id & 0xff));
    if (width_ == 2) owned_.push_back(static_cast<uint8_t>((id >> 8) & 0xff));
    ++count_;
}

const uint8_t* TokenIds::data() const { return mapping_ ? mapping_->bytes + offset_ : owned_.data(); }

void TokenIds::copy_to(int64_t from, int64_t count, int32_t* out) const {
    const uint8_t* bytes = data();
    if (width_ == 1)
        for (int64_t i = 0; i < count; ++i) out[i] = bytes[from + i];
    else
        for (int64_t i = 0; i < count; ++i) out[i] = reinterpret_cast<const uint16_t*>(bytes)[from + i];
    if (!mapping_) return;  // ids in memory were encoded from the vocabulary
    if (++mapping_->reads % kReadsPerRelease == 0)  // a bounded resident set: see the header
        madvise(const_cast<uint8_t*>(mapping_->bytes), mapping_->length, MADV_DONTNEED);
    for (int64_t i = 0; i < count; ++i)
        if (out[i] >= vocab_size_)
            throw InputError(path_ + ": id " + std::to_string(out[i]) + " at id " + std::to_string(from + i) +
                             " is outside the " + std::to_string(vocab_size_) +
                             "-character vocabulary: the file is damaged; run tinyformer prepare again");
}

std::vector<int32_t> TokenIds::slice(int64_t from, int64_t count) const {
    std::vector<int32_t> ids(static_cast<size_t>(count));
    copy_to(from, count, ids.data());
    return ids;
}


}  // namespace tinyformer
