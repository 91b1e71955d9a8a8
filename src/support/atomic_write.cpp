// Replacing a file so that a crash, a full disk or a kill never leaves half of it behind:
// write a temporary file beside it, flush it to the disk, rename it over the old one (a
// rename within one directory is atomic), then flush the directory so the rename itself
// survives a power cut.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinyformer/support/atomic_write.hpp"

namespace tinyformer {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
    throw std::runtime_error(path + ": " + what + ": " + std::strerror(error));
}

// Writes every byte, however the kernel splits the writes.
bool write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t written = ::write(fd, bytes.data(), bytes.size());
        if (written < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        bytes.remove_prefix(static_cast<size_t>(written));
    }
    return true;
}

// fsync on the directory makes the rename durable. Some file systems cannot sync a
// directory (EINVAL); the rename has happened by then, so that alone is not a failure.
void sync_directory(const std::string& directory, const std::string& path) {
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail(path, "cannot sync its directory", errno);
    const int result = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (result != 0 && error != EINVAL) fail(path, "cannot sync its directory", error);
}

// The process that named a temporary ".model.safetensors.tmp.1234" (1234), or -1 if the
// name is not one of ours.
pid_t temporary_owner(const std::string& name) {
    const size_t mark = name.rfind(".tmp.");
    if (name.empty() || name[0] != '.' || mark == std::string::npos || mark + 5 == name.size()) return -1;
    pid_t pid = 0;
    for (size_t i = mark + 5; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9' || pid > 99'999'999) return -1;
        pid = pid * 10 + (name[i] - '0');
    }
    return pid;
}

}  // namespace

void remove_stale_temporaries(const std::string& directory) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
        const pid_t owner = temporary_owner(entry.path().filename().string());
        const bool owner_gone = owner > 0 && owner != ::getpid() && ::kill(owner, 0) != 0 && errno == ESRCH;
        if (owner_gone && entry.is_regular_file(error)) std::filesystem::remove(entry.path(), error);
    }
}

StagedFile::StagedFile(const std::string& path, const std::vector<std::string_view>& pieces) : path_(path) {
    const std::filesystem::path target(path);
    directory_ = target.has_parent_path() ? target.parent_path().string() : ".";
    std::string temporary_name = ".";  // ".model.safetensors.tmp.1234", hidden, and ours alone
    temporary_name += target.filename().string();
    temporary_name += ".tmp." + std::to_string(::getpid());
    temporary_ = (std::filesystem::path(directory_) / temporary_name).string();

    auto give_up = [&](const std::string& what, int error) {
        ::unlink(temporary_.c_str());
        fail(path_, what, error);
    };

    const int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) give_up("cannot write", errno);
    bool written = true;
    for (std::string_view piece : pieces) written = written && write_all(fd, piece);
    if (!written || ::fsync(fd) != 0) {
        const int error = errno;
        ::close(fd);
        give_up("cannot write", error);
    }
    if (::close(fd) != 0) give_up("cannot write", errno);
}

StagedFile::~StagedFile() {
    if (!temporary_.empty()) ::unlink(temporary_.c_str());  // never committed: the old file stays
}

void StagedFile::commit() {
    if (temporary_.empty()) throw std::logic_error(path_ + ": committed twice");
    const std::string temporary = std::exchange(temporary_, std::string());
    if (::rename(temporary.c_str(), path_.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        fail(path_, "cannot replace", error);
    }
    sync_directory(directory_, path_);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
    write_file_atomic(path, std::vector<std::string_view>{bytes});
}

void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces) {
    StagedFile(path, pieces).commit();
}

}  // namespace tinyformer
