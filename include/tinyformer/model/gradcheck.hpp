// Gradient checks: the engine's gradients against central finite differences, in float64.
//
// For a function f of some input tensors, the check draws a fixed random tensor R of f's
// output shape and compares, for every element x_i of every input,
//   analytic  = d<f, R>/dx_i from one backward pass seeded with R
//   numeric   = (<f(x_i + h), R> - <f(x_i - h), R>) / 2h
// relative error = |analytic - numeric| / max(|analytic|, |numeric|, floor), floor = 1e-3,
// so that gradients near zero are judged by their absolute error. A check passes when its
// largest relative error is at most the tolerance (1e-6).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

struct GradCheckResult {
    std::string name;
    int64_t elements = 0;  // input elements checked
    double max_abs_error = 0;
    double max_rel_error = 0;
    bool pass = false;
    std::string op;                // the op the check is about, as op_list.hpp names it; "" for a composition
    std::vector<std::string> ops;  // the ops whose backwards the check ran (recorded_ops)
};

struct GradCheckSettings {
    double step = 1e-5;         // h
    double rel_floor = 1e-3;    // the denominator's floor
    double tolerance = 1e-6;    // pass when max_rel_error <= tolerance
    uint64_t seed = 1234;       // for R
};

using Differentiable = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// Checks every element of every input (inputs must be f64 and require grad).
GradCheckResult check_gradients(const std::string& name, const Differentiable& f, const std::vector<Tensor>& inputs,
                                const GradCheckSettings& settings = {});

// The built-in suite: every op (random shapes with broadcasting, odd sizes, T=1), attention,
// and the whole model with both position kinds, covering every parameter.
std::vector<GradCheckResult> run_gradcheck_suite(const GradCheckSettings& settings = {});

}  // namespace tinyformer
