// Ops that move elements without computing: reshape and select (views), transpose (a copy), and
// the two the lesson is about, split_heads and merge_heads, built from them.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor reshape(const Tensor& x, const Shape& shape) {
    if (numel_of(shape) != x.numel())
        shape_error("reshape", "cannot reshape " + shape_str(x.shape()) + " to " + shape_str(shape));
    Tensor out = Tensor::view_of(x.storage(), x.offset_bytes(), shape, x.dtype());  // same data
    return record(out, "reshape", {x}, [x](const Tensor& d_out, const Tensor&) {
        accumulate_grad(x, Tensor::view_of(d_out.storage(), d_out.offset_bytes(), x.shape(), d_out.dtype()));
    });
}

Tensor transpose(const Tensor& x, int dim0, int dim1) {
    require_real("transpose", x, "x");
    int r = x.rank();
    int a0 = dim0 < 0 ? dim0 + r : dim0, a1 = dim1 < 0 ? dim1 + r : dim1;
    if (a0 < 0 || a0 >= r || a1 < 0 || a1 >= r)
        shape_error("transpose", "axes " + std::to_string(dim0) + "," + std::to_string(dim1) + " of shape " +
                                     shape_str(x.shape()));
    Shape out_shape = x.shape();
    std::swap(out_shape[a0], out_shape[a1]);
    Tensor out = empty_like(x, out_shape);
    backend().transpose(x, a0, a1, out);
    return record(out, "transpose", {x}, [x, a0, a1](const Tensor& d_out, const Tensor&) {
        Tensor dx = empty_like(d_out, x.shape());  // swapping the same axes again undoes it
        backend().transpose(d_out, a0, a1, dx);
        accumulate_grad(x, dx);
    });
}

Tensor select(const Tensor& x, int64_t index) {
    if (x.rank() < 1 || index < 0 || index >= x.dim(0))
        shape_error("select", "index " + std::to_string(index) + " of shape " + shape_str(x.shape()));
    const Shape shape(x.shape().begin() + 1, x.shape().end());
    const int64_t offset = index * numel_of(shape);  // elements before x[index]
    Tensor out = Tensor::view_of(x.storage(), x.offset_bytes() + offset * dtype_size(x.dtype()), shape, x.dtype());
    return record(out, "select", {x}, [x, offset](const Tensor& d_out, const Tensor&) {
        accumulate_grad_part(x, offset, d_out);
    });
}

Tensor split_heads(const Tensor& x, int64_t n_heads) {
    if (x.rank() != 3) shape_error("split_heads", "expects [B,T,D], got " + shape_str(x.shape()));
    const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
    if (n_heads < 1 || D % n_heads != 0)
        shape_error("split_heads", "d_model " + std::to_string(D) + " is not divisible by n_heads " +
                                       std::to_string(n_heads) + " (shape " + shape_str(x.shape()) + ")");
    const int64_t d = D / n_heads;
    // [B,T,D] → [B,T,H,d]: each position's features cut into H runs of d ...
    // → [B,H,T,d]: ... then the head axis moved in front of the positions.
    return transpose(reshape(x, {B, T, n_heads, d}), 1, 2);
}

Tensor merge_heads(const Tensor& x) {
    if (x.rank() != 4) shape_error("merge_heads", "expects [B,H,T,d], got " + shape_str(x.shape()));
    const int64_t B = x.dim(0), H = x.dim(1), T = x.dim(2), d = x.dim(3);
    // [B,H,T,d] → [B,T,H,d] → [B,T,H*d]: the heads' outputs side by side (concatenated).
    return reshape(transpose(x, 1, 2), {B, T, H * d});
}

}  // namespace tinyformer
