// One run directory, one writer: `train` holds an exclusive lock on <run dir>/.lock for as
// long as it uses the directory, so a second `train` (or `--resume`) of the same directory
// fails at once instead of writing the same files.
//
// The lock is a POSIX record lock (fcntl F_SETLK): the kernel drops it when its holder exits,
// however it exits (SIGKILL included), so a killed run never leaves a stale lock behind; and
// F_GETLK tells a second run the holder's pid. The .lock file itself stays (removing it would
// race with a run that has just opened it); it is empty of meaning when nobody holds it.
#pragma once

#include <string>

namespace tinyformer {

class RunDirectoryLock {
public:
    // Creates the lock file in `run_dir` (which must exist) and takes the lock. Throws
    // InputError naming the directory and the holder's pid if another process holds it.
    explicit RunDirectoryLock(const std::string& run_dir);
    ~RunDirectoryLock();  // closing the file releases the lock
    RunDirectoryLock(const RunDirectoryLock&) = delete;
    RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace tinyformer
