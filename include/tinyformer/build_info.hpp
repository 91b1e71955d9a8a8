// What made this binary, and so what made a run: tinyformer's version and commit, the
// oneDNN it runs on and the instruction set oneDNN dispatches to on this CPU, and the
// compiler. `tinyformer --version` prints it; summary.json and a checkpoint's `made_by`
// metadata carry it as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tinyformer {

struct BuildInfo {
    std::string version;       // the CMake project's version, "0.1.0"
    std::string git;           // `git describe` of the source at build time; "" if not a clone
    std::string compiler;      // "GCC 12.2.0"
    std::string build;         // "Release, -march=native" (the optimisation and CPU target)
    std::string onednn;        // the library loaded at run time, "2.6.3 (commit 52b5f107)"
    std::string onednn_isa;    // what oneDNN dispatches to here, "AVX512_CORE_AMX"
};

BuildInfo build_info();

// "0.1.0 (git 657854c)", or "0.1.0" when not built from a clone.
std::string version_string();
// The text `tinyformer --version` prints: the version on the first line, as help2man and
// bug reports expect, then oneDNN and the compiler.
std::string version_text();
// {"version", "git", "compiler", "build", "onednn", "onednn_isa"}.
nlohmann::json build_info_json();

}  // namespace tinyformer
