// Mean cross-entropy from logits, with a stable log-sum-exp:
// loss = mean_n [ log sum_v exp(logits[n,v]) - logits[n, target[n]] ].
// Backward: d_logits = (softmax(logits) - onehot(target)) * d_loss / N.
#include "op_util.hpp"

namespace tinyformer {
using namespace detail;

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
    require_real("cross_entropy", logits, "logits");
    if (!targets.defined() || targets.dtype() != DType::i32) shape_error("cross_entropy", "targets must be i32 ids");
    const int64_t V = logits.dim(-1);
    Shape rows(logits.shape().begin(), logits.shape().end() - 1);
    if (targets.shape() != rows)
        shape_error("cross_entropy", "logits " + shape_str(logits.shape()) + " need targets " + shape_str(rows) +
                                         ", got " + shape_str(targets.shape()));
    if (targets.numel() == 0) shape_error("cross_entropy", "no positions to score");
    const int32_t* target = targets.data<int32_t>();
    for (int64_t n = 0; n < targets.numel(); ++n)
        if (target[n] < 0 || target[n] >= V)
            shape_error("cross_entropy", "target " + std::to_string(target[n]) + " at position " + std::to_string(n) +
                                             " is outside the " + std::to_string(V) + " classes");
    Tensor loss = empty_like(logits, {});  // a scalar
    Tensor probs = empty_like(logits, logits.shape());
    backend().cross_entropy_forward(logits, targets, loss, probs);
    return record(loss, "cross_entropy", {logits}, [logits, targets, probs](const Tensor& d_loss, const Tensor&) {
        Tensor d_logits = empty_like(logits, logits.shape());
        backend().cross_entropy_backward(probs, targets, d_loss.item(), d_logits);
        accumulate_grad(logits, d_logits);
    });
}

}  // namespace tinyformer
