#include "tinyformer/data/data_paths.hpp"

#include <filesystem>
#include <functional>
#include <utility>

namespace tinyformer {

namespace fs = std::filesystem;

namespace {

// Calls visit(key, field) for every path of a DataConfig.
template <class Data, class Visit>
void for_each_path(Data& data, Visit&& visit) {
    visit("data.path", data.path);
    visit("data.train_path", data.train_path);
    visit("data.val_path", data.val_path);
    visit("data.prepared", data.prepared);
    visit("data.probes_path", data.probes_path);
}

// An absolute path with symbolic links resolved as far as the path exists.
fs::path real(const fs::path& path) {
    std::error_code error;
    fs::path absolute = fs::weakly_canonical(fs::absolute(path), error);
    return error ? fs::absolute(path).lexically_normal() : absolute;
}

// How many leading ".." `relative` has.
size_t climbs(const fs::path& relative) {
    size_t count = 0;
    for (const fs::path& part : relative) {
        if (part != "..") break;
        ++count;
    }
    return count;
}

// How many folders deep an absolute path is: /a/b → 2.
size_t depth(const fs::path& absolute) {
    return static_cast<size_t>(std::distance(absolute.begin(), absolute.end())) - 1;
}

}  // namespace

std::string path_relative_to(const std::string& path, const std::string& dir) {
    if (path.empty()) return path;
    const fs::path file = real(path), folder = real(dir.empty() ? "." : dir);
    const fs::path relative = file.lexically_relative(folder);
    // Up to the root and down again: the two have nothing in common, so the absolute path.
    if (relative.empty() || climbs(relative) >= depth(folder)) return file.string();
    return relative.string();
}

std::string path_resolved_from(const std::string& stored, const std::string& dir) {
    if (stored.empty()) return stored;
    const fs::path file = fs::path(stored).is_absolute() ? fs::path(stored).lexically_normal()
                                                         : (real(dir.empty() ? "." : dir) / stored).lexically_normal();
    const fs::path from_here = file.lexically_relative(real("."));
    if (!from_here.empty() && climbs(from_here) == 0) return from_here.string();
    return file.string();
}

DataConfig data_paths_relative_to(const DataConfig& data, const std::string& dir) {
    DataConfig out = data;
    for_each_path(out, [&](const char*, std::string& path) { path = path_relative_to(path, dir); });
    return out;
}

DataConfig data_paths_resolved_from(const DataConfig& data, const std::string& dir) {
    DataConfig out = data;
    for_each_path(out, [&](const char*, std::string& path) { path = path_resolved_from(path, dir); });
    return out;
}

std::vector<std::pair<const char*, const std::string*>> data_paths(const DataConfig& data) {
    std::vector<std::pair<const char*, const std::string*>> paths;
    for_each_path(data, [&](const char* key, const std::string& path) { paths.emplace_back(key, &path); });
    return paths;
}

}  // namespace tinyformer
