#include "tinyformer/engine/build_info.hpp"

#include <dnnl.hpp>

#include "backends/onednn_compat.hpp"
#include "tinyformer/engine/cpu_budget.hpp"
#include "tinyformer/engine/cpu_features.hpp"
#include "tinyformer/engine/kernel_targets.hpp"
#include "git_describe.hpp"  // generated at build time: TINYFORMER_GIT_DESCRIBE

// Set by CMakeLists.txt on this file alone.
#ifndef TINYFORMER_VERSION
#error "TINYFORMER_VERSION is defined by CMakeLists.txt (the project's version)"
#endif

namespace tinyformer {
namespace {

std::string compiler_name() {
#if defined(__clang__)
    return "clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
           std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
    return "GCC " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
           std::to_string(__GNUC_PATCHLEVEL__);
#else
    return "an unknown compiler";
#endif
}

}  // namespace

BuildInfo build_info() {
    BuildInfo info;
    info.version = TINYFORMER_VERSION;
    info.license = TINYFORMER_LICENSE;
    info.git = TINYFORMER_GIT_DESCRIBE;
    info.compiler = compiler_name();
    info.build = TINYFORMER_BUILD;
    // The library loaded now, which may be newer than the headers compiled against.
    const dnnl_version_t* loaded = dnnl_version();
    info.onednn = std::to_string(loaded->major) + "." + std::to_string(loaded->minor) + "." +
                  std::to_string(loaded->patch);
    info.onednn_isa = onednn::isa_name(dnnl::get_effective_cpu_isa());
    info.kernels = kernel_target();
    for (const KernelTarget& target : kernel_targets_on_this_cpu())
        info.kernels_here += (info.kernels_here.empty() ? "" : " ") + target.name;
    // cpu_features.cpp is compiled with the same -march as every other file: its macros are the binary's.
    info.built_for = describe(compiled_for());
    info.cpu = describe(this_cpu());
    info.cpu_lacks = missing(compiled_for(), this_cpu());
    info.cpu_model = cpu_model();
    return info;
}

std::string version_string() {
    const BuildInfo info = build_info();
    return info.git.empty() ? info.version : info.version + " (git " + info.git + ")";
}

std::string version_text() {
    const BuildInfo info = build_info();
    const CpuBudget budget = cpu_budget();
    const std::string cpu_line =
        info.cpu_lacks.empty()
            ? "this CPU has " + info.cpu + "\n"
            : "this CPU has " + info.cpu + ", without the " + info.cpu_lacks +
                  " this binary was built for: it may stop at an illegal instruction (build it on this machine)\n";
    return "tinyformer " + version_string() + "\n" +                                              //
           "built with " + info.compiler + " (" + info.build + ") for " + info.built_for + "\n" +  //
           cpu_line +                                                                              //
           (info.cpu_model.empty() ? "" : "this CPU is " + info.cpu_model + "\n") +                  //
           "oneDNN " + info.onednn + ", dispatching to " + info.onednn_isa + " on this CPU\n" +       //
           "own kernels (Highway) on " + info.kernels + ", of " + info.kernels_here +
           " on this CPU (TINYFORMER_ISA chooses)\n" +  //
           "threads: " + std::to_string(budget.cpus) + " by default (" + budget.reason + ")\n" +  //
           "licence: " + info.license + " (SPDX identifier; the text: LICENSE)\n";
}

nlohmann::json build_info_json() {
    const BuildInfo info = build_info();
    return {{"version", info.version},     {"git", info.git},    {"license", info.license}, {"compiler", info.compiler},
            {"build", info.build},         {"built_for", info.built_for}, {"cpu", info.cpu}, {"cpu_model", info.cpu_model},
            {"onednn", info.onednn},       {"onednn_isa", info.onednn_isa}, {"kernels", info.kernels}};
}

}  // namespace tinyformer
