// gelu, tanh form: 0.5 u (1 + tanh(k (u + 0.044715 u³))), k = sqrt(2/pi).
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor gelu(const Tensor& x) {
    require_real("gelu", x, "x");
    Tensor y = empty_like(x, x.shape());
    backend().gelu_forward(x, y);
    // dy/du = 0.5 (1 + t) + 0.5 u (1 - t²) k (1 + 3 · 0.044715 u²), t the tanh above.
    return record(y, "gelu", {x}, [x](const Tensor& dy, const Tensor& y) {
        Tensor dx = empty_like(x, x.shape());
        backend().gelu_backward(x, y, dy, dx);
        accumulate_grad(x, dx);
    });
}

}  // namespace tinyformer
