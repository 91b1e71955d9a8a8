// A tensor: a shape, contiguous row-major storage of one element type, and — when it
// takes part in autograd — a gradient and the node that produced it.
//
// A Tensor is a cheap handle (a shared pointer): copying one shares the same data, as a
// Python variable would. Several tensors may share one Storage at different offsets
// (reshape views, the parameter arena); that is how `reshape` costs nothing and how the
// optimizer walks every parameter in one loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/engine/buffer_pool.hpp"

namespace tinyformer {

using Shape = std::vector<int64_t>;

// bf16 holds bfloat16 bits (uint16_t, bf16.hpp): the operands of mixed-precision matrix
// products, never a computed result or a gradient.
enum class DType { f32, f64, i32, bf16 };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);
int64_t numel_of(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2,3,4]"

// A 64-byte aligned block of bytes from the buffer pool (buffer_pool.hpp), zero-filled
// unless made `uninitialised` — for a kernel's output, which the kernel overwrites anyway.
class Storage {
public:
    enum class Init { zeroed, uninitialised };
    explicit Storage(size_t bytes, Init init = Init::zeroed);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    std::byte* bytes() { return block_.data; }
    size_t size() const { return size_; }  // as asked for (the block may be larger)

private:
    buffer_pool::Block block_;
    size_t size_ = 0;
};

struct Node;  // autograd.hpp
struct BackwardWatch;  // autograd.hpp
struct TensorImpl;

class Tensor {
public:
    Tensor() = default;  // an empty handle; defined() is false

    static Tensor zeros(const Shape& shape, DType dtype = DType::f32);
    // Contents unspecified: only for a buffer about to be overwritten in full. (Debug
    // builds fill it with NaN, so an element a kernel forgot to write shows up in tests.)
    static Tensor empty(const Shape& shape, DType dtype = DType::f32);
    static Tensor ones(const Shape& shape, DType dtype = DType::f32);
    static Tensor full(const Shape& shape, double value, DType dtype = DType::f32);
    static Tensor from(const std::vector<double>& values, const Shape& shape, DType dtype = DType::f32);
    static Tensor ids(const std::vector<int32_t>& values, const Shape& shape);  // token ids, i32
    // A view of `bytes` of `storage` from `offset_bytes` (the parameter arena uses this).
    static Tensor view_of(std::shared_ptr<Storage> storage, size_t offset_bytes, const Shape& shape, DType dtype);

    bool defined() const { return impl_ != nullptr; }
    const Shape& shape() const;
    int64_t dim(int axis) const;  // negative axes count from the end
    int rank() const { return static_cast<int>(shape().size()); }
    int64_t numel() const;
    DType dtype() const;

    // Typed access to the elements; throws if T does not match dtype().
    template <class T> T* data();
    template <class T> const T* data() const;
    double item() const;                       // the single element of a one-element tensor
    double at(int64_t flat_index) const;       // any element, as double
    void set_at(int64_t flat_index, double value);  // any element, converted (rounded) to dtype()
    std::vector<double> to_vector() const;     // all elements, as double

    Tensor clone() const;                      // a copy of the data, detached from any graph
    Tensor to(DType dtype) const;              // a converted copy, detached
    void fill(double value);
    void copy_from(const Tensor& other);       // same shape; converts element type

    // Autograd.
    bool requires_grad() const;
    Tensor& set_requires_grad(bool on = true);
    Tensor grad() const;                       // empty until backward() reached this tensor
    void set_grad(const Tensor& grad);         // `grad` becomes this tensor's own buffer (e.g. an arena view)
    void zero_grad();                          // drop the gradient (or zero it in place if it is an arena view)
    const std::shared_ptr<Node>& grad_fn() const;
    void set_grad_fn(std::shared_ptr<Node> node);
    // Reverse-mode differentiation from this tensor. A scalar is seeded with 1; any other
    // tensor needs the upstream gradient `seed` of its own shape.
    void backward(const Tensor& seed = Tensor()) const;
    // The same, telling `watch` as it goes which leaves' gradients are final (autograd.hpp).
    void backward(const Tensor& seed, const BackwardWatch& watch) const;

    bool same_as(const Tensor& other) const { return impl_ == other.impl_; }
    const std::shared_ptr<Storage>& storage() const;
    size_t offset_bytes() const;

private:
    friend void accumulate_grad(const Tensor& input, const Tensor& grad);
    friend Tensor grad_to_add_into(const Tensor& input);
    friend void accumulate_grad_part(const Tensor& input, int64_t offset, const Tensor& part);
    std::shared_ptr<TensorImpl> impl_;
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
};

struct TensorImpl {
    Shape shape;
    DType dtype = DType::f32;
    std::shared_ptr<Storage> storage;
    size_t offset_bytes = 0;
    bool requires_grad = false;
    Tensor grad;
    bool grad_is_owned = false;     // grad's buffer is ours alone, so later gradients may add in place
    std::shared_ptr<Node> grad_fn;  // null for leaves and for results made without grad
};

}  // namespace tinyformer

namespace tinyformer {

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::bf16; }  // bfloat16 bits

void check_dtype(const Tensor& t, DType expected);  // throws naming both types

template <class T> T* Tensor::data() {
    check_dtype(*this, dtype_of<T>());
    return reinterpret_cast<T*>(impl_->storage->bytes() + impl_->offset_bytes);
}
template <class T> const T* Tensor::data() const {
    check_dtype(*this, dtype_of<T>());
    return reinterpret_cast<const T*>(impl_->storage->bytes() + impl_->offset_bytes);
}

}  // namespace tinyformer
