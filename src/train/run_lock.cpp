// The run directory's lock (see run_lock.hpp).
#include "tinyformer/train/run_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "tinyformer/support/errors.hpp"

namespace tinyformer {

namespace {

// The whole file, for writing: the lock every `train` of this directory asks for.
struct flock whole_file_write_lock() {
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;  // to the end of the file, however long
    return lock;
}

}  // namespace

RunDirectoryLock::RunDirectoryLock(const std::string& run_dir) {
    const std::string path = (std::filesystem::path(run_dir) / ".lock").string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw InputError(path + ": cannot open the run directory's lock file: " + std::strerror(errno) +
                         " (the run directory must be writable)");
    struct flock lock = whole_file_write_lock();
    if (::fcntl(fd_, F_SETLK, &lock) == 0) {
        // The pid in the file is for people (`cat .lock`); other runs ask the kernel instead.
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
            // Not being able to note the pid does not weaken the lock itself.
        }
        return;
    }
    const int lock_error = errno;
    struct flock holder = whole_file_write_lock();
    const bool asked = ::fcntl(fd_, F_GETLK, &holder) == 0;
    ::close(fd_);
    fd_ = -1;
    if (lock_error != EACCES && lock_error != EAGAIN)
        throw InputError(path + ": cannot lock the run directory: " + std::strerror(lock_error));
    const std::string who = asked && holder.l_type != F_UNLCK ? "pid " + std::to_string(holder.l_pid) : "another process";
    throw InputError(run_dir + ": in use by another tinyformer train (" + who +
                     "); wait for it to finish, or train into another --out");
}

RunDirectoryLock::~RunDirectoryLock() {
    if (fd_ >= 0) ::close(fd_);
}

}  // namespace tinyformer
