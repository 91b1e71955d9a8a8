// A backend that times another: every call is passed on unchanged and its wall time added
// to a tally kept per kernel and shape ("gemm 768×128 @ 128×512ᵀ", "layer_norm_backward
// [768,128]"). `tinyformer bench --profile` wraps the real backend in one for the timed
// training steps, so a learner can see where a step's time goes — and what is left over
// outside the kernels (autograd bookkeeping, the optimizer's own loops are kernels too).
//
// Each call also adds the bytes its arguments hold: every input read once, every output
// written once, an output it adds into (+=) read and written. That is the least memory
// traffic the kernel can have; divided by its time it gives bytes per second, which bench
// sets beside the machine's copy bandwidth: a kernel near it is bound by memory, one far
// below it by its arithmetic or its overheads.
#include "tinyformer/engine/profiling.hpp"

#include <algorithm>
#include <chrono>

namespace tinyformer {
namespace {

using Clock = std::chrono::steady_clock;

// The bytes a kernel's arguments hold, each once (an undefined tensor, e.g. no bias, none).
double bytes_of(std::initializer_list<const Tensor*> tensors) {
    double total = 0;
    for (const Tensor* t : tensors)
        if (t->defined()) total += static_cast<double>(t->numel()) * static_cast<double>(dtype_size(t->dtype()));
    return total;
}

std::string dims(const Shape& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
    return text + "]";
}

// "gemm 48× 64×32 @ 32×64ᵀ": batch, op(a)'s and op(b)'s shapes, ᵀ where stored transposed;
// "gemm bf16 ..." for bf16 operands. A batch that is one product is named as that product
// (as_one_product, backend.hpp): a weight shared by the batch (nn.Linear on [B,T,in]) as one
// product of all B·T rows, "768×128 @ 128×512ᵀ" and not "12× 64×128 @ ...", and a weight's
// gradient summed over the batch as one sum over all B·T rows, "128×768ᵀ @ 768×512 +=".
std::string gemm_name(const GemmSpec& spec, const Tensor& a) {
    const GemmSpec s = as_one_product(spec);
    std::string name = a.dtype() == DType::bf16 ? "gemm bf16 " : "gemm ";
    if (s.batch > 1) name += std::to_string(s.batch) + (s.stride_c == 0 ? "(summed)× " : "× ");
    name += std::to_string(s.M) + "×" + std::to_string(s.K) + (s.trans_a ? "ᵀ" : "") + " @ " + std::to_string(s.K) +
            "×" + std::to_string(s.N) + (s.trans_b ? "ᵀ" : "");
    if (s.alpha != 1.0) name += " scaled";
    if (s.accumulate) name += " +=";
    return name;
}

class ProfilingBackend final : public Backend {
public:
    ProfilingBackend(std::unique_ptr<Backend> inner, Profile& profile) : inner_(std::move(inner)), profile_(profile) {}
    std::unique_ptr<Backend> release() { return std::move(inner_); }

    std::string name() const override { return inner_->name(); }
    std::string bf16_unsupported() const override { return inner_->bf16_unsupported(); }

    void to_bf16(const Tensor& x, Tensor& out) override {
        timed("to_bf16 " + shape_str(x.shape()), bytes_of({&x, &out}), [&] { inner_->to_bf16(x, out); });
    }

    void gemm(const Tensor& a, const Tensor& b, Tensor& c, const GemmSpec& spec) override {
        timed(gemm_name(spec, a), bytes_of({&a, &b, &c}) + (spec.accumulate ? bytes_of({&c}) : 0), [&] { inner_->gemm(a, b, c, spec); });
    }
    void gemm_bias(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, const GemmSpec& spec) override {
        timed(gemm_name(spec, a) + " + bias", bytes_of({&a, &b, &bias, &c}), [&] { inner_->gemm_bias(a, b, bias, c, spec); });
    }
    void gemm_residual(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& residual, Tensor& c,
                       const GemmSpec& spec) override {
        timed(gemm_name(spec, a) + (bias.defined() ? " + bias" : "") + " + residual",
              bytes_of({&a, &b, &bias, &residual, &c}), [&] { inner_->gemm_residual(a, b, bias, residual, c, spec); });
    }
    void add(const Tensor& a, const Tensor& b, Tensor& out) override {
        timed("add " + dims(a.shape()) + " + " + dims(b.shape()), bytes_of({&a, &b, &out}), [&] { inner_->add(a, b, out); });
    }
    void mul(const Tensor& a, const Tensor& b, Tensor& out) override {
        timed("mul " + dims(a.shape()) + " * " + dims(b.shape()), bytes_of({&a, &b, &out}), [&] { inner_->mul(a, b, out); });
    }
    void sum_to(const Tensor& in, Tensor& out) override {
        timed("sum_to " + dims(in.shape()) + " → " + dims(out.shape()), bytes_of({&in, &out}), [&] { inner_->sum_to(in, out); });
    }
    void scale(const Tensor& x, double factor, Tensor& out) override {
        timed("scale " + dims(x.shape()), bytes_of({&x, &out}), [&] { inner_->scale(x, factor, out); });
    }
    void add_inplace(Tensor& dst, const Tensor& src) override {
        timed("add_inplace " + dims(dst.shape()), bytes_of({&dst, &dst, &src}), [&] { inner_->add_inplace(dst, src); });
    }
    void transpose(const Tensor& x, int dim0, int dim1, Tensor& out) override {
        timed("transpose " + dims(x.shape()) + " axes " + std::to_string(dim0) + "," + std::to_string(dim1),
              bytes_of({&x, &out}), [&] { inner_->transpose(x, dim0, dim1, out); });
    }
    void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out) override {
        timed("embedding_forward " + dims(out.shape()), bytes_of({&ids, &out, &out}) /* the table's rows read, as many as written */, [&] { inner_->embedding_forward(table, ids, out); });
    }
    void embedding_backward(const Tensor& ids, const Tensor& d_out, Tensor& d_table) override {
        timed("embedding_backward " + dims(d_out.shape()), bytes_of({&ids, &d_out, &d_table, &d_table}), [&] { inner_->embedding_backward(ids, d_out, d_table); });
    }
    void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) override {
        timed("layer_norm_forward " + dims(x.shape()), bytes_of({&x, &weight, &bias, &y, &mean, &rstd}),
              [&] { inner_->layer_norm_forward(x, weight, bias, eps, y, mean, rstd); });
    }
    void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                             const Tensor& dy, Tensor& dx, Tensor& d_weight, Tensor& d_bias) override {
        timed("layer_norm_backward " + dims(x.shape()),
              bytes_of({&x, &weight, &mean, &rstd, &dy, &dx, &d_weight, &d_weight, &d_bias, &d_bias}), [&] { inner_->layer_norm_backward(x, weight, mean, rstd, dy, dx, d_weight, d_bias); });
    }
    void gelu_forward(const Tensor& x, Tensor& y) override {
        timed("gelu_forward " + dims(x.shape()), bytes_of({&x, &y}), [&] { inner_->gelu_forward(x, y); });
    }
    void gelu_backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) override {
        timed("gelu_backward " + dims(x.shape()), bytes_of({&x, &y, &dy, &dx}), [&] { inner_->gelu_backward(x, y, dy, dx); });
    }
    void softmax_forward(const Tensor& x, bool causal, Tensor& y) override {
        timed(std::string(causal ? "softmax_forward causal " : "softmax_forward ") + dims(x.shape()),
              bytes_of({&x, &y}), [&] { inner_->softmax_forward(x, causal, y); });
    }
    void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
        timed("softmax_backward " + dims(y.shape()), bytes_of({&y, &dy, &dx}), [&] { inner_->softmax_backward(y, dy, dx); });
    }
    void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double alpha, bool causal,
                           Tensor& heads, Tensor& weights) override {
        timed(std::string(causal ? "attention_forward causal " : "attention_forward ") + dims(weights.shape()),
              bytes_of({&q, &k, &v, &heads, &weights}), [&] { inner_->attention_forward(q, k, v, alpha, causal, heads, weights); });
    }
    void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                            const Tensor& d_heads, double alpha, bool causal, Tensor& dq, Tensor& dk,
                            Tensor& dv) override {
        timed(std::string(causal ? "attention_backward causal " : "attention_backward ") + dims(weights.shape()),
              bytes_of({&q, &k, &v, &weights, &d_heads, &dq, &dk, &dv}), [&] { inner_->attention_backward(q, k, v, weights, d_heads, alpha, causal, dq, dk, dv); });
    }
    void self_attention_forward(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, double alpha,
                                bool causal, Tensor& merged, Tensor& weights) override {
        timed(std::string(causal ? "self_attention_forward causal " : "self_attention_forward ") +
                  dims(weights.shape()) + (rope ? " rope" : ""),
              bytes_of({&qkv, &merged, &weights}), [&] { inner_->self_attention_forward(qkv, n_heads, rope, start, alpha, causal, merged, weights); });
    }
    void self_attention_backward(const Tensor& qkv, const Tensor& weights, const Tensor& d_merged, int64_t n_heads,
                                 bool rope, int64_t start, double alpha, bool causal, Tensor& d_qkv) override {
        timed(std::string(causal ? "self_attention_backward causal " : "self_attention_backward ") +
                  dims(weights.shape()) + (rope ? " rope" : ""),
              bytes_of({&qkv, &weights, &d_merged, &d_qkv}), [&] {
                  inner_->self_attention_backward(qkv, weights, d_merged, n_heads, rope, start, alpha, causal, d_qkv);
              });
    }
    void rope(const Tensor& x, int64_t start, bool inverse, Tensor& out) override {
        timed(std::string(inverse ? "rope_backward " : "rope_forward ") + dims(x.shape()), bytes_of({&x, &out}),
              [&] { inner_->rope(x, start, inverse, out); });
    }
    void qkv_to_heads(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, Tensor& heads) override {
        timed("qkv_to_heads " + dims(qkv.shape()) + (rope ? " rope" : ""), bytes_of({&qkv, &heads}),
              [&] { inner_->qkv_to_heads(qkv, n_heads, rope, start, heads); });
    }
    void heads_to_qkv(const Tensor& d_heads, bool rope, int64_t start, Tensor& d_qkv) override {
        timed("heads_to_qkv " + dims(d_qkv.shape()) + (rope ? " rope" : ""), bytes_of({&d_heads, &d_qkv}),
              [&] { inner_->heads_to_qkv(d_heads, rope, start, d_qkv); });
    }
    void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& probs) override {
        timed("cross_entropy_forward " + dims(logits.shape()), bytes_of({&logits, &targets, &loss, &probs}),
              [&] { inner_->cross_entropy_forward(logits, targets, loss, probs); });
    }
    void cross_entropy_backward(const Tensor& probs, const Tensor& targets, double d_loss,
                                Tensor& d_logits) override {
        timed("cross_entropy_backward " + dims(probs.shape()), bytes_of({&probs, &targets, &d_logits}),
              [&] { inner_->cross_entropy_backward(probs, targets, d_loss, d_logits); });
    }

private:
    std::unique_ptr<Backend> inner_;
    Profile& profile_;

    template <class Call>
    void timed(const std::string& kernel, double bytes, Call&& call) {
        const auto start = Clock::now();
        call();
        profile_.add(kernel, std::chrono::duration<double>(Clock::now() - start).count(), bytes);
    }
};

}  // namespace

void Profile::add(const std::string& kernel, double seconds, double bytes) {
    auto found = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.kernel == kernel; });
    if (found == entries.end()) found = entries.insert(entries.end(), Entry{kernel, 0, 0.0, 0.0});
    found->calls += 1;
    found->seconds += seconds;
    found->bytes += bytes;
}

double Profile::kernel_seconds() const {
    double total = 0;
    for (const Entry& e : entries) total += e.seconds;
    return total;
}

ProfileScope::ProfileScope(Profile& profile) {
    // The wrapper takes the current backend and becomes the current one until the scope ends.
    std::unique_ptr<Backend> inner = swap_backend(nullptr);
    swap_backend(std::make_unique<ProfilingBackend>(std::move(inner), profile));
}

ProfileScope::~ProfileScope() {
    std::unique_ptr<Backend> wrapper = swap_backend(nullptr);
    swap_backend(static_cast<ProfilingBackend&>(*wrapper).release());
}

}  // namespace tinyformer
