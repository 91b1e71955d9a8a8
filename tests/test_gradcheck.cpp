// The gradient checker must be able to fail: a deliberately wrong backward is caught.
#include "catch.hpp"
#include <set>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/model/gradcheck.hpp"

using namespace tinyformer;

// square(x) = x², with a backward that is right (2x) or wrong (x).
static Tensor square(const Tensor& x, bool right_backward) {
    Tensor y = Tensor::zeros(x.shape(), x.dtype());
    backend().mul(x, x, y);
    return record(y, "square", {x}, [x, right_backward](const Tensor& dy, const Tensor&) {
        Tensor dx = Tensor::zeros(x.shape(), x.dtype());
        backend().mul(dy, x, dx);
        if (right_backward) backend().scale(dx, 2.0, dx);
        accumulate_grad(x, dx);
    });
}

static Tensor input() {
    Tensor x = Tensor::from({0.5, -1.25, 2.0, 0.75}, {2, 2}, DType::f64);
    x.set_requires_grad(true);
    return x;
}

TEST_CASE("gradcheck passes a correct backward", "[gradcheck]") {
    GradCheckResult r = check_gradients("square", [](auto& x) { return square(x[0], true); }, {input()});
    REQUIRE(r.pass);
    REQUIRE(r.elements == 4);
    REQUIRE(r.max_rel_error < 1e-8);
}

TEST_CASE("gradcheck fails a deliberately wrong backward", "[gradcheck]") {
    GradCheckResult r = check_gradients("square_wrong", [](auto& x) { return square(x[0], false); }, {input()});
    REQUIRE_FALSE(r.pass);
    REQUIRE(r.max_rel_error > 0.1);  // half the true gradient: relative error 0.5
}

TEST_CASE("gradcheck fails a backward that forgets an input", "[gradcheck]") {
    auto forgets_b = [](const std::vector<Tensor>& x) {
        Tensor y = Tensor::zeros(x[0].shape(), DType::f64);
        backend().mul(x[0], x[1], y);
        Tensor a = x[0], b = x[1];
        return record(y, "mul_forgetful", {a, b}, [a, b](const Tensor& dy, const Tensor&) {
            Tensor da = Tensor::zeros(a.shape(), DType::f64);
            backend().mul(dy, b, da);
            accumulate_grad(a, da);
        });
    };
    GradCheckResult r = check_gradients("mul_forgetful", forgets_b, {input(), input()});
    REQUIRE_FALSE(r.pass);
}

TEST_CASE("the suite covers every op and the whole model, and passes in float64", "[gradcheck]") {
    std::vector<GradCheckResult> results = run_gradcheck_suite();
    std::set<std::string> names;
    for (const GradCheckResult& r : results) {
        names.insert(r.name);
        INFO(r.name << ": max rel error " << r.max_rel_error);
        CHECK(r.pass);
        CHECK(r.elements > 0);
    }
    for (const char* required : {"matmul", "add", "mul", "scale", "reshape", "transpose", "split_heads",
                                 "merge_heads", "embedding", "layer_norm", "gelu", "softmax", "softmax_causal",
                                 "rope", "cross_entropy", "linear_cross_entropy", "attention", "model_rope", "model_learned"})
        CHECK(names.count(required) == 1);
}
