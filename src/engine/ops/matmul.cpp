// matmul: c = op(a) @ op(b), batched over leading axes; b may be a 2-D weight shared by
// the whole batch. linear: the nn.Linear form, h @ W^T + bias, as one op with one result.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

// Checks the operands of op(a) @ op(b) and describes the product for the backend; `out_shape`
// receives the result's shape [..., M, N].
static GemmSpec matmul_spec(const char* op, const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                            Shape& out_shape) {
    require_real(op, a, "a");
    require_real(op, b, "b");
    require_same_dtype(op, a, b);
    auto shapes = [&] { return shape_str(a.shape()) + " and " + shape_str(b.shape()); };
    if (a.rank() < 2 || b.rank() < 2) shape_error(op, "needs matrices, got " + shapes());
    bool weight = b.rank() == 2 && a.rank() > 2;  // b shared by every batch element
    if (!weight && a.rank() != b.rank()) shape_error(op, "batch ranks differ: " + shapes());

    const int64_t M = transpose_a ? a.dim(-1) : a.dim(-2);
    const int64_t K = transpose_a ? a.dim(-2) : a.dim(-1);
    const int64_t Kb = transpose_b ? b.dim(-1) : b.dim(-2);
    const int64_t N = transpose_b ? b.dim(-2) : b.dim(-1);
    if (K != Kb) shape_error(op, "inner sizes differ (" + std::to_string(K) + " vs " + std::to_string(Kb) + "): " + shapes());
    Shape batch_shape(a.shape().begin(), a.shape().end() - 2);
    if (!weight && Shape(b.shape().begin(), b.shape().end() - 2) != batch_shape)
        shape_error(op, "batch axes differ: " + shapes());

    GemmSpec spec;
    spec.batch = numel_of(batch_shape);
    spec.M = M, spec.N = N, spec.K = K;
    spec.trans_a = transpose_a, spec.trans_b = transpose_b;
    spec.stride_a = M * K, spec.stride_b = weight ? 0 : K * N, spec.stride_c = M * N;
    out_shape = batch_shape;
    out_shape.push_back(M);
    out_shape.push_back(N);
    return spec;
}

// A product's two operands as its kernels read them: a and b themselves, or in mixed precision
// their bf16 copies (product_operand), made once in the forward and kept for the backward.
struct ProductOperands {
    Tensor a, b;
};
static ProductOperands product_operands(const Tensor& a, const Tensor& b) {
    return {product_operand(a), product_operand(b)};
}

// The backward of c = alpha · op(a) @ op(b) (as `spec` describes it): adds dA and dB into a's
// and b's gradients. c = alpha A B  ⇒  dA = alpha dC B^T,  dB = alpha A^T dC (each spec below
// keeps alpha), with each operand's own transpose flag folded in; a shared weight sums its
// gradient over the batch. The products read the forward's operands `in` and dC in the
// forward's precision: in bf16, dC is converted once for both.
static void matmul_backward(const Tensor& a, const Tensor& b, const ProductOperands& in, const GemmSpec& spec,
                            const Tensor& dc_values) {
    const Tensor dc = in.a.dtype() == DType::bf16 ? bf16_copy(dc_values) : dc_values;
    if (a.requires_grad()) {
        Tensor da = empty_like(a, a.shape());
        GemmSpec s = spec;
        if (!spec.trans_a) {  // dA [M,K] = dC [M,N] @ op(B)^T
            s.M = spec.M, s.N = spec.K, s.K = spec.N;
            s.trans_a = false, s.trans_b = !spec.trans_b;
            s.stride_a = spec.stride_c, s.stride_b = spec.stride_b, s.stride_c = spec.stride_a;
            backend().gemm(dc, in.b, da, s);
        } else {  // dA [K,M] = op(B) @ dC^T
            s.M = spec.K, s.N = spec.M, s.K = spec.N;
            s.trans_a = spec.trans_b, s.trans_b = true;
            s.stride_a = spec.stride_b, s.stride_b = spec.stride_c, s.stride_c = spec.stride_a;
            backend().gemm(in.b, dc, da, s);
        }
        accumulate_grad(a, da);
    }
    if (b.requires_grad()) {
        // A weight's gradient is added straight into its slot of the gradient arena.
        Tensor own_grad = grad_to_add_into(b);
        Tensor db = own_grad.defined() ? own_grad : empty_like(b, b.shape());
        GemmSpec s = spec;
        s.accumulate = own_grad.defined();
        if (!spec.trans_b) {  // dB [K,N] = op(A)^T @ dC
            s.M = spec.K, s.N = spec.N, s.K = spec.M;
            s.trans_a = !spec.trans_a, s.trans_b = false;
            s.stride_a = spec.stride_a, s.stride_b = spec.stride_c, s.stride_c = spec.stride_b;
            backend().gemm(in.a, dc, db, s);
        } else {  // dB [N,K] = dC^T @ op(A)
            s.M = spec.N, s.N = spec.K, s.K = spec.M;
            s.trans_a = true, s.trans_b = spec.trans_a;
            s.stride_a = spec.stride_c, s.stride_b = spec.stride_a, s.stride_c = spec.stride_b;
            backend().gemm(dc, in.a, db, s);
        }
        if (!own_grad.defined()) accumulate_grad(b, db);
    }
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, double alpha) {
    Shape out_shape;
    GemmSpec spec = matmul_spec("matmul", a, b, transpose_a, transpose_b, out_shape);
    spec.alpha = alpha;
    const ProductOperands in = product_operands(a, b);
    Tensor c = empty_like(a, out_shape);
    backend().gemm(in.a, in.b, c, spec);
    return record(c, "matmul", {a, b},
                  [a, b, in, spec](const Tensor& dc, const Tensor&) { matmul_backward(a, b, in, spec, dc); });
}

// d bias = dy summed over every row, added to the bias's gradient.
static void bias_backward(const Tensor& bias, const Tensor& dy) {
    if (!bias.requires_grad()) return;
    Tensor d_bias = empty_like(bias, bias.shape());
    backend().sum_to(dy, d_bias);
    accumulate_grad(bias, d_bias);
}

// The spec of h [..., in] @ weight [out, in]^T with a bias [out], checked.
static GemmSpec linear_spec(const char* op, const Tensor& h, const Tensor& weight, const Tensor& bias,
                            Shape& out_shape) {
    const GemmSpec spec = matmul_spec(op, h, weight, false, true, out_shape);  // [..., in] @ [out, in]^T → [..., out]
    require_same_dtype(op, h, bias);
    if (bias.rank() != 1 || bias.dim(0) != spec.N)
        shape_error(op, "bias " + shape_str(bias.shape()) + " for " + std::to_string(spec.N) + " outputs");
    return spec;
}

Tensor linear(const Tensor& h, const Tensor& weight, const Tensor& bias) {
    if (!bias.defined()) return matmul(h, weight, false, true);
    Shape out_shape;
    const GemmSpec spec = linear_spec("linear", h, weight, bias, out_shape);
    // y = h W^T + bias as one kernel and one result tensor (and one buffer kept for the
    // backward) instead of a product and a sum.
    const ProductOperands in = product_operands(h, weight);
    Tensor y = empty_like(h, out_shape);
    backend().gemm_bias(in.a, in.b, bias, y, spec);
    return record(y, "linear", {h, weight, bias}, [h, weight, bias, in, spec](const Tensor& dy, const Tensor&) {
        matmul_backward(h, weight, in, spec, dy);
        bias_backward(bias, dy);
    });
}

Tensor residual_linear(const Tensor& residual, const Tensor& h, const Tensor& weight, const Tensor& bias) {
    Shape out_shape;
    const GemmSpec spec = bias.defined() ? linear_spec("residual_linear", h, weight, bias, out_shape)
                                         : matmul_spec("residual_linear", h, weight, false, true, out_shape);
    require_real("residual_linear", residual, "residual");
    require_same_dtype("residual_linear", h, residual);
    if (residual.shape() != out_shape)
        shape_error("residual_linear", "residual " + shape_str(residual.shape()) + " for an output " +
                                           shape_str(out_shape));
    // x = residual + h W^T (+ bias): the sum's gradient dy is the residual's as it is, and the
    // linear layer's backward as in linear().
    const ProductOperands in = product_operands(h, weight);
    Tensor x = empty_like(h, out_shape);
    backend().gemm_residual(in.a, in.b, bias, residual, x, spec);
    std::vector<Tensor> inputs = {residual, h, weight};
    if (bias.defined()) inputs.push_back(bias);
    return record(x, "residual_linear", std::move(inputs),
                  [residual, h, weight, bias, in, spec](const Tensor& dy, const Tensor&) {
                      accumulate_grad(residual, dy);
                      matmul_backward(h, weight, in, spec, dy);
                      if (bias.defined()) bias_backward(bias, dy);
                  });
}

}  // namespace tinyformer
