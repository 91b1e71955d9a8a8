// embedding: out[n] = table[ids[n]]. Backward adds each row's gradient into the table row
// it was read from, so a repeated id accumulates.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor embedding(const Tensor& table, const Tensor& ids) {
    require_real("embedding", table, "table");
    if (table.rank() != 2) shape_error("embedding", "table must be [V,D], got " + shape_str(table.shape()));
    if (!ids.defined() || ids.dtype() != DType::i32) shape_error("embedding", "ids must be an i32 tensor");
    const int64_t V = table.dim(0);
    const int32_t* id = ids.data<int32_t>();
    for (int64_t n = 0; n < ids.numel(); ++n)
        if (id[n] < 0 || id[n] >= V)
            shape_error("embedding", "id " + std::to_string(id[n]) + " at position " + std::to_string(n) +
                                         " is outside the table's " + std::to_string(V) + " rows");
    Shape out_shape = ids.shape();
    out_shape.push_back(table.dim(1));
    Tensor out = empty_like(table, out_shape);  // [ids..., D]
    backend().embedding_forward(table, ids, out);
    return record(out, "embedding", {table}, [table, ids](const Tensor& d_out, const Tensor&) {
        Tensor d_table = empty_like(table, table.shape());  // [V,D]
        backend().embedding_backward(ids, d_out, d_table);
        accumulate_grad(table, d_table);
    });
}

}  // namespace tinyformer
