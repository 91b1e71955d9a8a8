// oneDNN 2.x (Debian 12: 2.6) and 3.x (Debian 13: 3.7), behind one set of functions: the
// only place the oneDNN backend knows which one it was built with.
//
// What changed in 3.0 that matters here: a primitive descriptor is made straight from the
// engine and the memory descriptors (2.x first built an operation descriptor, `::desc`, and
// made the primitive descriptor from that); softmax names its algorithm; and a matmul's
// output scale (`set_output_scales`) is gone — scales now belong to inputs and are passed at
// run time. Ours is one number fixed per kernel, so on 3.x it becomes an `eltwise_linear`
// post-op (alpha·x + 0) ahead of the others, which computes the same product.
#pragma once

#include <dnnl.hpp>
#include <cstdio>
#include <string>
#include <oneapi/dnnl/dnnl_version.h>

namespace tinyformer::onednn {

using dnnl::memory;

// c = a @ b (+ bias), with attr's scale and post-ops; bias may be null.
inline dnnl::matmul::primitive_desc matmul(const dnnl::engine& engine, const memory::desc& a, const memory::desc& b,
                                           const memory::desc* bias, const memory::desc& c,
                                           const dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    if (bias) return {engine, a, b, *bias, c, attr};
    return {engine, a, b, c, attr};
#else
    if (bias) return {{a, b, *bias, c}, attr, engine};
    return {{a, b, c}, attr, engine};
#endif
}

// Multiplies a matmul's output by alpha before any post-op in `ops` that follows (so call it
// first). 2.x: the output scale; 3.x: an eltwise_linear post-op, alpha·x + 0.
inline void scale_output(dnnl::primitive_attr& attr, dnnl::post_ops& ops, float alpha) {
#if DNNL_VERSION_MAJOR >= 3
    (void)attr;
    ops.append_eltwise(dnnl::algorithm::eltwise_linear, alpha, 0.0f);
#else
    (void)ops;
    attr.set_output_scales(0, {alpha});
#endif
}

// Layer norm over the last axis of `data` [N, C], normalised in place or not (dst = src's desc).
// Only scripts/bench_own_vs_onednn.cpp runs these now, against the backend's own kernels.
inline dnnl::layer_normalization_forward::primitive_desc layer_norm_forward(const dnnl::engine& engine,
                                                                            const memory::desc& data,
                                                                            const memory::desc& stats, float epsilon,
                                                                            dnnl::normalization_flags flags) {
#if DNNL_VERSION_MAJOR >= 3
    return {engine, dnnl::prop_kind::forward_training, data, data, stats, epsilon, flags};
#else
    return {{dnnl::prop_kind::forward_training, data, stats, epsilon, flags}, engine};
#endif
}

inline dnnl::layer_normalization_backward::primitive_desc layer_norm_backward(
    const dnnl::engine& engine, const memory::desc& data, const memory::desc& stats, float epsilon,
    dnnl::normalization_flags flags, const dnnl::layer_normalization_forward::primitive_desc& forward) {
#if DNNL_VERSION_MAJOR >= 3
    return {engine, dnnl::prop_kind::backward, data, data, data, stats, epsilon, flags, forward};
#else
    return {{dnnl::prop_kind::backward, data, data, stats, epsilon, flags}, engine, forward};
#endif
}

// Softmax over `axis` of `data`, forward (for training) and backward.
inline dnnl::softmax_forward::primitive_desc softmax_forward(const dnnl::engine& engine, const memory::desc& data,
                                                             int axis) {
#if DNNL_VERSION_MAJOR >= 3
    return {engine, dnnl::prop_kind::forward_training, dnnl::algorithm::softmax_accurate, data, data, axis};
#else
    return {{dnnl::prop_kind::forward_training, data, axis}, engine};
#endif
}

inline dnnl::softmax_backward::primitive_desc softmax_backward(const dnnl::engine& engine, const memory::desc& data,
                                                               int axis,
                                                               const dnnl::softmax_forward::primitive_desc& forward) {
#if DNNL_VERSION_MAJOR >= 3
    return {engine, dnnl::algorithm::softmax_accurate, data, data, data, axis, forward};
#else
    return {{data, data, axis}, engine, forward};
#endif
}

// The name ONEDNN_MAX_CPU_ISA takes for an instruction set oneDNN dispatches to. Its ISA
// control (get_effective_cpu_isa, ONEDNN_MAX_CPU_ISA) names x86 sets only: elsewhere oneDNN
// picks its code by itself (on aarch64: its SVE code where the CPU has SVE, else reference
// and gemm code), and the name is the architecture's.
inline std::string isa_name(dnnl::cpu_isa isa) {
#if !defined(__x86_64__) && !defined(__i386__)
    (void)isa;
#if defined(__aarch64__)
    return "aarch64";
#else
    return "this architecture (not x86)";
#endif
#else
    switch (isa) {
        case dnnl::cpu_isa::sse41: return "SSE41";
        case dnnl::cpu_isa::avx: return "AVX";
        case dnnl::cpu_isa::avx2: return "AVX2";
        case dnnl::cpu_isa::avx2_vnni: return "AVX2_VNNI";
#if DNNL_VERSION_MAJOR >= 3
        case dnnl::cpu_isa::avx2_vnni_2: return "AVX2_VNNI_2";
#endif
        case dnnl::cpu_isa::avx512_core: return "AVX512_CORE";
        case dnnl::cpu_isa::avx512_core_vnni: return "AVX512_CORE_VNNI";
        case dnnl::cpu_isa::avx512_core_bf16: return "AVX512_CORE_BF16";
        case dnnl::cpu_isa::avx512_core_amx: return "AVX512_CORE_AMX";
        default: {
            char hex[32];
            std::snprintf(hex, sizeof hex, "ISA 0x%x", static_cast<unsigned>(isa));
            return hex;
        }
    }
#endif
}

// Whether oneDNN runs bf16 matrix products with bf16 instructions at this instruction set:
// AVX512-BF16 (and everything above it, AMX included, whose flags contain its own), or on
// 3.x also AVX2-VNNI-2 (AVX-NE-CONVERT). Never elsewhere: the sets are x86's, and oneDNN says
// cpu_isa::all there, which contains none of them.
inline bool has_bf16_products(dnnl::cpu_isa isa) {
    const auto contains = [isa](dnnl::cpu_isa needed) {
        return (static_cast<unsigned>(isa) & static_cast<unsigned>(needed)) == static_cast<unsigned>(needed);
    };
#if DNNL_VERSION_MAJOR >= 3
    if (contains(dnnl::cpu_isa::avx2_vnni_2)) return true;
#endif
    return contains(dnnl::cpu_isa::avx512_core_bf16);
}

}  // namespace tinyformer::onednn
