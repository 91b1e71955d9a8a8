// Replacing a file so that a crash, a full disk or a kill never leaves half of it behind:
// write a temporary file beside it, flush it to the disk, rename it over the old one (a
// rename within one directory is atomic), then flush the directory so the rename itself
// survives a power cut.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tinyformer/checkpoint.hpp"

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

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
    const std::filesystem::path target(path);
    const std::string directory = target.has_parent_path() ? target.parent_path().string() : ".";
    std::string temporary_name = ".";  // ".model.safetensors.tmp.1234", hidden, and ours alone
    temporary_name += target.filename().string();
    temporary_name += ".tmp." + std::to_string(::getpid());
    const std::string temporary = (std::filesystem::path(directory) / temporary_name).string();

    auto give_up = [&](const std::string& what, int error) {
        ::unlink(temporary.c_str());
        fail(path, what, error);
    };

    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) give_up("cannot write", errno);
    if (!write_all(fd, bytes) || ::fsync(fd) != 0) {
        const int error = errno;
        ::close(fd);
        give_up("cannot write", error);
    }
    if (::close(fd) != 0) give_up("cannot write", errno);
    if (::rename(temporary.c_str(), path.c_str()) != 0) give_up("cannot replace", errno);
    sync_directory(directory, path);
}

}  // namespace tinyformer
