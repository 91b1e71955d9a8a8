#include "tinyformer/data/token_ids.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tinyformer/support/errors.hpp"

namespace tinyformer {

int id_width(int64_t vocab_size, const std::string& source) {
    if (vocab_size <= 256) return 1;
    if (vocab_size <= 65536) return 2;
    throw InputError(source + ": " + std::to_string(vocab_size) +
                     " distinct characters, more than the 65,536 that 16-bit ids can number; expected a text with "
                     "at most 65,536 distinct characters");
}

struct TokenIds::File {
    int fd = -1;
    ~File() {
        if (fd >= 0) close(fd);
    }
};

TokenIds::TokenIds(int width) : width_(width) {}

TokenIds::TokenIds(const std::vector<int32_t>& ids, int width) : width_(width) {
    reserve(static_cast<int64_t>(ids.size()));
    for (int32_t id : ids) push_back(id);
}

TokenIds TokenIds::open_file(const std::string& path, int64_t offset, int64_t count, int width, int64_t vocab_size) {
    auto file = std::make_shared<File>();
    file->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file->fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
    struct stat status {};
    if (fstat(file->fd, &status) != 0) throw InputError(path + ": cannot read its size (" + std::strerror(errno) + ")");
    const int64_t needed = offset + count * width, size = static_cast<int64_t>(status.st_size);
    if (size < needed)
        throw InputError(path + ": " + std::to_string(size) + " bytes, expected " + std::to_string(needed) +
                         " (a header and " + std::to_string(count) + " ids of " + std::to_string(width) +
                         " bytes): the file is truncated; run tinyformer prepare again");
    posix_fadvise(file->fd, 0, 0, POSIX_FADV_RANDOM);  // windows are read at random: no read-ahead

    TokenIds ids(width);
    ids.count_ = count;
    ids.file_ = std::move(file);
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

// Little-endian ids of `width` bytes to int32.
static void widen(const uint8_t* bytes, int width, int64_t count, int32_t* out) {
    if (width == 1)
        for (int64_t i = 0; i < count; ++i) out[i] = bytes[i];
    else
        for (int64_t i = 0; i < count; ++i) out[i] = bytes[2 * i] | (bytes[2 * i + 1] << 8);
}

void TokenIds::copy_to(int64_t from, int64_t count, int32_t* out) const {
    if (!file_) {  // in memory: encoded from the vocabulary, nothing to check
        widen(owned_.data() + from * width_, width_, count, out);
        return;
    }
    // One read of the window's bytes out of the page cache (see the header for why not mmap).
    std::vector<uint8_t> bytes(static_cast<size_t>(count * width_));
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t got = pread(file_->fd, bytes.data() + done, bytes.size() - done,
                                  static_cast<off_t>(offset_ + from * width_ + static_cast<int64_t>(done)));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            throw std::runtime_error(path_ + ": read failed at id " + std::to_string(from) + " (" +
                                     (got < 0 ? std::strerror(errno) : "the file was cut short") + ")");
        done += static_cast<size_t>(got);
    }
    widen(bytes.data(), width_, count, out);
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
