// The engine's core: recording, gradient accumulation, and the topological backward.
#include "tinyformer/engine/autograd.hpp"

#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/threads.hpp"

namespace tinyformer {

namespace {
thread_local bool grad_mode = true;
}

bool grad_enabled() { return grad_mode; }
NoGradScope::NoGradScope() : previous_(grad_mode) { grad_mode = false; }
NoGradScope::~NoGradScope() { grad_mode = previous_; }

Tensor record(Tensor result, const char* op, std::vector<Tensor> inputs, BackwardFn backward) {
    if (!grad_mode) return result;
    bool any_requires_grad = false;
    for (const Tensor& input : inputs) any_requires_grad = any_requires_grad || input.requires_grad();
    if (!any_requires_grad) return result;
    auto node = std::make_shared<Node>();
    node->op = op;
    node->inputs = std::move(inputs);
    node->backward = std::move(backward);
    result.set_grad_fn(std::move(node));
    result.set_requires_grad(true);
    return result;
}

void accumulate_grad(const Tensor& input, const Tensor& grad) {
    if (!input.requires_grad()) return;
    if (grad.shape() != input.shape())
        throw std::logic_error("gradient of shape " + shape_str(grad.shape()) + " for an input of shape " +
                               shape_str(input.shape()));
    TensorImpl& impl = *input.impl_;
    if (!impl.grad.defined()) {  // first arrival: adopt it (it may be shared with another input)
        impl.grad = grad.dtype() == input.dtype() ? grad : grad.to(input.dtype());
        impl.grad_is_owned = false;
    } else if (impl.grad_is_owned) {
        backend().add_inplace(impl.grad, grad);
    } else {  // the adopted buffer may be someone else's too: sum into a fresh one
        Tensor sum = Tensor::empty(input.shape(), input.dtype());
        backend().add(impl.grad, grad, sum);
        impl.grad = sum;
        impl.grad_is_owned = true;
    }
}

void accumulate_grad_part(const Tensor& input, int64_t offset, const Tensor& part) {
    if (!input.requires_grad()) return;
    if (offset < 0 || offset + part.numel() > input.numel())
        throw std::logic_error("gradient part of " + std::to_string(part.numel()) + " elements at " +
                               std::to_string(offset) + " outside an input of shape " + shape_str(input.shape()));
    TensorImpl& impl = *input.impl_;
    const size_t element = dtype_size(input.dtype());
    auto block_of = [&](const Tensor& whole, int64_t at, const Shape& shape) {
        return Tensor::view_of(whole.storage(), whole.offset_bytes() + at * element, shape, input.dtype());
    };
    const Tensor value = part.dtype() == input.dtype() ? part : part.to(input.dtype());
    if (!impl.grad.defined()) {
        // The first part to arrive is copied in and the rest of the buffer zeroed: each
        // element is written once, where zeroing all and then adding would touch it twice.
        Tensor own = Tensor::empty(input.shape(), input.dtype());
        if (offset > 0) block_of(own, 0, {offset}).fill(0.0);
        const int64_t after = offset + part.numel();
        if (after < input.numel()) block_of(own, after, {input.numel() - after}).fill(0.0);
        block_of(own, offset, part.shape()).copy_from(value);
        impl.grad = own;
        impl.grad_is_owned = true;
        return;
    }
    if (!impl.grad_is_owned || impl.grad.dtype() != input.dtype()) {  // an adopted gradient: copy it to our own
        Tensor own = Tensor::empty(input.shape(), input.dtype());
        own.copy_from(impl.grad);
        impl.grad = own;
        impl.grad_is_owned = true;
    }
    Tensor block = block_of(impl.grad, offset, part.shape());
    backend().add_inplace(block, value);
}

Tensor grad_to_add_into(const Tensor& input) {
    if (!input.requires_grad()) return Tensor();
    const TensorImpl& impl = *input.impl_;
    if (!impl.grad.defined() || !impl.grad_is_owned || impl.grad.dtype() != input.dtype()) return Tensor();
    return impl.grad;
}

// Reverse topological order by an iterative depth-first search (no recursion limit on
// deep graphs): a node comes after every node that consumes its output.
static std::vector<Tensor> topological_order(const Tensor& root) {
    std::vector<Tensor> order;
    std::unordered_set<const Node*> visited;
    struct Frame { Tensor tensor; size_t next_input; };
    std::vector<Frame> stack;
    if (root.grad_fn()) stack.push_back({root, 0});
    if (root.grad_fn()) visited.insert(root.grad_fn().get());
    while (!stack.empty()) {
        Frame& frame = stack.back();
        const Node& node = *frame.tensor.grad_fn();
        if (frame.next_input < node.inputs.size()) {
            const Tensor& input = node.inputs[frame.next_input++];
            if (input.grad_fn() && visited.insert(input.grad_fn().get()).second) stack.push_back({input, 0});
        } else {
            order.push_back(frame.tensor);
            stack.pop_back();
        }
    }
    return order;  // inputs before outputs
}

std::vector<std::string> recorded_ops(const Tensor& result) {
    std::set<std::string> names;
    for (const Tensor& t : topological_order(result)) names.insert(t.grad_fn()->op);
    return {names.begin(), names.end()};
}

void Tensor::backward(const Tensor& seed) const { backward(seed, BackwardWatch{}); }

void Tensor::backward(const Tensor& seed, const BackwardWatch& watch) const {
    if (!requires_grad()) throw std::logic_error("backward() of a tensor that does not require grad");
    Tensor upstream = seed;
    if (!upstream.defined()) {
        if (numel() != 1)
            throw std::invalid_argument("backward() of a non-scalar " + shape_str(shape()) + " needs a seed gradient");
        upstream = Tensor::ones(shape(), dtype());
    }
    if (upstream.shape() != shape())
        throw std::invalid_argument("seed gradient " + shape_str(upstream.shape()) + " for a tensor of shape " +
                                    shape_str(shape()));
    accumulate_grad(*this, upstream);

    std::vector<Tensor> order = topological_order(*this);

    // For a watcher: how many nodes read each leaf. A leaf's gradient is final once the
    // last of them has run.
    std::unordered_map<const TensorImpl*, int> readers_left;
    if (watch.leaves || watch.leaf_done) {
        std::vector<Tensor> leaves;
        for (const Tensor& out : order)
            for (const Tensor& input : out.grad_fn()->inputs)
                if (input.requires_grad() && !input.grad_fn() && readers_left[input.impl_.get()]++ == 0)
                    leaves.push_back(input);
        if (watch.leaves) watch.leaves(leaves);
    }

    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Tensor& out = *it;
        if (out.grad().defined()) out.grad_fn()->backward(out.grad(), out);
        if (watch.leaf_done)
            for (const Tensor& input : out.grad_fn()->inputs) {
                const auto readers = readers_left.find(input.impl_.get());
                if (readers != readers_left.end() && --readers->second == 0) watch.leaf_done(input);
            }
        if (watch.after_node) watch.after_node();
        share_cores();  // a long step meets another process's load within it (threads.hpp)
        // Every consumer of `out` ran before it, so nothing needs its node or its gradient
        // any more. Dropping them now (and our handle on `out`) frees each activation and
        // gradient as soon as the backward has passed it: the peak memory is about the
        // forward pass's, not the forward's plus every gradient. Leaves keep their gradients.
        out.set_grad_fn(nullptr);
        if (!out.same_as(*this)) out.impl_->grad = Tensor();
        out = Tensor();
    }
}

}  // namespace tinyformer
