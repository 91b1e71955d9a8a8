#include "tinyformer/engine/cpu_features.hpp"

#include <vector>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace tinyformer {
namespace {

// Each set's name and whether it is there, in the order the levels add them.
std::vector<std::pair<const char*, bool>> named(const InstructionSets& s) {
#if defined(__aarch64__)
    return {{"NEON", s.neon}, {"SVE", s.sve}, {"SVE2", s.sve2}};
#else
    return {{"SSE4.2", s.sse4_2}, {"AVX2", s.avx2}, {"FMA", s.fma}, {"AVX-512", s.avx512}, {"AVX512-BF16", s.avx512_bf16}};
#endif
}

std::string joined(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
    return text;
}

}  // namespace

InstructionSets compiled_for() {
    InstructionSets s;
#if defined(__ARM_NEON)
    s.neon = true;
#endif
#if defined(__ARM_FEATURE_SVE)
    s.sve = true;
#endif
#if defined(__ARM_FEATURE_SVE2)
    s.sve2 = true;
#endif
#if defined(__SSE4_2__) && defined(__SSSE3__) && defined(__POPCNT__)
    s.sse4_2 = true;
#endif
#if defined(__AVX2__)
    s.avx2 = true;
#endif
#if defined(__FMA__)
    s.fma = true;
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__)
    s.avx512 = true;
#endif
#if defined(__AVX512BF16__)
    s.avx512_bf16 = true;
#endif
    return s;
}

InstructionSets this_cpu() {
    InstructionSets s;
#if defined(__aarch64__)
    // The kernel's hardware capabilities (what /proc/cpuinfo's Features line shows).
    const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    s.neon = (hwcap & HWCAP_ASIMD) != 0;
    s.sve = (hwcap & HWCAP_SVE) != 0;
    s.sve2 = (hwcap2 & HWCAP2_SVE2) != 0;
#elif defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    s.sse4_2 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
    s.avx2 = __builtin_cpu_supports("avx2");
    s.fma = __builtin_cpu_supports("fma");
    s.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
    s.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
#endif
    return s;
}

std::string describe(const InstructionSets& s) {
#if defined(__aarch64__)
    const char* level = "aarch64";
#elif defined(__x86_64__) || defined(__i386__)
    // x86-64-v3 also needs BMI2, F16C, MOVBE and LZCNT, which every CPU with AVX2 and FMA has.
    const char* level = s.avx512 && s.avx2 && s.fma && s.sse4_2 ? "x86-64-v4"
                        : s.avx2 && s.fma && s.sse4_2           ? "x86-64-v3"
                        : s.sse4_2                              ? "x86-64-v2"
                                                                : "x86-64";
#else
    const char* level = "this architecture";
#endif
    std::vector<std::string> present;
    for (const auto& [name, there] : named(s))
        if (there) present.push_back(name);
#if defined(__x86_64__) || defined(__i386__)
    const char* baseline = "SSE2";
#else
    const char* baseline = "no SIMD";
#endif
    return std::string(level) + " (" + (present.empty() ? baseline : joined(present)) + ")";
}

std::string missing(const InstructionSets& needed, const InstructionSets& present) {
    std::vector<std::string> lacking;
    const auto need = named(needed), have = named(present);
    for (size_t i = 0; i < need.size(); ++i)
        if (need[i].second && !have[i].second) lacking.push_back(need[i].first);
    return joined(lacking);
}

}  // namespace tinyformer
