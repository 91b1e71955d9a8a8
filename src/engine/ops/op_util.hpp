// Small helpers the op files share: shape checks that throw ShapeError naming the op.
#pragma once

#include <string>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/ops.hpp"

namespace tinyformer::detail {

[[noreturn]] inline void shape_error(const char* op, const std::string& what) {
    throw ShapeError(std::string(op) + ": " + what);
}

inline void require_real(const char* op, const Tensor& t, const char* role) {
    if (!t.defined()) shape_error(op, std::string(role) + " is an empty tensor");
    if (t.dtype() == DType::i32) shape_error(op, std::string(role) + " must be f32 or f64, got i32");
}

inline void require_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype())
        shape_error(op, std::string("element types differ: ") + dtype_name(a.dtype()) + " and " +
                            dtype_name(b.dtype()));
}

// A result tensor of the same element type as `like`, for a kernel to overwrite in full
// (its contents until then are unspecified: see Tensor::empty).
inline Tensor empty_like(const Tensor& like, const Shape& shape) { return Tensor::empty(shape, like.dtype()); }

}  // namespace tinyformer::detail
