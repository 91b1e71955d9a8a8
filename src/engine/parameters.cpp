#include "tinyformer/engine/parameters.hpp"

#include <algorithm>
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

Tensor Parameters::joined(const std::vector<std::string>& names) const {
    if (names.empty()) throw std::invalid_argument("joined: no parameter names");
    const Tensor& first = get(names.front());
    Shape shape = first.shape();
    size_t next_offset = first.offset_bytes();
    for (size_t i = 0; i < names.size(); ++i) {
        const Tensor& part = get(names[i]);
        if (part.offset_bytes() != next_offset || part.rank() != first.rank() || part.rank() < 1 ||
            !std::equal(part.shape().begin() + 1, part.shape().end(), first.shape().begin() + 1))
            throw std::invalid_argument("joined: " + names[i] + " does not follow " + names[i ? i - 1 : 0] +
                                        " in the arena with the same trailing shape");
        if (i > 0) shape[0] += part.dim(0);
        next_offset += part.numel() * dtype_size(dtype_);
    }
    Tensor view = Tensor::view_of(values_.storage(), first.offset_bytes(), shape, dtype_);
    view.set_requires_grad(true);
    view.set_grad(Tensor::view_of(gradients_.storage(), first.offset_bytes(), shape, dtype_));
    return view;
}

Tensor Parameters::values() const { return values_; }
Tensor Parameters::gradients() const { return gradients_; }
void Parameters::zero_grad() { gradients_.fill(0.0); }

}  // namespace tinyformer
