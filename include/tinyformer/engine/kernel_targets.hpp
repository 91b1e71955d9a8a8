// The instruction sets tinyformer's own kernels (attention, softmax, GELU: the files under
// src/engine/backends/ written in Google Highway's vectors) are compiled for, and the one they
// run on. Every kernel is compiled once per target into the one binary, and Highway picks the
// best this CPU has when a kernel is first called (runtime dispatch), in the native build and
// the portable .deb alike. oneDNN's products pick their own (BuildInfo::onednn_isa).
//
// Our names for Highway's targets, lowest first:
//   scalar (no SIMD), sse4 (x86-64-v2; Highway's SSE4), avx2 (x86-64-v3: AVX2 and FMA;
//   Highway's AVX2), avx512 (x86-64-v4; AVX3), avx512_bf16 (AVX-512 with BF16 and the rest of
//   Zen 4's; AVX3_ZEN4, Highway 1.1 and later), and, where Highway has them, ssse3, sse2,
//   emu128, avx512_vnni (AVX3_DL) and avx512_fp16 (Sapphire Rapids; AVX3_SPR).
// On 64-bit Arm (aarch64), Highway's names in lower case: emu128 or scalar, neon, sve, sve2,
//   and the fixed-length sve_256 and sve2_128 (and neon_bf16, neon_without_aes where
//   Highway has them).
//
// TINYFORMER_ISA=<name> in the environment (or use_kernel_target) makes them run on that
// target instead, so that one machine can measure and test every target below its best.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

struct KernelTarget {
    std::string name;          // ours: "avx2"
    std::string highway_name;  // Highway's: "AVX2"
    int64_t highway_bit = 0;   // Highway's HWY_AVX2
};

// The targets compiled into this binary, best first.
std::vector<KernelTarget> kernel_targets_compiled();
// Those of them this CPU can run, best first (whatever use_kernel_target has chosen).
std::vector<KernelTarget> kernel_targets_on_this_cpu();
// The target the kernels run on now: "avx512".
std::string kernel_target();

// Run the kernels on `name` (one of kernel_targets_compiled's names) or, when this CPU lacks
// it, fail: throws InputError naming the names it could take. "" or "best" goes back to the
// best this CPU has.
void use_kernel_target(const std::string& name);
// use_kernel_target(TINYFORMER_ISA) when the variable is set; its errors say where the name
// came from. The CLI calls it before any command.
void use_kernel_target_from_environment();

}  // namespace tinyformer
