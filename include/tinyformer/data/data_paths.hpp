// Where a run finds its data from any working directory. A run's config names its texts
// and probes by path; a checkpoint stores those paths relative to its own folder (as the
// run's config.toml does), so `eval`, `inspect`, `sample` and `serve` pointed at the run
// find the files from anywhere, and still after the project folder has moved as a whole.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tinyformer/data/data_config.hpp"

namespace tinyformer {

// `path` (as seen from the working directory, or absolute) as written in a file in `dir`:
// relative to `dir`, or absolute when the two share no folder but the root (a corpus in
// /data and a run in /home/me/runs). Symbolic links are followed first, so the relative
// path leads to the same file.
std::string path_relative_to(const std::string& path, const std::string& dir);

// The inverse: a path read from a file in `dir`, as seen from the working directory —
// relative to it when the file lies below it, else absolute.
std::string path_resolved_from(const std::string& stored, const std::string& dir);

// Every path of `data` (path, train_path, val_path, prepared, probes_path) through the
// functions above; empty paths stay empty.
DataConfig data_paths_relative_to(const DataConfig& data, const std::string& dir);
DataConfig data_paths_resolved_from(const DataConfig& data, const std::string& dir);

// Every path of `data` with its key, in the config's order: {"data.path", &data.path}, ...
std::vector<std::pair<const char*, const std::string*>> data_paths(const DataConfig& data);

}  // namespace tinyformer
