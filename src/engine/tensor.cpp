#include "tinyformer/engine/tensor.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/bf16.hpp"
#include "tinyformer/engine/buffer_pool.hpp"

namespace tinyformer {

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f32: return "f32";
        case DType::f64: return "f64";
        case DType::i32: return "i32";
        case DType::bf16: return "bf16";
    }
    return "?";
}

size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::f32: return 4;
        case DType::f64: return 8;
        case DType::i32: return 4;
        case DType::bf16: return 2;
    }
    return 0;
}

int64_t numel_of(const Shape& shape) {
    int64_t n = 1;
    for (int64_t extent : shape) n *= extent;
    return n;
}

std::string shape_str(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(shape[i]);
    }
    s += ']';
    return s;
}

void check_dtype(const Tensor& t, DType expected) {
    if (!t.defined()) throw std::logic_error("access to an empty tensor");
    if (t.dtype() != expected)
        throw std::invalid_argument(std::string("tensor holds ") + dtype_name(t.dtype()) + ", accessed as " +
                                    dtype_name(expected));
}

Storage::Storage(size_t bytes, Init init) : block_(buffer_pool::acquire(bytes)), size_(bytes) {
    if (init == Init::zeroed) std::memset(block_.data, 0, bytes);
#ifndef NDEBUG
    else std::memset(block_.data, 0xFF, bytes);  // all-ones bytes: NaN as f32 and f64, -1 as i32
#endif
}

Storage::~Storage() { buffer_pool::release(block_); }

// ---- construction ----

static std::shared_ptr<TensorImpl> new_tensor(const Shape& shape, DType dtype, Storage::Init init) {
    for (int64_t extent : shape)
        if (extent < 0) throw std::invalid_argument("negative extent in shape " + shape_str(shape));
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->dtype = dtype;
    impl->storage = std::make_shared<Storage>(numel_of(shape) * dtype_size(dtype), init);
    return impl;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) { return Tensor(new_tensor(shape, dtype, Storage::Init::zeroed)); }
Tensor Tensor::empty(const Shape& shape, DType dtype) {
    return Tensor(new_tensor(shape, dtype, Storage::Init::uninitialised));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
    Tensor t = zeros(shape, dtype);
    t.fill(value);
    return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor Tensor::from(const std::vector<double>& values, const Shape& shape, DType dtype) {
    if (static_cast<int64_t>(values.size()) != numel_of(shape))
        throw std::invalid_argument(std::to_string(values.size()) + " values do not fill shape " + shape_str(shape));
    Tensor t = zeros(shape, dtype);
    for (size_t i = 0; i < values.size(); ++i) t.set_at(static_cast<int64_t>(i), values[i]);
    return t;
}

Tensor Tensor::ids(const std::vector<int32_t>& values, const Shape& shape) {
    if (static_cast<int64_t>(values.size()) != numel_of(shape))
        throw std::invalid_argument(std::to_string(values.size()) + " ids do not fill shape " + shape_str(shape));
    Tensor t = zeros(shape, DType::i32);
    std::memcpy(t.data<int32_t>(), values.data(), values.size() * sizeof(int32_t));
    return t;
}

Tensor Tensor::view_of(std::shared_ptr<Storage> storage, size_t offset_bytes, const Shape& shape, DType dtype) {
    if (offset_bytes + numel_of(shape) * dtype_size(dtype) > storage->size())
        throw std::out_of_range("view " + shape_str(shape) + " at byte " + std::to_string(offset_bytes) +
                                " runs past its storage of " + std::to_string(storage->size()) + " bytes");
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->dtype = dtype;
    impl->storage = std::move(storage);
    impl->offset_bytes = offset_bytes;
    return Tensor(std::move(impl));
}

// ---- shape and element access ----

const Shape& Tensor::shape() const {
    if (!impl_) throw std::logic_error("shape() of an empty tensor");
    return impl_->shape;
}

int64_t Tensor::dim(int axis) const {
    int r = rank();
    int a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r) throw std::out_of_range("axis " + std::to_string(axis) + " of shape " + shape_str(shape()));
    return impl_->shape[a];
}

int64_t Tensor::numel() const { return numel_of(shape()); }
DType Tensor::dtype() const { return impl_->dtype; }
const std::shared_ptr<Storage>& Tensor::storage() const { return impl_->storage; }
size_t Tensor::offset_bytes() const { return impl_->offset_bytes; }

double Tensor::at(int64_t i) const {
    if (i < 0 || i >= numel()) throw std::out_of_range("element " + std::to_string(i) + " of " + shape_str(shape()));
    switch (dtype()) {
        case DType::f32: return data<float>()[i];
        case DType::f64: return data<double>()[i];
        case DType::i32: return data<int32_t>()[i];
        case DType::bf16: return from_bf16_bits(data<uint16_t>()[i]);
    }
    return 0;
}

void Tensor::set_at(int64_t i, double value) {
    switch (dtype()) {
        case DType::f32: data<float>()[i] = static_cast<float>(value); break;
        case DType::f64: data<double>()[i] = value; break;
        case DType::i32: data<int32_t>()[i] = static_cast<int32_t>(value); break;
        case DType::bf16: data<uint16_t>()[i] = to_bf16_bits(static_cast<float>(value)); break;
    }
}

double Tensor::item() const {
    if (numel() != 1) throw std::invalid_argument("item() of a tensor of shape " + shape_str(shape()));
    return at(0);
}

std::vector<double> Tensor::to_vector() const {
    std::vector<double> values(numel());
    for (int64_t i = 0; i < numel(); ++i) values[i] = at(i);
    return values;
}

void Tensor::fill(double value) {
    const int64_t n = numel();
    switch (dtype()) {
        case DType::f32: {  // the gradient arena is zeroed every step: both threads share it
            float* p = data<float>();
            const float v = static_cast<float>(value);
#pragma omp parallel for schedule(static) if (n > (1 << 16))
            for (int64_t i = 0; i < n; ++i) p[i] = v;
            break;
        }
        case DType::f64: std::fill_n(data<double>(), n, value); break;
        case DType::i32: std::fill_n(data<int32_t>(), n, static_cast<int32_t>(value)); break;
        case DType::bf16: std::fill_n(data<uint16_t>(), n, to_bf16_bits(static_cast<float>(value))); break;
    }
}

void Tensor::copy_from(const Tensor& other) {
    if (other.shape() != shape())
        throw std::invalid_argument("copy_from: shape " + shape_str(other.shape()) + " into " + shape_str(shape()));
    if (other.dtype() == dtype()) {  // in blocks of 64 KiB, shared between the threads
        std::byte* to = storage()->bytes() + offset_bytes();
        const std::byte* from = other.storage()->bytes() + other.offset_bytes();
        const int64_t bytes = numel() * static_cast<int64_t>(dtype_size(dtype())), block = 1 << 16;
        const int64_t blocks = (bytes + block - 1) / block;
#pragma omp parallel for schedule(static) if (blocks > 4)
        for (int64_t k = 0; k < blocks; ++k) std::memcpy(to + k * block, from + k * block, std::min(block, bytes - k * block));
        return;
    }
    const int64_t n = numel();
    for (int64_t i = 0; i < n; ++i) set_at(i, other.at(i));
}

Tensor Tensor::clone() const { return to(dtype()); }

Tensor Tensor::to(DType target) const {
    Tensor t = empty(shape(), target);
    t.copy_from(*this);
    return t;
}

// ---- autograd state ----

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool on) {
    if (on && dtype() == DType::i32) throw std::invalid_argument("integer tensors cannot require grad");
    if (on && dtype() == DType::bf16) throw std::invalid_argument("bf16 tensors (product operands) cannot require grad");
    impl_->requires_grad = on;
    return *this;
}

Tensor Tensor::grad() const { return impl_->grad; }

void Tensor::set_grad(const Tensor& grad) {
    if (grad.defined() && grad.shape() != shape())
        throw std::invalid_argument("gradient of shape " + shape_str(grad.shape()) + " for a tensor of shape " +
                                    shape_str(shape()));
    impl_->grad = grad;
    impl_->grad_is_owned = grad.defined();
}

void Tensor::zero_grad() {
    if (impl_->grad.defined() && impl_->grad_is_owned) impl_->grad.fill(0.0);
    else impl_->grad = Tensor();
}

const std::shared_ptr<Node>& Tensor::grad_fn() const { return impl_->grad_fn; }
void Tensor::set_grad_fn(std::shared_ptr<Node> node) { impl_->grad_fn = std::move(node); }

}  // namespace tinyformer
