// Reading a text file as characters, a block at a time, however large the file: strict
// UTF-8 (an error names the file's byte offset), a leading byte-order mark dropped, and
// line ends normalised to '\n' (CRLF and a lone CR, as Python's universal newlines read
// them, which is how scripts/torch_reference.py reads a text).
//
//   TextFileReader reader("corpus.txt");
//   std::u32string block;
//   while (reader.next_block(block)) { ... }   // up to block_bytes of the file each time
//
// Memory: one block of bytes and one of characters, never the whole file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace tinyformer {

class TextFileReader {
public:
    // Throws InputError if `path` is missing, a directory or unreadable.
    explicit TextFileReader(const std::string& path, size_t block_bytes = 1 << 20);
    ~TextFileReader();
    TextFileReader(const TextFileReader&) = delete;
    TextFileReader& operator=(const TextFileReader&) = delete;

    // The next characters into `chars` (replacing what it held); false at the end of the file.
    // Throws InputError "<path>: invalid UTF-8 at byte <offset> ...".
    bool next_block(std::u32string& chars);

    int64_t bytes_read() const { return consumed_; }  // bytes decoded so far
    int64_t file_size() const { return size_; }       // -1 for a pipe
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::FILE* file_ = nullptr;
    std::string buffer_;    // bytes read but not yet decoded (a character cut by the block's end)
    size_t block_bytes_;
    int64_t consumed_ = 0;  // file offset of buffer_[0]
    int64_t size_ = -1;
    bool at_end_ = false;
    bool after_cr_ = false; // the last character was a CR: a '\n' right after it is dropped
};

}  // namespace tinyformer
