// What made this binary, and so what made a run: tinyformer's version and commit, the
// oneDNN it runs on and the instruction set oneDNN dispatches to on this CPU, the target the
// own kernels run on, the compiler,
// the instruction sets the binary was compiled for and those this CPU has. `tinyformer --version` prints it; summary.json and a checkpoint's `made_by`
// metadata carry it as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tinyformer {

struct BuildInfo {
    std::string version;       // the CMake project's version, "0.1.0"
    std::string license;       // its licence as an SPDX identifier, "MIT" (the file LICENSE)
    std::string git;           // `git describe` of the source at build time; "" if not a clone
    std::string compiler;      // "GCC 12.2.0"
    std::string build;         // "Release, -march=native" (the optimisation and CPU target)
    std::string onednn;        // the library loaded at run time, "2.6.3 (commit 52b5f107)"
    std::string onednn_isa;    // what oneDNN dispatches to here, "AVX512_CORE_AMX"
    std::string kernels;       // the target the own kernels run on here, "avx2" (kernel_targets.hpp)
    std::string kernels_here;  // the targets compiled in that this CPU can run, "avx512 avx2 sse4"
    std::string built_for;     // the instruction sets compiled for, "x86-64-v3 (SSE4.2 AVX2 FMA)"
    std::string cpu;           // those this CPU has, in the same words
    std::string cpu_model;     // which CPU: "AMD EPYC (AMD family 26 model 2: Zen 5)" (cpu_features.hpp)
    std::string cpu_lacks;     // those built for that this CPU lacks, "AVX-512"; "" when none
};

BuildInfo build_info();

// "0.1.0 (git 657854c)", or "0.1.0" when not built from a clone.
std::string version_string();
// The text `tinyformer --version` prints: the version on the first line, as help2man and
// bug reports expect, then the compiler and what it compiled for, this CPU, and oneDNN.
std::string version_text();
// {"version", "git", "license", "compiler", "build", "built_for", "cpu", "cpu_model", "onednn", "onednn_isa",
// "kernels"}.
nlohmann::json build_info_json();

}  // namespace tinyformer
