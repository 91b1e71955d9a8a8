// Which of Highway's targets the kernels were compiled for and run on. Compiled with the
// kernels' own flags (CMakeLists.txt: tinyformer_kernels), so that HWY_TARGETS here is theirs,
// and itself once per target: target_in_use() is dispatched as they are, so it answers with
// the HWY_TARGET of the code that actually runs.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/kernel_targets.cpp"
#include <hwy/foreach_target.h>  // before highway.h

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tinyformer::HWY_NAMESPACE {
int64_t target_in_use() { return HWY_TARGET; }
}  // namespace tinyformer::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdlib>

#include "tinyformer/engine/kernel_targets.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {
namespace {

HWY_EXPORT(target_in_use);

struct Name {
    int64_t bit;
    const char* ours;
};
// Best first, as Highway's bits go (a lower bit is a better target).
const Name kNames[] = {
#if HWY_ARCH_ARM_A64
// 64-bit Arm: Highway's names in lower case. sve_256 and sve2_128 are SVE and SVE2 specialised
// for CPUs whose vectors have that length (Neoverse V1; N2), sve and sve2 for any length.
#ifdef HWY_SVE2_128
    {HWY_SVE2_128, "sve2_128"},
#endif
#ifdef HWY_SVE_256
    {HWY_SVE_256, "sve_256"},
#endif
    {HWY_SVE2, "sve2"}, {HWY_SVE, "sve"},
#ifdef HWY_NEON_BF16
    {HWY_NEON_BF16, "neon_bf16"},
#endif
    {HWY_NEON, "neon"},
#ifdef HWY_NEON_WITHOUT_AES
    {HWY_NEON_WITHOUT_AES, "neon_without_aes"},
#endif
#else
#ifdef HWY_AVX3_SPR
    {HWY_AVX3_SPR, "avx512_fp16"},
#endif
#ifdef HWY_AVX3_ZEN4
    {HWY_AVX3_ZEN4, "avx512_bf16"},
#endif
    {HWY_AVX3_DL, "avx512_vnni"}, {HWY_AVX3, "avx512"}, {HWY_AVX2, "avx2"}, {HWY_SSE4, "sse4"}, {HWY_SSSE3, "ssse3"},
#ifdef HWY_SSE2
    {HWY_SSE2, "sse2"},
#endif
#endif  // HWY_ARCH_ARM_A64
    {HWY_EMU128, "emu128"}, {HWY_SCALAR, "scalar"},
};

KernelTarget target_of(int64_t bit) {
    for (const Name& name : kNames)
        if (name.bit == bit) return {name.ours, hwy::TargetName(bit), bit};
    return {hwy::TargetName(bit), hwy::TargetName(bit), bit};
}

// What this CPU can run, read once before any use_kernel_target narrows Highway's answer.
int64_t cpu_targets() {
    static const int64_t targets = hwy::SupportedTargets();
    return targets;
}

std::string names_of(const std::vector<KernelTarget>& targets) {
    std::string text;
    for (const KernelTarget& target : targets) text += (text.empty() ? "" : ", ") + target.name;
    return text;
}

}  // namespace

std::vector<KernelTarget> kernel_targets_compiled() {
    std::vector<KernelTarget> targets;
    for (int64_t rest = HWY_TARGETS; rest != 0; rest &= rest - 1) targets.push_back(target_of(rest & -rest));
    return targets;
}

std::vector<KernelTarget> kernel_targets_on_this_cpu() {
    std::vector<KernelTarget> targets;
    for (const KernelTarget& target : kernel_targets_compiled())
        if (cpu_targets() & target.highway_bit) targets.push_back(target);
    return targets;
}

std::string kernel_target() { return target_of(HWY_DYNAMIC_DISPATCH(target_in_use)()).name; }

void use_kernel_target(const std::string& name) {
    cpu_targets();  // read before narrowing
    if (name.empty() || name == "best") return hwy::DisableTargets(0);
    for (const KernelTarget& target : kernel_targets_compiled()) {
        if (target.name != name) continue;
        if (!(cpu_targets() & target.highway_bit))
            throw InputError("kernel target '" + name + "': this CPU cannot run it; it can run " +
                             names_of(kernel_targets_on_this_cpu()));
        // Every better target (a lower bit) off: the next call of each kernel picks again.
        return hwy::DisableTargets(target.highway_bit - 1);
    }
    throw InputError("kernel target '" + name + "': expected one of " + names_of(kernel_targets_compiled()) +
                     " (those compiled in), or best");
}

void use_kernel_target_from_environment() {
    const char* name = std::getenv("TINYFORMER_ISA");
    if (name == nullptr) return;
    try {
        use_kernel_target(name);
    } catch (const InputError& e) {
        throw InputError(std::string("TINYFORMER_ISA: ") + e.what());
    }
}

}  // namespace tinyformer
#endif  // HWY_ONCE
