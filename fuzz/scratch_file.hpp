// The fuzz targets hand their input to tinyformer the way a user does, as a file: each
// input is written to one scratch file (in /dev/shm when there is one: memory, not disk),
// removed when the process exits.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tinyformer::fuzz {

inline const std::string& scratch_directory() {
    // Never destroyed: the exit handler that removes it runs after static destructors would.
    static const std::string* directory = [] {
        std::string base = std::filesystem::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0
                               ? "/dev/shm"
                               : std::filesystem::temp_directory_path().string();
        auto* pattern = new std::string(base + "/tinyformer_fuzz_XXXXXX");
        if (!::mkdtemp(pattern->data())) std::abort();
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(scratch_directory(), ignored);
        });
        return pattern;
    }();
    return *directory;
}

// Writes the input to <scratch>/<name> and returns its path.
inline std::string write_scratch_file(const std::string& name, const uint8_t* data, size_t size) {
    const std::string path = scratch_directory() + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
    return path;
}

}  // namespace tinyformer::fuzz
