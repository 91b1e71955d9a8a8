// The tensor handle: shapes, element types, views and copies.
#include "catch.hpp"

#include "tinyformer/engine/tensor.hpp"

using namespace tinyformer;

TEST_CASE("a tensor is row-major, typed, and its handle shares data", "[tensor]") {
    Tensor t = Tensor::from({0, 1, 2, 3, 4, 5}, {2, 3});
    REQUIRE(t.shape() == Shape{2, 3});
    REQUIRE(t.numel() == 6);
    REQUIRE(t.dtype() == DType::f32);
    REQUIRE(t.at(4) == 4.0);  // row 1, column 1
    Tensor alias = t;
    alias.data<float>()[0] = 9;
    REQUIRE(t.at(0) == 9.0);   // same data
    Tensor copy = t.clone();
    copy.data<float>()[0] = 7;
    REQUIRE(t.at(0) == 9.0);   // its own data
    REQUIRE_THROWS_WITH(t.data<double>(), ContainsSubstring("f32") && ContainsSubstring("f64"));
}

TEST_CASE("float64 tensors keep what float32 rounds away", "[tensor]") {
    const double third = 1.0 / 3.0;
    REQUIRE(Tensor::from({third}, {1}, DType::f64).item() == third);
    REQUIRE(Tensor::from({third}, {1}, DType::f32).item() != third);
    Tensor converted = Tensor::from({third}, {1}, DType::f64).to(DType::f32);
    REQUIRE(converted.item() == static_cast<double>(static_cast<float>(third)));
}

TEST_CASE("storage is 64-byte aligned and views stay inside it", "[tensor]") {
    Tensor t = Tensor::zeros({3, 5}, DType::f64);
    REQUIRE(reinterpret_cast<uintptr_t>(t.data<double>()) % 64 == 0);
    auto storage = std::make_shared<Storage>(16);
    REQUIRE_NOTHROW(Tensor::view_of(storage, 8, {2}, DType::f32));
    REQUIRE_THROWS_WITH(Tensor::view_of(storage, 8, {3}, DType::f32), ContainsSubstring("runs past"));
}

TEST_CASE("a tensor needs as many values as its shape holds", "[tensor]") {
    REQUIRE_THROWS_WITH(Tensor::from({1, 2, 3}, {2, 2}), ContainsSubstring("[2,2]"));
    REQUIRE_THROWS(Tensor::zeros({2, -1}));
    REQUIRE(shape_str({}) == "[]");
    REQUIRE(Tensor::zeros({}).numel() == 1);  // a scalar has one element
}
