#include "tinyformer/parameters.hpp"

#include <stdexcept>

namespace tinyformer {

Parameters::Parameters(const std::vector<ParameterSpec>& specs, DType dtype) : dtype_(dtype) {
    for (const ParameterSpec& spec : specs) count_ += numel_of(spec.shape);
    values_ = Tensor::zeros({count_}, dtype);
    gradients_ = Tensor::zeros({count_}, dtype);
    size_t offset = 0;
    for (const ParameterSpec& spec : specs) {
        if (contains(spec.name)) throw std::invalid_argument("parameter " + spec.name + " declared twice");
        Tensor value = Tensor::view_of(values_.storage(), offset, spec.shape, dtype);
        value.set_requires_grad(true);
        value.set_grad(Tensor::view_of(gradients_.storage(), offset, spec.shape, dtype));
        named_.emplace_back(spec.name, value);
        offset += numel_of(spec.shape) * dtype_size(dtype);
    }
}

bool Parameters::contains(const std::string& name) const {
    for (const auto& [n, t] : named_)
        if (n == name) return true;
    return false;
}

const Tensor& Parameters::get(const std::string& name) const {
    for (const auto& [n, t] : named_)
        if (n == name) return t;
    throw std::out_of_range("no parameter named " + name);
}

Tensor Parameters::values() const { return values_; }
Tensor Parameters::gradients() const { return gradients_; }
void Parameters::zero_grad() { gradients_.fill(0.0); }

}  // namespace tinyformer
