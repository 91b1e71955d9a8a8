// layer_norm over the last axis: x̂ = (x - mean) / sqrt(var + eps), y = weight * x̂ + bias.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
    require_real("layer_norm", x, "x");
    require_same_dtype("layer_norm", x, weight);
    require_same_dtype("layer_norm", x, bias);
    const int64_t C = x.dim(-1);
    if (weight.shape() != Shape{C} || bias.shape() != Shape{C})
        shape_error("layer_norm", "x " + shape_str(x.shape()) + " needs weight and bias [" + std::to_string(C) +
                                      "], got " + shape_str(weight.shape()) + " and " + shape_str(bias.shape()));
    const int64_t rows = x.numel() / C;
    Tensor y = empty_like(x, x.shape());
    Tensor mean = empty_like(x, {rows}), rstd = empty_like(x, {rows});  // saved for the backward
    backend().layer_norm_forward(x, weight, bias, eps, y, mean, rstd);
    return record(y, "layer_norm", {x, weight, bias},
                  [x, weight, bias, mean, rstd](const Tensor& dy, const Tensor&) {
                      Tensor dx = empty_like(x, x.shape());
                      Tensor d_weight = empty_like(weight, weight.shape()), d_bias = empty_like(bias, bias.shape());
                      backend().layer_norm_backward(x, weight, mean, rstd, dy, dx, d_weight, d_bias);
                      accumulate_grad(x, dx);
                      accumulate_grad(weight, d_weight);
                      accumulate_grad(bias, d_bias);
                  });
}

}  // namespace tinyformer
