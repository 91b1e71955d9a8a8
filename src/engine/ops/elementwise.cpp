// add, mul (with NumPy broadcasting) and scale. A broadcast input's gradient is summed
// back over the axes broadcasting expanded, so it has the input's own shape again.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

static Shape broadcast_shape(const char* op, const Shape& a, const Shape& b) {
    Shape out(std::max(a.size(), b.size()));
    for (size_t i = 0; i < out.size(); ++i) {  // right-aligned
        int64_t ea = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
        int64_t eb = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
        if (ea != eb && ea != 1 && eb != 1)
            shape_error(op, "cannot broadcast " + shape_str(a) + " with " + shape_str(b));
        out[i] = ea == 1 ? eb : ea;
    }
    return out;
}

// The gradient of an input of shape `shape` that was broadcast to grad's shape.
static Tensor reduce_to(const Tensor& grad, const Shape& shape) {
    if (grad.shape() == shape) return grad;
    Tensor reduced = empty_like(grad, shape);  // sum_to writes every element
    backend().sum_to(grad, reduced);
    return reduced;
}

Tensor add(const Tensor& a, const Tensor& b) {
    require_real("add", a, "a");
    require_real("add", b, "b");
    require_same_dtype("add", a, b);
    Tensor out = empty_like(a, broadcast_shape("add", a.shape(), b.shape()));
    backend().add(a, b, out);
    return record(out, "add", {a, b}, [a, b](const Tensor& d_out, const Tensor&) {
        accumulate_grad(a, reduce_to(d_out, a.shape()));  // d(a+b)/da = 1
        accumulate_grad(b, reduce_to(d_out, b.shape()));
    });
}

Tensor mul(const Tensor& a, const Tensor& b) {
    require_real("mul", a, "a");
    require_real("mul", b, "b");
    require_same_dtype("mul", a, b);
    Tensor out = empty_like(a, broadcast_shape("mul", a.shape(), b.shape()));
    backend().mul(a, b, out);
    return record(out, "mul", {a, b}, [a, b](const Tensor& d_out, const Tensor&) {
        if (a.requires_grad()) {  // d(a*b)/da = b
            Tensor da = empty_like(d_out, d_out.shape());
            backend().mul(d_out, b, da);
            accumulate_grad(a, reduce_to(da, a.shape()));
        }
        if (b.requires_grad()) {
            Tensor db = empty_like(d_out, d_out.shape());
            backend().mul(d_out, a, db);
            accumulate_grad(b, reduce_to(db, b.shape()));
        }
    });
}

Tensor scale(const Tensor& x, double factor) {
    require_real("scale", x, "x");
    Tensor out = empty_like(x, x.shape());
    backend().scale(x, factor, out);
    return record(out, "scale", {x}, [x, factor](const Tensor& d_out, const Tensor&) {
        Tensor dx = empty_like(d_out, d_out.shape());
        backend().scale(d_out, factor, dx);
        accumulate_grad(x, dx);
    });
}

}  // namespace tinyformer
