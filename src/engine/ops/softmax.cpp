// softmax over the last axis, optionally causal (a query never reads a later key: its
// weight there is exactly 0). Backward: dx = y * (dy - sum(dy * y)), written with the
// result y, which the node receives as `out`.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor softmax(const Tensor& x, bool causal) {
    require_real("softmax", x, "x");
    if (x.rank() < 1 || x.dim(-1) == 0) shape_error("softmax", "needs a non-empty last axis, got " + shape_str(x.shape()));
    if (causal && (x.rank() < 2 || x.dim(-2) > x.dim(-1)))
        shape_error("softmax", "a causal mask needs [..., Tq, Tk] with Tq <= Tk, got " + shape_str(x.shape()));
    Tensor y = empty_like(x, x.shape());
    backend().softmax_forward(x, causal, y);
    return record(y, "softmax", {x}, [x](const Tensor& dy, const Tensor& y) {
        Tensor dx = empty_like(x, x.shape());
        backend().softmax_backward(y, dy, dx);
        accumulate_grad(x, dx);
    });
}

}  // namespace tinyformer
