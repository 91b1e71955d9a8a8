#include "tinyformer/engine/mixed_precision.hpp"

#include <unordered_map>

#include "tinyformer/engine/backend.hpp"

namespace tinyformer {

static MatmulPrecision current_matmul_precision = MatmulPrecision::float32;

// The bf16 copies of the parameters read in the current bf16 scope, by where their float32
// values live. Emptied when the scope is left.
static std::unordered_map<const std::byte*, Tensor>& parameter_copies() {
    static std::unordered_map<const std::byte*, Tensor> copies;
    return copies;
}

MatmulPrecision matmul_precision() { return current_matmul_precision; }

MatmulPrecisionScope::MatmulPrecisionScope(MatmulPrecision precision) : previous_(current_matmul_precision) {
    current_matmul_precision = precision;
}

MatmulPrecisionScope::~MatmulPrecisionScope() {
    if (current_matmul_precision == MatmulPrecision::bf16 && previous_ != MatmulPrecision::bf16)
        parameter_copies().clear();
    current_matmul_precision = previous_;
}

Tensor bf16_copy(const Tensor& t) {
    Tensor out = Tensor::empty(t.shape(), DType::bf16);
    backend().to_bf16(t, out);
    return out;
}

Tensor product_operand(const Tensor& t) {
    if (current_matmul_precision != MatmulPrecision::bf16 || t.dtype() != DType::f32) return t;
    if (!t.requires_grad() || t.grad_fn()) return bf16_copy(t);  // not a parameter
    const std::byte* values = t.storage()->bytes() + t.offset_bytes();
    auto found = parameter_copies().find(values);
    if (found == parameter_copies().end() || found->second.shape() != t.shape())
        found = parameter_copies().insert_or_assign(values, bf16_copy(t)).first;
    return found->second;
}

}  // namespace tinyformer
