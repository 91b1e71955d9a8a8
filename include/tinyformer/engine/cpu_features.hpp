// The x86-64 (on 64-bit Arm, aarch64) instruction sets tinyformer's own kernels and its
// dependencies care about: the ones this binary was compiled to use (its -march), and the
// ones this CPU has (asked at run time). `tinyformer --version` prints both, and a
// checkpoint's made_by records them, so that a figure or a bug report says which kind of
// machine it came from.
#pragma once

#include <string>

namespace tinyformer {

struct InstructionSets {
    bool sse4_2 = false;  // with SSSE3 and POPCNT: x86-64-v2
    bool avx2 = false;    // with AVX, FMA, BMI2 and F16C: x86-64-v3 (most laptops and cloud CPUs)
    bool fma = false;
    bool avx512 = false;  // AVX512F, BW, CD, DQ and VL: x86-64-v4 (Zen 4, Skylake-X and later)
    bool avx512_bf16 = false;  // AVX512-BF16: bf16 products (Zen 4, Cooper Lake, Sapphire Rapids)
    // aarch64 (only these are set there, and only the x86 ones on x86-64):
    bool neon = false;  // Advanced SIMD, which every aarch64 CPU has
    bool sve = false;   // the Scalable Vector Extension (Graviton 3, Neoverse V1 and later)
    bool sve2 = false;  // SVE2 (Armv9: Graviton 4, Neoverse V2/N2)
};

// What the compiler was told it may use for this binary (its predefined macros).
InstructionSets compiled_for();
// What this CPU has (cpuid, through the compiler's __builtin_cpu_supports; on aarch64, the
// kernel's hardware capabilities, getauxval(AT_HWCAP)).
InstructionSets this_cpu();

// This CPU as a benchmark row or a bug report should name it: its brand string and, on x86,
// its vendor's family and model numbers with the core generation they name, which tell
// generations apart where the brand does not (a cloud VM's plain "AMD EPYC"):
// "AMD EPYC (AMD family 26 model 2: Zen 5)". "" where there is no cpuid (aarch64).
std::string cpu_model();
// The core generation an x86 vendor's family and model numbers name, or "" where they do not
// name one alone or are not in this short list: AMD family 23 (Zen or Zen+ below model 0x30,
// Zen 2 from it), 25 (Zen 4 at models 0x10-0x1f, 0x60-0x7f and 0xa0-0xaf, Zen 3 at the others
// up to 0x5f), 26 (Zen 5); Intel's Xeon server cores of family 6 from Ice Lake-SP on (earlier
// ones share model numbers: their brand names them).
std::string core_generation(const std::string& vendor, int family, int model);

// "x86-64-v3 (SSE4.2 AVX2 FMA)": the highest x86-64 level the sets make up, and the sets
// ("aarch64 (NEON SVE)" on 64-bit Arm).
std::string describe(const InstructionSets& sets);
// The sets `needed` has and `present` lacks, as "AVX2 FMA"; "" when none.
std::string missing(const InstructionSets& needed, const InstructionSets& present);

}  // namespace tinyformer
