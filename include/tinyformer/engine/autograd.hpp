// The reverse-mode engine, micrograd-style.
//
// Every op computes its result, then — if grad mode is on and an input requires grad —
// attaches a Node: the inputs its backward needs and the backward itself. backward()
// sorts the graph topologically from the output, runs each node's backward in reverse
// order (each one adds into its inputs' gradients), and then frees the graph.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

// A node's backward receives the gradient of its output (and the output itself, for ops
// such as softmax whose gradient is written in terms of the result) and calls
// accumulate_grad() for each input that needs one.
using BackwardFn = std::function<void(const Tensor& grad_out, const Tensor& out)>;

struct Node {
    std::string op;              // the op's name, as listed in op_list.hpp: "matmul", "softmax", ...
    std::vector<Tensor> inputs;  // the graph's edges: the tensors this result was computed from
    BackwardFn backward;
};

// What a caller may follow while a backward runs: train/step.cpp sends each bucket of
// parameter gradients to the other processes as soon as the backward has finished it, and
// the backward goes on meanwhile (DDP's overlap). Each function may be empty.
struct BackwardWatch {
    // Once, before the first node runs: every leaf the graph reads (a parameter, or a view
    // of parameters), each once.
    std::function<void(const std::vector<Tensor>& leaves)> leaves;
    // When the last node that reads `leaf` has run: its gradient will not change again.
    std::function<void(const Tensor& leaf)> leaf_done;
    // After every node: a moment to move exchanges on.
    std::function<void()> after_node;
};

// Is grad mode on? Off inside a NoGradScope, where ops record nothing.
bool grad_enabled();

class NoGradScope {
public:
    NoGradScope();
    ~NoGradScope();
    NoGradScope(const NoGradScope&) = delete;
    NoGradScope& operator=(const NoGradScope&) = delete;

private:
    bool previous_;
};

// Records `result` as produced by op `op` from `inputs` with `backward`, when grad mode is on
// and any input requires grad; otherwise leaves it a plain tensor. Returns `result`.
Tensor record(Tensor result, const char* op, std::vector<Tensor> inputs, BackwardFn backward);

// Adds `grad` (already of `input`'s shape) into input.grad(). The first gradient to arrive
// is adopted without a copy; later ones are summed. Does nothing if input needs no grad.
void accumulate_grad(const Tensor& input, const Tensor& grad);

// Adds `part` into input.grad() at element `offset` (part is a contiguous block of input,
// as select() makes): the gradient is made input's own, zero where nothing arrived yet.
void accumulate_grad_part(const Tensor& input, int64_t offset, const Tensor& part);

// The buffer an op may add input's gradient straight into (a kernel's "+=" form), saving a
// temporary and a pass: input.grad() when it is input's own (a parameter's slice of the
// gradient arena, zeroed each step); otherwise empty, and the op uses accumulate_grad().
Tensor grad_to_add_into(const Tensor& input);

// The names of the ops whose nodes make up the graph that produced `result` (each once,
// sorted): the backwards that result.backward() would run.
std::vector<std::string> recorded_ops(const Tensor& result);

}  // namespace tinyformer
