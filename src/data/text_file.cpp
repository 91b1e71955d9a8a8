#include "tinyformer/data/text_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tinyformer/data/text.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

TextFileReader::TextFileReader(const std::string& path, size_t block_bytes)
    : path_(path), block_bytes_(std::max<size_t>(block_bytes, 4)) {
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (std::filesystem::is_directory(status)) throw InputError(path + ": is a directory, expected a file");
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw InputError(path + ": cannot open for reading (" + std::strerror(errno) + ")");
    if (std::filesystem::is_regular_file(status)) size_ = static_cast<int64_t>(std::filesystem::file_size(path, error));
}

TextFileReader::~TextFileReader() {
    if (file_) std::fclose(file_);
}

bool TextFileReader::next_block(std::u32string& chars) {
    chars.clear();
    while (chars.empty()) {
        if (!at_end_) {
            const size_t kept = buffer_.size();
            buffer_.resize(kept + block_bytes_);
            const size_t got = std::fread(buffer_.data() + kept, 1, block_bytes_, file_);
            buffer_.resize(kept + got);
            if (got < block_bytes_) {
                if (std::ferror(file_)) throw InputError(path_ + ": read failed at byte " + std::to_string(consumed_ + kept + got));
                at_end_ = true;
            }
        }
        if (buffer_.empty()) return false;
        size_t i = 0;
        if (consumed_ == 0 && std::string_view(buffer_).starts_with("\xEF\xBB\xBF")) i = 3;  // the byte-order mark
        // A character takes at most 4 bytes: before the end of the file, decode only those
        // that surely lie whole in the buffer, and keep the rest for the next block.
        const size_t limit = at_end_ ? buffer_.size() : buffer_.size() - 3;
        chars.reserve(limit);
        while (i < limit) {
            const unsigned char lead = static_cast<unsigned char>(buffer_[i]);
            char32_t c;
            if (lead < 0x80) {
                c = lead;
                ++i;
            } else {
                c = next_utf8_char(buffer_, i, path_, consumed_);
            }
            if (after_cr_) {
                after_cr_ = false;
                if (c == U'\n') continue;  // CRLF: already given as '\n'
            }
            if (c == U'\r') {
                after_cr_ = true;
                c = U'\n';
            }
            chars.push_back(c);
        }
        buffer_.erase(0, i);
        consumed_ += static_cast<int64_t>(i);
        if (at_end_ && buffer_.empty() && chars.empty()) return false;
    }
    return true;
}

}  // namespace tinyformer
