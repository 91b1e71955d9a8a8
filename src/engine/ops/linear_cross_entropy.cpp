// The language-model head and its loss as one op, for vocabularies too large to hold every
// position's logits at once:
//
//   loss = cross_entropy(hidden Wᵀ, targets)      hidden [N,D], W [V,D], targets [N]
//
// computed a block of rows at a time. A block's logits [rows,V] exist only while the block
// is computed. With grad mode on, the block's gradients are computed right there as well,
// because the loss's gradient with respect to a block's logits needs only that block:
//
//   d_logits   = (softmax(logits) - onehot(targets)) / N       [rows,V]
//   d_hidden[rows] = d_logits W                                [rows,D]
//   d_W       += d_logitsᵀ hidden[rows]                        [V,D]
//
// So what the op keeps for its backward is d_hidden [N,D] and d_W [V,D], never [N,V]; the
// backward only scales them by the loss's own gradient (1 when loss.backward() starts here).
// This is the "fused linear cross-entropy" of Liger-Kernel; with a 6,000-character
// vocabulary and the Shakespeare batch it saves three [768,6007] buffers (55 MB) a step.
//
// A block holds at most 2^21 logits (8 MB of float32; half that made the 6,007-character
// Shakespeare step 2-5 % slower, its products over 154 rows instead of 256). When all N·V
// logits fit in one block (the lesson, Shakespeare) there is one block, and the
// op makes exactly the kernel calls linear() then cross_entropy() make (the oneDNN backend
// runs a weight shared by a batch as one [B·T,D] product), so the numbers are the same to
// the bit as that pair's.
#include <algorithm>

#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

// Rows [first, first + rows) of a contiguous [N, width] tensor, as a view.
static Tensor rows_of(const Tensor& x, int64_t width, int64_t first, int64_t rows) {
    return Tensor::view_of(x.storage(), x.offset_bytes() + first * width * dtype_size(x.dtype()), {rows, width},
                           x.dtype());
}

Tensor linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets,
                            int64_t block_logits) {
    require_real("linear_cross_entropy", hidden, "hidden");
    require_real("linear_cross_entropy", weight, "weight");
    require_same_dtype("linear_cross_entropy", hidden, weight);
    if (hidden.rank() < 2 || weight.rank() != 2 || hidden.dim(-1) != weight.dim(1))
        shape_error("linear_cross_entropy", "hidden " + shape_str(hidden.shape()) + " and weight " +
                                                shape_str(weight.shape()) + " need [..., D] and [V, D]");
    const int64_t D = weight.dim(1), V = weight.dim(0), N = hidden.numel() / D;
    const Shape rows_shape(hidden.shape().begin(), hidden.shape().end() - 1);
    if (!targets.defined() || targets.dtype() != DType::i32)
        shape_error("linear_cross_entropy", "targets must be i32 ids");
    if (targets.shape() != rows_shape)
        shape_error("linear_cross_entropy", "hidden " + shape_str(hidden.shape()) + " needs targets " +
                                                shape_str(rows_shape) + ", got " + shape_str(targets.shape()));
    if (N == 0) shape_error("linear_cross_entropy", "no positions to score");
    const int32_t* target = targets.data<int32_t>();
    for (int64_t n = 0; n < N; ++n)
        if (target[n] < 0 || target[n] >= V)
            shape_error("linear_cross_entropy", "target " + std::to_string(target[n]) + " at position " +
                                                    std::to_string(n) + " is outside the " + std::to_string(V) +
                                                    " classes");

    const bool with_grad = grad_enabled() && (hidden.requires_grad() || weight.requires_grad());
    // The products' operands in the current precision (mixed_precision.hpp): in bf16, hidden and
    // weight are converted once here, each block's d_logits as it is made.
    const Tensor hidden_in = product_operand(hidden), weight_in = product_operand(weight);
    const bool bf16 = weight_in.dtype() == DType::bf16;
    if (block_logits < 1) shape_error("linear_cross_entropy", "block_logits must be at least 1");
    // As few blocks as hold at most block_logits logits each, of (nearly) equal rows.
    const int64_t blocks = std::min(N, (N * V + block_logits - 1) / block_logits);
    const int64_t block_rows = (N + blocks - 1) / blocks;

    Tensor d_hidden = with_grad ? empty_like(hidden, {N, D}) : Tensor();  // for d_loss = 1
    Tensor d_weight = with_grad ? empty_like(weight, {V, D}) : Tensor();
    double loss_sum = 0;  // of every row's loss
    for (int64_t first = 0; first < N; first += block_rows) {
        const int64_t rows = std::min(block_rows, N - first);
        const Tensor block_hidden = rows_of(hidden_in, D, first, rows);                               // [rows,D]
        const Tensor block_targets = Tensor::view_of(targets.storage(), targets.offset_bytes() + first * 4, {rows},
                                                     DType::i32);                                     // [rows]

        GemmSpec logits_spec;  // logits [rows,V] = hidden [rows,D] @ Wᵀ
        logits_spec.M = rows, logits_spec.N = V, logits_spec.K = D, logits_spec.trans_b = true;
        Tensor logits = empty_like(hidden, {rows, V});
        backend().gemm(block_hidden, weight_in, logits, logits_spec);
        Tensor block_loss = empty_like(hidden, {});  // the block's mean
        Tensor probs = empty_like(hidden, {rows, V});
        backend().cross_entropy_forward(logits, block_targets, block_loss, probs);
        loss_sum += block_loss.item() * static_cast<double>(rows);
        if (!with_grad) continue;

        // The kernel divides by the block's rows; the loss is a mean over all N.
        Tensor d_logits = std::move(logits);  // the logits are not needed again: their buffer takes d_logits
        backend().cross_entropy_backward(probs, block_targets, static_cast<double>(rows) / static_cast<double>(N),
                                         d_logits);
        const Tensor d_logits_in = bf16 ? bf16_copy(d_logits) : d_logits;
        GemmSpec d_hidden_spec;  // d_hidden [rows,D] = d_logits [rows,V] @ W [V,D]
        d_hidden_spec.M = rows, d_hidden_spec.N = D, d_hidden_spec.K = V;
        Tensor block_d_hidden = rows_of(d_hidden, D, first, rows);
        backend().gemm(d_logits_in, weight_in, block_d_hidden, d_hidden_spec);
        GemmSpec d_weight_spec;  // d_W [V,D] (+)= d_logitsᵀ [V,rows] @ hidden [rows,D]
        d_weight_spec.M = V, d_weight_spec.N = D, d_weight_spec.K = rows, d_weight_spec.trans_a = true;
        d_weight_spec.accumulate = first > 0;
        backend().gemm(d_logits_in, block_hidden, d_weight, d_weight_spec);
    }
    Tensor loss = empty_like(hidden, {});
    if (loss.dtype() == DType::f32) loss.data<float>()[0] = static_cast<float>(loss_sum / static_cast<double>(N));
    else loss.data<double>()[0] = loss_sum / static_cast<double>(N);
    if (!with_grad) return loss;

    return record(loss, "linear_cross_entropy", {hidden, weight},
                  [hidden, weight, d_hidden, d_weight](const Tensor& d_loss, const Tensor&) {
                      const double g = d_loss.item();
                      auto scaled = [g](const Tensor& grad) {  // grad · d_loss (as it is when d_loss = 1)
                          if (g == 1.0) return grad;
                          Tensor out = empty_like(grad, grad.shape());
                          backend().scale(grad, g, out);
                          return out;
                      };
                      if (hidden.requires_grad())
                          accumulate_grad(hidden, scaled(Tensor::view_of(d_hidden.storage(), d_hidden.offset_bytes(),
                                                                         hidden.shape(), hidden.dtype())));  // [...,D]
                      if (weight.requires_grad()) {
                          const Tensor own_grad = grad_to_add_into(weight);  // a parameter's slot in the arena
                          if (own_grad.defined()) {
                              Tensor slot = own_grad;
                              backend().add_inplace(slot, scaled(d_weight));
                          } else {
                              accumulate_grad(weight, scaled(d_weight));
                          }
                      }
                  });
}

}  // namespace tinyformer
