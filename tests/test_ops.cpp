// Op forwards against values worked out by hand, and their errors.
#include "catch.hpp"
#include <cmath>

#include "tinyformer/engine/ops.hpp"

using namespace tinyformer;

TEST_CASE("matmul multiplies, transposes and shares a weight over the batch", "[ops]") {
    Tensor a = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = Tensor::from({1, 0, 0, 1, 1, 1}, {3, 2});
    REQUIRE(matmul(a, b).to_vector() == std::vector<double>{4, 5, 10, 11});
    REQUIRE(matmul(b, a, true, true).to_vector() == std::vector<double>{4, 10, 5, 11});  // (ab)^T = b^T a^T
    Tensor batch = Tensor::from({1, 2, 3, 4, 5, 6, 1, 1, 1, 0, 0, 0}, {2, 2, 3});
    Tensor out = matmul(batch, b);  // [2,2,3] @ [3,2]
    REQUIRE(out.shape() == Shape{2, 2, 2});
    REQUIRE(out.to_vector() == std::vector<double>{4, 5, 10, 11, 2, 2, 0, 0});
}

TEST_CASE("a shape error names the op and both shapes", "[ops]") {
    Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
    REQUIRE_THROWS_AS(matmul(a, b), ShapeError);
    REQUIRE_THROWS_WITH(matmul(a, b), ContainsSubstring("matmul") && ContainsSubstring("[2,3]") && ContainsSubstring("[4,5]"));
    REQUIRE_THROWS_WITH(add(a, b), ContainsSubstring("add") && ContainsSubstring("[2,3]") && ContainsSubstring("[4,5]"));
    REQUIRE_THROWS_WITH(reshape(a, {4}), ContainsSubstring("reshape") && ContainsSubstring("[2,3]") && ContainsSubstring("[4]"));
    REQUIRE_THROWS_WITH(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4, 5})),
                        ContainsSubstring("matmul") && ContainsSubstring("[2,3,4]") && ContainsSubstring("[3,4,5]"));
    REQUIRE_THROWS_WITH(cross_entropy(Tensor::zeros({2, 3}), Tensor::ids({0, 1, 2}, {3})),
                        ContainsSubstring("cross_entropy") && ContainsSubstring("[2,3]") && ContainsSubstring("[3]"));
}

TEST_CASE("mixing float32 and float64 is an error, not a silent conversion", "[ops]") {
    REQUIRE_THROWS_WITH(add(Tensor::zeros({2}), Tensor::zeros({2}, DType::f64)), ContainsSubstring("f32") && ContainsSubstring("f64"));
}

TEST_CASE("softmax rows sum to 1 and the causal future is exactly 0", "[ops]") {
    Tensor scores = Tensor::from({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, DType::f64);
    Tensor w = softmax(scores, true);
    REQUIRE(w.at(0) == 1.0);
    REQUIRE(w.at(1) == 0.0);
    REQUIRE(w.at(2) == 0.0);
    REQUIRE(w.at(5) == 0.0);
    REQUIRE(w.at(3) == Approx(1 / (1 + std::exp(1.0))));
    for (int r = 0; r < 3; ++r) REQUIRE(w.at(3 * r) + w.at(3 * r + 1) + w.at(3 * r + 2) == Approx(1.0));
    // With fewer queries than keys (a cache of earlier keys), the last query sees every key.
    Tensor offset = softmax(Tensor::zeros({2, 4}), true);
    REQUIRE(offset.to_vector() == std::vector<double>{1 / 3.0f, 1 / 3.0f, 1 / 3.0f, 0, 0.25, 0.25, 0.25, 0.25});
}

TEST_CASE("cross-entropy is stable for huge logits and matches log-sum-exp", "[ops]") {
    Tensor logits = Tensor::from({1000, 0, -1000, 1, 2, 3}, {2, 3}, DType::f64);
    Tensor loss = cross_entropy(logits, Tensor::ids({0, 1}, {2}));
    double second = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 2.0;
    REQUIRE(std::isfinite(loss.item()));
    REQUIRE(loss.item() == Approx((0.0 + second) / 2));
    REQUIRE_THROWS_WITH(cross_entropy(logits, Tensor::ids({0, 3}, {2})), ContainsSubstring("target 3"));
}

TEST_CASE("layer_norm uses the biased variance, as PyTorch", "[ops]") {
    Tensor x = Tensor::from({1, 2, 3, 4}, {1, 4}, DType::f64);
    Tensor y = layer_norm(x, Tensor::ones({4}, DType::f64), Tensor::zeros({4}, DType::f64), 0.0);
    const double std_biased = std::sqrt(1.25);  // mean 2.5, var = (2.25+0.25+0.25+2.25)/4
    REQUIRE(y.at(0) == Approx(-1.5 / std_biased));
    REQUIRE(y.at(3) == Approx(1.5 / std_biased));
}

TEST_CASE("gelu is the tanh form", "[ops]") {
    Tensor y = gelu(Tensor::from({-1, 0, 1, 3}, {4}, DType::f64));
    auto expected = [](double u) { return 0.5 * u * (1 + std::tanh(std::sqrt(2 / M_PI) * (u + 0.044715 * u * u * u))); };
    for (int i = 0; i < 4; ++i) REQUIRE(y.at(i) == Approx(expected(std::vector<double>{-1, 0, 1, 3}[i])).epsilon(1e-12));
    REQUIRE(y.at(2) == Approx(0.8411919906).epsilon(1e-9));
}

TEST_CASE("embedding reads rows and a repeated id accumulates its gradient", "[ops]") {
    Tensor table = Tensor::from({0, 1, 10, 11, 20, 21}, {3, 2}, DType::f64);
    table.set_requires_grad(true);
    Tensor out = embedding(table, Tensor::ids({2, 0, 2}, {3}));
    REQUIRE(out.shape() == Shape{3, 2});
    REQUIRE(out.to_vector() == std::vector<double>{20, 21, 0, 1, 20, 21});
    out.backward(Tensor::ones({3, 2}, DType::f64));
    REQUIRE(table.grad().to_vector() == std::vector<double>{1, 1, 0, 0, 2, 2});
    REQUIRE_THROWS_WITH(embedding(table, Tensor::ids({3}, {1})), ContainsSubstring("id 3"));
}

TEST_CASE("rope rotates pair j at position t by t * 10000^(-2j/d)", "[ops]") {
    // x [1,1,T=3,d=4]: every pair is (1, 0), so the result is (cos θ, sin θ).
    Tensor x = Tensor::from({1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}, {1, 1, 3, 4}, DType::f64);
    Tensor y = rope(x);
    for (int t = 0; t < 3; ++t)
        for (int j = 0; j < 2; ++j) {
            double theta = t * std::pow(10000.0, -2.0 * j / 4);
            REQUIRE(y.at(t * 4 + 2 * j) == Approx(std::cos(theta)).margin(1e-15));
            REQUIRE(y.at(t * 4 + 2 * j + 1) == Approx(std::sin(theta)).margin(1e-15));
        }
    // Position 0 is not rotated, and a start offset shifts the positions.
    REQUIRE(rope(x, 2).at(0) == Approx(y.at(8)));
    REQUIRE_THROWS_WITH(rope(Tensor::zeros({1, 1, 2, 3})), ContainsSubstring("even"));
}

TEST_CASE("reshape is a view, and transpose swaps axes", "[ops]") {
    Tensor x = Tensor::from({0, 1, 2, 3, 4, 5}, {2, 3});
    Tensor r = reshape(x, {3, 2});
    REQUIRE(r.storage() == x.storage());
    Tensor t = transpose(x, 0, 1);
    REQUIRE(t.shape() == Shape{3, 2});
    REQUIRE(t.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("attention's ops refuse shapes they cannot take, naming the op and the shapes", "[ops]") {
    const Tensor x = Tensor::zeros({2, 4, 8});
    auto attention_error = [](const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
        return [=] { scaled_dot_product_attention(q, k, v, 1.0, causal); };
    };
    REQUIRE_THROWS_WITH(attention_error(x, Tensor::zeros({2, 4, 6}), Tensor::zeros({2, 4, 6}), false)(),
                        ContainsSubstring("scaled_dot_product_attention") && ContainsSubstring("[2,4,6]"));
    REQUIRE_THROWS_WITH(attention_error(x, x, Tensor::zeros({2, 5, 8}), false)(),
                        ContainsSubstring("[2,5,8]"));  // k and v differ
    REQUIRE_THROWS_WITH(attention_error(x, Tensor::zeros({2, 3, 8}), Tensor::zeros({2, 3, 8}), true)(),
                        ContainsSubstring("Tq <= Tk"));
    REQUIRE_THROWS_WITH(attention_error(Tensor::zeros({2, 0, 8}), x, x, false)(), ContainsSubstring("[2,0,8]"));
    REQUIRE_THROWS_WITH(attention_error(Tensor::zeros({2, 4, 0}), Tensor::zeros({2, 4, 0}), Tensor::zeros({2, 4, 0}),
                                        false)(),
                        ContainsSubstring("one feature"));
    REQUIRE_THROWS_WITH(self_attention(Tensor::zeros({2, 4, 24}), 3, false, 0, 1.0, true),
                        ContainsSubstring("self_attention") && ContainsSubstring("n_heads 3"));
    REQUIRE_THROWS_WITH(self_attention(Tensor::zeros({2, 4, 18}), 2, true, 0, 1.0, true),
                        ContainsSubstring("even head width"));
    REQUIRE_THROWS_WITH(self_attention(Tensor::zeros({2, 0, 24}), 2, false, 0, 1.0, true),
                        ContainsSubstring("[2,0,24]"));
    REQUIRE_THROWS_WITH(self_attention(Tensor::zeros({2, 4, 25}), 2, false, 0, 1.0, true),
                        ContainsSubstring("[B,T,3D]"));
}
