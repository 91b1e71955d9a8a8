// rope: rotary positions. Pair (2j, 2j+1) of a query or key at position t is rotated by
// theta = t * 10000^(-2j/d). A rotation's gradient is the rotation by -theta.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor rope(const Tensor& x, int64_t start) {
    require_real("rope", x, "x");
    if (x.rank() < 2 || x.dim(-1) % 2 != 0)
        shape_error("rope", "needs [..., T, d] with d even, got " + shape_str(x.shape()));
    Tensor out = empty_like(x, x.shape());
    backend().rope(x, start, /*inverse=*/false, out);
    return record(out, "rope", {x}, [x, start](const Tensor& d_out, const Tensor&) {
        Tensor dx = empty_like(x, x.shape());
        backend().rope(d_out, start, /*inverse=*/true, dx);
        accumulate_grad(x, dx);
    });
}

}  // namespace tinyformer
