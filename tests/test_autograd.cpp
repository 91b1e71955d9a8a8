// The engine: recording, accumulation over several paths, broadcast reduction, no-grad,
// and freeing the graph.
#include "catch.hpp"

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/ops.hpp"

using namespace tinyformer;

static Tensor leaf(std::vector<double> values, Shape shape) {
    Tensor t = Tensor::from(values, shape, DType::f64);
    t.set_requires_grad(true);
    return t;
}

TEST_CASE("gradients reaching a tensor by several paths are summed", "[autograd]") {
    Tensor x = leaf({1.5, -2.0}, {2});
    // y = x*x + x, so dy/dx = 2x + 1; x is reached three times.
    Tensor y = add(mul(x, x), x);
    y.backward(Tensor::ones({2}, DType::f64));
    REQUIRE(x.grad().at(0) == Approx(4.0));
    REQUIRE(x.grad().at(1) == Approx(-3.0));
}

TEST_CASE("a broadcast input's gradient is reduced back to its shape", "[autograd]") {
    Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor bias = leaf({10, 20, 30}, {3});
    Tensor column = leaf({1, 2}, {2, 1});
    Tensor y = mul(add(a, bias), column);  // [2,3]
    y.backward(Tensor::ones({2, 3}, DType::f64));
    REQUIRE(bias.grad().shape() == Shape{3});
    REQUIRE(column.grad().shape() == Shape{2, 1});
    // d/d bias_j = sum_i column_i = 3; d/d column_i = sum_j (a_ij + bias_j)
    REQUIRE(bias.grad().to_vector() == std::vector<double>{3, 3, 3});
    REQUIRE(column.grad().at(0) == Approx(1 + 2 + 3 + 60));
    REQUIRE(column.grad().at(1) == Approx(4 + 5 + 6 + 60));
}

TEST_CASE("backward visits a diamond once per path, in topological order", "[autograd]") {
    Tensor x = leaf({2.0}, {1});
    Tensor s = scale(x, 3.0);      // s = 3x
    Tensor y = mul(s, add(s, x));  // y = 3x (3x + x) = 12x², dy/dx = 24x
    y.backward(Tensor::ones({1}, DType::f64));
    REQUIRE(x.grad().item() == Approx(48.0));
}

TEST_CASE("the no-grad scope records nothing", "[autograd]") {
    Tensor x = leaf({1, 2}, {2});
    {
        NoGradScope no_grad;
        REQUIRE_FALSE(grad_enabled());
        Tensor y = mul(x, x);
        REQUIRE(y.grad_fn() == nullptr);
        REQUIRE_FALSE(y.requires_grad());
    }
    REQUIRE(grad_enabled());
    REQUIRE(mul(x, x).grad_fn() != nullptr);
}

TEST_CASE("backward frees the graph and the tensors it saved", "[autograd]") {
    Tensor x = leaf({0.3, -0.7}, {2});
    std::weak_ptr<Node> node;
    {
        Tensor y = gelu(x);
        node = y.grad_fn();
        REQUIRE_FALSE(node.expired());
        y.backward(Tensor::ones({2}, DType::f64));
        REQUIRE(y.grad_fn() == nullptr);
    }
    REQUIRE(node.expired());
    REQUIRE(x.grad().defined());  // a leaf keeps its gradient
}

TEST_CASE("gradients accumulate across backward calls until zeroed", "[autograd]") {
    Tensor x = leaf({1.0}, {1});
    scale(x, 2.0).backward(Tensor::ones({1}, DType::f64));
    scale(x, 2.0).backward(Tensor::ones({1}, DType::f64));
    REQUIRE(x.grad().item() == 4.0);
    x.zero_grad();
    scale(x, 2.0).backward(Tensor::ones({1}, DType::f64));
    REQUIRE(x.grad().item() == 2.0);
}

TEST_CASE("a gradient shared by two inputs is not summed into in place", "[autograd]") {
    // add() hands the same upstream gradient to both inputs; if the first input later
    // received a second gradient in place, the second input's gradient would change too.
    Tensor a = leaf({1.0}, {1}), b = leaf({1.0}, {1});
    Tensor y = add(add(a, b), a);  // dy/da = 2, dy/db = 1
    y.backward(Tensor::ones({1}, DType::f64));
    REQUIRE(a.grad().item() == 2.0);
    REQUIRE(b.grad().item() == 1.0);
}

TEST_CASE("backward of a non-scalar needs a seed of its shape", "[autograd]") {
    Tensor x = leaf({1, 2}, {2});
    REQUIRE_THROWS_WITH(mul(x, x).backward(), ContainsSubstring("seed"));
    REQUIRE_THROWS_WITH(mul(x, x).backward(Tensor::ones({3}, DType::f64)), ContainsSubstring("[3]"));
    Tensor constant = Tensor::from({1}, {1});
    REQUIRE_THROWS(constant.backward());
}
