// What several test files need: a scratch directory, and a way to set a model's weights by hand.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/kernel_targets.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer::testing {

// The source tree (CMake defines it for the test executables): the shipped configs and corpus.
inline const std::string kSource = TINYFORMER_SOURCE_DIR;

// Makes `backend` the current one for a scope; the reference backend is current again after.
struct BackendScope {
    explicit BackendScope(std::unique_ptr<Backend> backend) { set_backend(std::move(backend)); }
    ~BackendScope() { set_backend(make_reference_backend()); }
    BackendScope(const BackendScope&) = delete;
    BackendScope& operator=(const BackendScope&) = delete;
};

// Makes the own kernels run on `target` (kernel_targets.hpp) for a scope; on the best this CPU
// has again after, even when a check in the scope fails.
struct KernelTargetScope {
    explicit KernelTargetScope(const std::string& target) { use_kernel_target(target); }
    ~KernelTargetScope() { use_kernel_target("best"); }
    KernelTargetScope(const KernelTargetScope&) = delete;
    KernelTargetScope& operator=(const KernelTargetScope&) = delete;
};

// A fresh directory of its own (named after `prefix`, the process and a counter), removed with
// everything in it at the end of the test.
struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& prefix = "tinyformer_test") {
        static int count = 0;
        path = std::filesystem::temp_directory_path() /
               (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string file(const std::string& name) const { return (path / name).string(); }
    // Writes `text` to <dir>/<name> (making its directories) and returns the file's path.
    std::string write(const std::string& name, const std::string& text) const {
        const std::filesystem::path target = path / name;
        std::filesystem::create_directories(target.parent_path());
        std::ofstream(target) << text;
        return target.string();
    }
    // The names directly inside the directory.
    std::set<std::string> entries() const {
        std::set<std::string> names;
        for (const auto& entry : std::filesystem::directory_iterator(path)) names.insert(entry.path().filename().string());
        return names;
    }
};

// Sets every element of a float32 parameter [rows, columns] (or [n], then column is 0) to
// value(row, column).
inline void set_parameter(Transformer& model, const std::string& name,
                          const std::function<double(int64_t, int64_t)>& value) {
    Tensor p = model.parameters().get(name);
    const int64_t rows = p.dim(0), columns = p.rank() == 2 ? p.dim(1) : 1;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < columns; ++j) p.data<float>()[i * columns + j] = static_cast<float>(value(i, j));
}

}  // namespace tinyformer::testing
