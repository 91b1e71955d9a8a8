#include "tinyformer/engine/cpu_features.hpp"

#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
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

std::string core_generation(const std::string& vendor, int family, int model) {
    if (vendor == "AuthenticAMD") {
        if (family == 23) return model < 0x30 ? "Zen or Zen+" : "Zen 2";
        if (family == 25) {  // Zen 4: Genoa, Raphael, Phoenix, Bergamo; Zen 3: Milan, Vermeer, Cezanne, ...
            const bool zen4 = (model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7f) ||
                              (model >= 0xa0 && model <= 0xaf);
            return zen4 ? "Zen 4" : model <= 0x5f ? "Zen 3" : "";
        }
        if (family == 26) return "Zen 5";
    } else if (vendor == "GenuineIntel" && family == 6) {
        switch (model) {
            case 0x6a: case 0x6c: return "Ice Lake-SP";
            case 0x8f: return "Sapphire Rapids";
            case 0xcf: return "Emerald Rapids";
            case 0xad: case 0xae: return "Granite Rapids";
            default: break;
        }
    }
    return "";
}

std::string cpu_model() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return "";
    char vendor_bytes[13] = {};
    std::memcpy(vendor_bytes, &ebx, 4);
    std::memcpy(vendor_bytes + 4, &edx, 4);
    std::memcpy(vendor_bytes + 8, &ecx, 4);
    const std::string vendor = vendor_bytes;
    __get_cpuid(1, &eax, &ebx, &ecx, &edx);
    // Leaf 1's eax: the base family in bits 8-11, extended by bits 20-27 when it is 15; the
    // model in bits 4-7, with bits 16-19 above them for families 6 and 15 and up.
    const int base_family = (eax >> 8) & 0xf, base_model = (eax >> 4) & 0xf;
    const int family = base_family == 0xf ? base_family + static_cast<int>((eax >> 20) & 0xff) : base_family;
    const int model = base_family >= 0x6 ? (static_cast<int>((eax >> 16) & 0xf) << 4) | base_model : base_model;
    std::string brand;
    unsigned highest = 0;
    __get_cpuid(0x80000000, &highest, &ebx, &ecx, &edx);
    if (highest >= 0x80000004) {
        char brand_bytes[49] = {};
        for (unsigned leaf = 0; leaf < 3; ++leaf) {
            unsigned regs[4] = {};
            __get_cpuid(0x80000002 + leaf, &regs[0], &regs[1], &regs[2], &regs[3]);
            std::memcpy(brand_bytes + 16 * leaf, regs, 16);
        }
        brand = brand_bytes;
        const size_t first = brand.find_first_not_of(' '), last = brand.find_last_not_of(' ');
        brand = first == std::string::npos ? "" : brand.substr(first, last - first + 1);
    }
    const std::string maker = vendor == "AuthenticAMD" ? "AMD" : vendor == "GenuineIntel" ? "Intel" : vendor;
    const std::string generation = core_generation(vendor, family, model);
    return (brand.empty() ? maker : brand) + " (" + maker + " family " + std::to_string(family) + " model " +
           std::to_string(model) + (generation.empty() ? "" : ": " + generation) + ")";
#else
    return "";
#endif
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
