// gelu, tanh form: 0.5 u (1 + tanh(k (u + 0.044715 u³))), k = sqrt(2/pi).
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor gelu(const Tensor& x) {
    require_real("gelu", x, "x");
    Tensor y = empty_like(x, x.shape());
    backend().gelu_forward(x, y);
    return record(y, "gelu", {x}, [x](const Tensor& dy, const Tensor&) {
        Tensor dx = empty_like(x, x.shape());
        backend().gelu_backward(x, dy, dx);
        accumulate_grad(x, dx);
    });
}

}  // namespace tinyformer
