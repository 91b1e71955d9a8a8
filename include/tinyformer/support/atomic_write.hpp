// Replacing files so that a crash, a full disk or a kill never leaves half of one behind.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tinyformer {

// Writes `bytes` to `path` so that `path` is always either the old file or the whole new
// one: temporary file in the same directory, write, fsync, rename, fsync the directory.
// Throws std::runtime_error naming the path (disk full, unwritable directory, ...).
void write_file_atomic(const std::string& path, std::string_view bytes);
// The same, for a file made of several pieces written one after the other (a large file's
// parts straight from where they live, never copied into one string first).
void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces);
// write_file_atomic in two halves, for files that must change together. The constructor
// writes and flushes the temporary (and throws, leaving `path` untouched, if it cannot);
// commit() renames it over `path` and flushes the directory. A StagedFile destroyed
// uncommitted removes its temporary. Write every file of a set first, then commit them:
// a full disk then changes none of them.
class StagedFile {
public:
    StagedFile(const std::string& path, const std::vector<std::string_view>& pieces);
    StagedFile(StagedFile&& other) noexcept
        : path_(std::move(other.path_)), directory_(std::move(other.directory_)),
          temporary_(std::exchange(other.temporary_, std::string())) {}
    StagedFile(const StagedFile&) = delete;
    StagedFile& operator=(const StagedFile&) = delete;
    StagedFile& operator=(StagedFile&&) = delete;
    ~StagedFile();
    void commit();

private:
    std::string path_;       // the file to replace
    std::string directory_;  // its directory, flushed after the rename
    std::string temporary_;  // ".<name>.tmp.<pid>" beside it; empty once committed
};
// Removes the temporaries that killed writers left in `directory` (".<name>.tmp.<pid>" whose
// process is gone); the files they were replacing are intact. Errors are ignored.
void remove_stale_temporaries(const std::string& directory);

}  // namespace tinyformer
