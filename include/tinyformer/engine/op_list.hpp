// The differentiable ops, listed once. Three places read this list, and fail when an op is
// missing from it or from them: the gradient checks (src/model/gradcheck.cpp, run by
// tests/test_gradcheck.cpp), the backend parity table (tests/test_backend_parity.cpp), and a
// test that compares it with the functions declared in ops.hpp.
//
// Adding an op — the checklist (each step's test named in brackets):
//   1. Declare it in include/tinyformer/engine/ops.hpp, with its shapes in a comment.
//   2. Write src/engine/ops/<op>.cpp: the forward, then record(result, "<op>", inputs,
//      backward) with the backward beside it. The node's name is the function's name.
//   3. Add the file to tinyformer_layer(engine ...) in CMakeLists.txt.
//   4. Add it to kOps below.                    [gradcheck: "ops.hpp and the op list agree"]
//   5. If it needs a kernel of its own: a virtual in engine/backend.hpp, defined in
//      src/engine/backends/reference.cpp (the plain loops that define it), made fast in
//      own_kernels_backend.cpp when our own kernels compute it (an OpenMP loop around a
//      Highway kernel), in onednn.cpp when oneDNN does (a product, a oneDNN primitive), or
//      inherited (Backend's composition of other kernels), and passed on in profiling.cpp,
//      which overrides every virtual so that `bench --profile` times it.
//   6. A check in run_gradcheck_suite (src/model/gradcheck.cpp), odd sizes and broadcasting
//      included.                                [gradcheck: "the suite covers every op"]
//   7. A row in op_cases() of tests/test_backend_parity.cpp. [parity: "... on every op"]
//   8. If the model uses it, all three forward passes: model.cpp (training), decoder.cpp
//      (sampling with the key/value cache) and src/inspect/traced_forward.cpp (inspect);
//      test_decoder.cpp and test_inspect.cpp compare them with the first.
//   9. docs/internals.md's engine table, if it is a new file.
#pragma once

#include <string_view>

namespace tinyformer {

struct OpEntry {
    std::string_view name;        // the function in ops.hpp, and the name record() gives its node
    std::string_view source;      // its forward and backward, under src/engine/ops/
    std::string_view built_from;  // empty: a backward of its own; else the ops it is composed of,
                                  // whose backwards give its gradient (and whose checks cover it)
};

inline constexpr OpEntry kOps[] = {
    {"matmul", "matmul.cpp", ""},
    {"linear", "matmul.cpp", ""},
    {"residual_linear", "matmul.cpp", ""},
    {"add", "elementwise.cpp", ""},
    {"mul", "elementwise.cpp", ""},
    {"scale", "elementwise.cpp", ""},
    {"reshape", "shape_ops.cpp", ""},
    {"transpose", "shape_ops.cpp", ""},
    {"select", "shape_ops.cpp", ""},
    {"split_heads", "shape_ops.cpp", "reshape transpose"},
    {"merge_heads", "shape_ops.cpp", "transpose reshape"},
    {"embedding", "embedding.cpp", ""},
    {"layer_norm", "layer_norm.cpp", ""},
    {"gelu", "gelu.cpp", ""},
    {"softmax", "softmax.cpp", ""},
    {"scaled_dot_product_attention", "scaled_dot_product_attention.cpp", ""},
    {"self_attention", "self_attention.cpp", ""},
    {"rope", "rope.cpp", ""},
    {"cross_entropy", "cross_entropy.cpp", ""},
    {"linear_cross_entropy", "linear_cross_entropy.cpp", ""},
};

// The entry named `name`, or nullptr.
inline const OpEntry* find_op(std::string_view name) {
    for (const OpEntry& op : kOps)
        if (op.name == name) return &op;
    return nullptr;
}

}  // namespace tinyformer
