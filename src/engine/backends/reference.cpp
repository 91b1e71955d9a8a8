// The reference backend: plain loops and Eigen, for f32 and f64. Written to be read and
// trusted, not to be fast; every other backend is checked against it.
// GCC 12 warns "may be used uninitialized" inside its own AVX-512 intrinsics when Eigen
// instantiates them (a false positive in the compiler's headers, not in this file).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#include <cmath>
#include <stdexcept>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/bf16.hpp"

namespace tinyformer {
namespace {

// Runs fn(T{}) with T = float or double, per the tensor's element type.
template <class Fn>
void with_real_type(const Tensor& t, Fn&& fn) {
    if (t.dtype() == DType::f32) fn(float{});
    else if (t.dtype() == DType::f64) fn(double{});
    else throw std::invalid_argument(std::string("kernel needs f32 or f64, got ") + dtype_name(t.dtype()));
}

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixMap = Eigen::Map<RowMatrix<T>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const RowMatrix<T>>;

// Element strides of `shape` when broadcast (right-aligned) to `out_shape`: 0 on broadcast axes.
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out_shape) {
    size_t rank = out_shape.size(), offset = rank - shape.size();
    std::vector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        strides[offset + i] = shape[i] == 1 ? 0 : stride;
        stride *= shape[i];
    }
    return strides;
}

// Calls fn(out_index, a_index, b_index) for every element of out_shape.
template <class Fn>
void for_each_broadcast(const Shape& out_shape, const Shape& a_shape, const Shape& b_shape, Fn&& fn) {
    std::vector<int64_t> sa = broadcast_strides(a_shape, out_shape), sb = broadcast_strides(b_shape, out_shape);
    size_t rank = out_shape.size();
    std::vector<int64_t> index(rank, 0);
    int64_t ia = 0, ib = 0, n = numel_of(out_shape);
    for (int64_t i = 0; i < n; ++i) {
        fn(i, ia, ib);
        for (size_t axis = rank; axis-- > 0;) {  // odometer increment
            if (++index[axis] < out_shape[axis]) {
                ia += sa[axis];
                ib += sb[axis];
                break;
            }
            ia -= sa[axis] * (out_shape[axis] - 1);
            ib -= sb[axis] * (out_shape[axis] - 1);
            index[axis] = 0;
        }
    }
}

// A bf16 tensor's values as float32 (exactly: every bfloat16 is a float32).
Tensor widened_from_bf16(const Tensor& t) {
    Tensor out = Tensor::empty(t.shape(), DType::f32);
    const uint16_t* from = t.data<uint16_t>();
    float* to = out.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) to[i] = from_bf16_bits(from[i]);
    return out;
}

class ReferenceBackend final : public Backend {
public:
    std::string name() const override { return "reference"; }

    void to_bf16(const Tensor& x, Tensor& out) override {
        const float* from = x.data<float>();
        uint16_t* to = out.data<uint16_t>();
        for (int64_t i = 0; i < x.numel(); ++i) to[i] = to_bf16_bits(from[i]);
    }

    void gemm(const Tensor& a_in, const Tensor& b_in, Tensor& c, const GemmSpec& s) override {
        // bf16 operands: the float32 product of their values (what a bf16 kernel computes, up
        // to the order of its float32 sums).
        const bool bf16 = a_in.dtype() == DType::bf16;
        const Tensor a = bf16 ? widened_from_bf16(a_in) : a_in, b = bf16 ? widened_from_bf16(b_in) : b_in;
        with_real_type(c, [&](auto zero) {
            using T = decltype(zero);
            for (int64_t i = 0; i < s.batch; ++i) {
                int64_t a_rows = s.trans_a ? s.K : s.M, a_cols = s.trans_a ? s.M : s.K;
                int64_t b_rows = s.trans_b ? s.N : s.K, b_cols = s.trans_b ? s.K : s.N;
                ConstMatrixMap<T> A(a.data<T>() + i * s.stride_a, a_rows, a_cols);
                ConstMatrixMap<T> B(b.data<T>() + i * s.stride_b, b_rows, b_cols);
                MatrixMap<T> C(c.data<T>() + i * s.stride_c, s.M, s.N);
                bool overwrite = !s.accumulate && !(s.stride_c == 0 && i > 0);
                if (overwrite) C.setZero();
                const T alpha = static_cast<T>(s.alpha);
                if (!s.trans_a && !s.trans_b) C.noalias() += alpha * A * B;
                else if (s.trans_a && !s.trans_b) C.noalias() += alpha * A.transpose() * B;
                else if (!s.trans_a && s.trans_b) C.noalias() += alpha * A * B.transpose();
                else C.noalias() += alpha * A.transpose() * B.transpose();
            }
        });
    }

    void add(const Tensor& a, const Tensor& b, Tensor& out) override {
        with_real_type(out, [&](auto zero) {
            using T = decltype(zero);
            const T *pa = a.data<T>(), *pb = b.data<T>();
            T* po = out.data<T>();
            for_each_broadcast(out.shape(), a.shape(), b.shape(),
                               [&](int64_t i, int64_t ia, int64_t ib) { po[i] = pa[ia] + pb[ib]; });
        });
    }

    void mul(const Tensor& a, const Tensor& b, Tensor& out) override {
        with_real_type(out, [&](auto zero) {
            using T = decltype(zero);
            const T *pa = a.data<T>(), *pb = b.data<T>();
            T* po = out.data<T>();
            for_each_broadcast(out.shape(), a.shape(), b.shape(),
                               [&](int64_t i, int64_t ia, int64_t ib) { po[i] = pa[ia] * pb[ib]; });
        });
    }

    void sum_to(const Tensor& in, Tensor& out) override {
        with_real_type(out, [&](auto zero) {
            using T = decltype(zero);
            const T* pi = in.data<T>();
            T* po = out.data<T>();
            std::fill(po, po + out.numel(), T(0));
            for_each_broadcast(in.shape(), out.shape(), out.shape(),
                               [&](int64_t i, int64_t io, int64_t) { po[io] += pi[i]; });
        });
    }

    void scale(const Tensor& x, double factor, Tensor& out) override {
        with_real_type(out, [&](auto zero) {
            using T = decltype(zero);
            const T* px = x.data<T>();
            T* po = out.data<T>();
            for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = static_cast<T>(factor) * px[i];
        });
    }

    void add_inplace(Tensor& dst, const Tensor& src) override {
        with_real_type(dst, [&](auto zero) {
            using T = decltype(zero);
            const T* ps = src.data<T>();
            T* pd = dst.data<T>();
            for (int64_t i = 0, n = dst.numel(); i < n; ++i) pd[i] += ps[i];
        });
    }

    void transpose(const Tensor& x, int dim0, int dim1, Tensor& out) override {
        // out[..., j, ..., i, ...] = x[..., i, ..., j, ...]: walk out in order and read x
        // through x's strides with the two axes exchanged.
        const Shape& in_shape = x.shape();
        size_t rank = in_shape.size();
        std::vector<int64_t> in_strides(rank, 1);
        for (size_t axis = rank - 1; axis-- > 0;) in_strides[axis] = in_strides[axis + 1] * in_shape[axis + 1];
        std::vector<int64_t> read_strides = in_strides;
        std::swap(read_strides[dim0], read_strides[dim1]);
        with_real_type(out, [&](auto zero) {
            using T = decltype(zero);
            const T* px = x.data<T>();
            T* po = out.data<T>();
            const Shape& out_shape = out.shape();
            std::vector<int64_t> index(rank, 0);
            int64_t source = 0;
            for (int64_t i = 0, n = out.numel(); i < n; ++i) {
                po[i] = px[source];
                for (size_t axis = rank; axis-- > 0;) {
                    if (++index[axis] < out_shape[axis]) { source += read_strides[axis]; break; }
                    source -= read_strides[axis] * (out_shape[axis] - 1);
                    index[axis] = 0;
                }
            }
        });
    }

    void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out) override {
        int64_t D = table.dim(1);
        const int32_t* pid = ids.data<int32_t>();
        with_real_type(out, [&](auto zero) {
            using T = decltype(zero);
            for (int64_t n = 0; n < ids.numel(); ++n)
                std::copy_n(table.data<T>() + pid[n] * D, D, out.data<T>() + n * D);
        });
    }

    void embedding_backward(const Tensor& ids, const Tensor& d_out, Tensor& d_table) override {
        int64_t D = d_table.dim(1);
        const int32_t* pid = ids.data<int32_t>();
        with_real_type(d_table, [&](auto zero) {
            using T = decltype(zero);
            T* pd = d_table.data<T>();
            std::fill(pd, pd + d_table.numel(), T(0));
            const T* pg = d_out.data<T>();
            for (int64_t n = 0; n < ids.numel(); ++n)  // a repeated id accumulates
                for (int64_t c = 0; c < D; ++c) pd[pid[n] * D + c] += pg[n * D + c];
        });
    }

    void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) override {
        int64_t C = x.dim(-1), N = x.numel() / C;
        with_real_type(x, [&](auto zero) {
            using T = decltype(zero);
            const T *px = x.data<T>(), *pw = weight.data<T>(), *pb = bias.data<T>();
            T *py = y.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>();
            for (int64_t n = 0; n < N; ++n) {
                const T* row = px + n * C;
                double m = 0, v = 0;
                for (int64_t c = 0; c < C; ++c) m += row[c];
                m /= C;
                for (int64_t c = 0; c < C; ++c) v += (row[c] - m) * (row[c] - m);
                v /= C;  // biased variance, as PyTorch
                double r = 1.0 / std::sqrt(v + eps);
                for (int64_t c = 0; c < C; ++c) py[n * C + c] = static_cast<T>((row[c] - m) * r * pw[c] + pb[c]);
                pm[n] = static_cast<T>(m);
                pr[n] = static_cast<T>(r);
            }
        });
    }

    void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                             const Tensor& dy, Tensor& dx, Tensor& d_weight, Tensor& d_bias) override {
        int64_t C = x.dim(-1), N = x.numel() / C;
        with_real_type(x, [&](auto zero) {
            using T = decltype(zero);
            const T *px = x.data<T>(), *pw = weight.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>();
            const T* pdy = dy.data<T>();
            T *pdx = dx.data<T>(), *pdw = d_weight.data<T>(), *pdb = d_bias.data<T>();
            std::fill(pdw, pdw + C, T(0));
            std::fill(pdb, pdb + C, T(0));
            for (int64_t n = 0; n < N; ++n) {
                // With x̂ = (x - mean) * rstd and g = dy * weight:
                // dx = rstd * (g - mean(g) - x̂ * mean(g * x̂))
                double mean_g = 0, mean_g_xhat = 0;
                for (int64_t c = 0; c < C; ++c) {
                    double xhat = (px[n * C + c] - pm[n]) * pr[n];
                    double g = pdy[n * C + c] * pw[c];
                    mean_g += g;
                    mean_g_xhat += g * xhat;
                    pdw[c] += static_cast<T>(pdy[n * C + c] * xhat);
                    pdb[c] += pdy[n * C + c];
                }
                mean_g /= C;
                mean_g_xhat /= C;
                for (int64_t c = 0; c < C; ++c) {
                    double xhat = (px[n * C + c] - pm[n]) * pr[n];
                    double g = pdy[n * C + c] * pw[c];
                    pdx[n * C + c] = static_cast<T>(pr[n] * (g - mean_g - xhat * mean_g_xhat));
                }
            }
        });
    }

    void gelu_forward(const Tensor& x, Tensor& y) override {
        with_real_type(x, [&](auto zero) {
            using T = decltype(zero);
            const T* px = x.data<T>();
            T* py = y.data<T>();
            const T k = static_cast<T>(std::sqrt(2.0 / M_PI));
            for (int64_t i = 0, n = x.numel(); i < n; ++i) {
                T u = px[i];
                py[i] = T(0.5) * u * (T(1) + std::tanh(k * (u + T(0.044715) * u * u * u)));
            }
        });
    }

    void gelu_backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
        with_real_type(x, [&](auto zero) {
            using T = decltype(zero);
            const T *px = x.data<T>(), *pdy = dy.data<T>();
            T* pdx = dx.data<T>();
            const T k = static_cast<T>(std::sqrt(2.0 / M_PI));
            for (int64_t i = 0, n = x.numel(); i < n; ++i) {
                T u = px[i];
                T t = std::tanh(k * (u + T(0.044715) * u * u * u));
                T dt = (T(1) - t * t) * k * (T(1) + T(3 * 0.044715) * u * u);
                pdx[i] = pdy[i] * (T(0.5) * (T(1) + t) + T(0.5) * u * dt);
            }
        });
    }

    void softmax_forward(const Tensor& x, bool causal, Tensor& y) override {
        int64_t Tk = x.dim(-1), Tq = x.rank() >= 2 ? x.dim(-2) : 1, rows = x.numel() / Tk;
        with_real_type(x, [&](auto zero) {
            using T = decltype(zero);
            const T* px = x.data<T>();
            T* py = y.data<T>();
            for (int64_t r = 0; r < rows; ++r) {
                int64_t query = r % Tq;
                int64_t visible = causal ? std::min(Tk, query + (Tk - Tq) + 1) : Tk;
                const T* in = px + r * Tk;
                T* out = py + r * Tk;
                T max = in[0];
                for (int64_t j = 1; j < visible; ++j) max = std::max(max, in[j]);
                T sum = 0;
                for (int64_t j = 0; j < visible; ++j) sum += out[j] = std::exp(in[j] - max);
                for (int64_t j = 0; j < visible; ++j) out[j] /= sum;
                for (int64_t j = visible; j < Tk; ++j) out[j] = 0;  // the future: exactly 0
            }
        });
    }

    void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
        int64_t Tk = y.dim(-1), rows = y.numel() / Tk;
        with_real_type(y, [&](auto zero) {
            using T = decltype(zero);
            const T *py = y.data<T>(), *pdy = dy.data<T>();
            T* pdx = dx.data<T>();
            for (int64_t r = 0; r < rows; ++r) {  // dx = y * (dy - sum(dy * y))
                T dot = 0;
                for (int64_t j = 0; j < Tk; ++j) dot += pdy[r * Tk + j] * py[r * Tk + j];
                for (int64_t j = 0; j < Tk; ++j) pdx[r * Tk + j] = py[r * Tk + j] * (pdy[r * Tk + j] - dot);
            }
        });
    }

    void qkv_to_heads(const Tensor& qkv, int64_t n_heads, bool rope, int64_t start, Tensor& heads) override {
        move_qkv(qkv, heads, n_heads, rope, start, /*to_heads=*/true);
    }
    void heads_to_qkv(const Tensor& d_heads, bool rope, int64_t start, Tensor& d_qkv) override {
        move_qkv(d_qkv, d_heads, d_heads.dim(2), rope, start, /*to_heads=*/false);
    }

    // Moves each (part, b, h, t) row of d numbers between qkv [B,T,3D] and heads
    // [3,B,H,T,d], rotating q's and k's pairs by +theta on the way to the heads and by -theta
    // on the way back (a rotation's gradient is the inverse rotation).
    static void move_qkv(const Tensor& qkv, const Tensor& heads, int64_t H, bool rope, int64_t start, bool to_heads) {
        const int64_t B = qkv.dim(0), T_len = qkv.dim(1), D = qkv.dim(2) / 3, d = D / H, half = d / 2;
        const RotationTable table = rotation_table(start, T_len, d, /*inverse=*/!to_heads);
        with_real_type(qkv, [&](auto zero) {
            using T = decltype(zero);
            T* pq = const_cast<T*>(qkv.data<T>());
            T* ph = const_cast<T*>(heads.data<T>());
            for (int64_t part = 0; part < 3; ++part)
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t h = 0; h < H; ++h)
                        for (int64_t t = 0; t < T_len; ++t) {
                            T* row_qkv = pq + (b * T_len + t) * 3 * D + part * D + h * d;
                            T* row_heads = ph + (((part * B + b) * H + h) * T_len + t) * d;
                            const T* from = to_heads ? row_qkv : row_heads;
                            T* to = to_heads ? row_heads : row_qkv;
                            if (!rope || part == 2) {  // v is not rotated
                                std::copy_n(from, d, to);
                                continue;
                            }
                            for (int64_t j = 0; j < half; ++j) {
                                const T c = static_cast<T>(table.cos[t * half + j]), s = static_cast<T>(table.sin[t * half + j]);
                                const T u0 = from[2 * j], u1 = from[2 * j + 1];
                                to[2 * j] = u0 * c - u1 * s;
                                to[2 * j + 1] = u0 * s + u1 * c;
                            }
                        }
        });
    }

    // cos and sin of theta = (start + t) * 10000^(-2j/d) for t < T, j < d/2, in double (then
    // rounded to the tensor's type, as the PyTorch reference does); sin negated for the
    // inverse rotation.
    struct RotationTable {
        std::vector<double> cos, sin;  // [T, d/2]
    };
    static RotationTable rotation_table(int64_t start, int64_t T_len, int64_t d, bool inverse) {
        RotationTable table{std::vector<double>(T_len * (d / 2)), std::vector<double>(T_len * (d / 2))};
        for (int64_t t = 0; t < T_len; ++t)
            for (int64_t j = 0; j < d / 2; ++j) {
                const double theta = static_cast<double>(start + t) * std::pow(10000.0, -2.0 * j / d);
                table.cos[t * (d / 2) + j] = std::cos(theta);
                table.sin[t * (d / 2) + j] = inverse ? -std::sin(theta) : std::sin(theta);
            }
        return table;
    }

    void rope(const Tensor& x, int64_t start, bool inverse, Tensor& out) override {
        const int64_t d = x.dim(-1), T_len = x.dim(-2), rows = x.numel() / d, half = d / 2;
        const RotationTable table = rotation_table(start, T_len, d, inverse);
        with_real_type(x, [&](auto zero) {
            using T = decltype(zero);
            const T* px = x.data<T>();
            T* po = out.data<T>();
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t t = r % T_len;
                for (int64_t j = 0; j < half; ++j) {
                    const T c = static_cast<T>(table.cos[t * half + j]), s = static_cast<T>(table.sin[t * half + j]);
                    const T u0 = px[r * d + 2 * j], u1 = px[r * d + 2 * j + 1];
                    po[r * d + 2 * j] = u0 * c - u1 * s;
                    po[r * d + 2 * j + 1] = u0 * s + u1 * c;
                }
            }
        });
    }

    void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& probs) override {
        int64_t V = logits.dim(-1), N = logits.numel() / V;
        const int32_t* pt = targets.data<int32_t>();
        with_real_type(logits, [&](auto zero) {
            using T = decltype(zero);
            const T* pl = logits.data<T>();
            T* pp = probs.data<T>();
            double total = 0;
            for (int64_t n = 0; n < N; ++n) {
                const T* row = pl + n * V;
                T max = *std::max_element(row, row + V);
                double sum = 0;
                for (int64_t v = 0; v < V; ++v) sum += pp[n * V + v] = std::exp(row[v] - max);
                for (int64_t v = 0; v < V; ++v) pp[n * V + v] = static_cast<T>(pp[n * V + v] / sum);
                // -log softmax[target] = log(sum exp(row - max)) - (row[target] - max)
                total += std::log(sum) - (row[pt[n]] - max);
            }
            loss.data<T>()[0] = static_cast<T>(total / N);
        });
    }

    void cross_entropy_backward(const Tensor& probs, const Tensor& targets, double d_loss, Tensor& d_logits) override {
        int64_t V = probs.dim(-1), N = probs.numel() / V;
        const int32_t* pt = targets.data<int32_t>();
        with_real_type(probs, [&](auto zero) {
            using T = decltype(zero);
            const T* pp = probs.data<T>();
            T* pd = d_logits.data<T>();
            T g = static_cast<T>(d_loss / N);
            for (int64_t n = 0; n < N; ++n)
                for (int64_t v = 0; v < V; ++v)
                    pd[n * V + v] = g * (pp[n * V + v] - (v == pt[n] ? T(1) : T(0)));
        });
    }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace tinyformer
