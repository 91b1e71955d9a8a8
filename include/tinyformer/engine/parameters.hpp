// All of a model's parameters in one arena (one buffer, named views into it), and their
// gradients in a second one — llm.c's layout. The optimizer is then one loop over one
// buffer, and zeroing the gradients is one fill.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

struct ParameterSpec {
    std::string name;
    Shape shape;
};

class Parameters {
public:
    Parameters() = default;
    Parameters(const std::vector<ParameterSpec>& specs, DType dtype);

    const Tensor& get(const std::string& name) const;  // throws naming the missing parameter
    bool contains(const std::string& name) const;
    // Parameters that lie one after another in the arena, with equal trailing shapes, as one
    // tensor stacked along the first axis — a view, no copy: its values are theirs, and its
    // gradient is their slots of the gradient arena (attention's q, k, v projections as one
    // [3D,D] matrix). Throws if they are not adjacent, in this order.
    Tensor joined(const std::vector<std::string>& names) const;
    const std::vector<std::pair<std::string, Tensor>>& named() const { return named_; }
    int64_t count() const { return count_; }  // total elements
    DType dtype() const { return dtype_; }

    Tensor values() const;     // the whole arena as one flat tensor [count]
    Tensor gradients() const;  // the gradient arena as one flat tensor [count]
    void zero_grad();          // every gradient to 0 (gradients live in the arena, so backward adds in place)

private:
    std::vector<std::pair<std::string, Tensor>> named_;
    int64_t count_ = 0;
    DType dtype_ = DType::f32;
    Tensor values_, gradients_;
};

}  // namespace tinyformer
