// Mixed precision (train.precision = "bf16"): the model's matrix products take bfloat16
// operands and sum in float32; everything else stays float32. As torch.autocast does, it is
// a scope, and inside it each product asks product_operand() for its operands.
#pragma once

#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

// The precision of the model's matrix products. The trainer opens a scope around each step's
// forward and backward when train.precision = "bf16"; everything else (evaluation, sampling,
// inspection, the optimizer) stays float32.
enum class MatmulPrecision { float32, bf16 };
MatmulPrecision matmul_precision();

class MatmulPrecisionScope {
public:
    explicit MatmulPrecisionScope(MatmulPrecision precision);
    ~MatmulPrecisionScope();  // leaving bf16 drops the parameters' bf16 copies
    MatmulPrecisionScope(const MatmulPrecisionScope&) = delete;
    MatmulPrecisionScope& operator=(const MatmulPrecisionScope&) = delete;

private:
    MatmulPrecision previous_;
};

// A float32 tensor rounded to bfloat16 (to nearest, ties to even), as a new bf16 tensor.
Tensor bf16_copy(const Tensor& t);

// An operand of a matrix product in the current precision: `t` itself in float32 (and for
// float64 tensors); in bf16, its bf16 copy. A parameter (a leaf that requires grad) is
// converted once per scope and its copy reused by every product that reads it, forward and
// backward, as torch.autocast's cast cache does: parameters must not change inside a scope
// (the optimizer steps outside it). Anything else is converted on each call, so an op
// converts an activation once and keeps the copy for its backward.
Tensor product_operand(const Tensor& t);

}  // namespace tinyformer
