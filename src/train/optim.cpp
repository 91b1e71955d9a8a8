#include "tinyformer/train/optim.hpp"

#include <cmath>
#include <stdexcept>

namespace tinyformer {

double learning_rate(const OptimConfig& optim, int64_t step, int64_t total_steps) {
    if (step < optim.warmup_steps)
        return optim.lr * static_cast<double>(step + 1) / static_cast<double>(optim.warmup_steps + 1);
    const double decay_steps = std::max<int64_t>(1, total_steps - optim.warmup_steps);
    const double r = std::min(1.0, static_cast<double>(step - optim.warmup_steps) / decay_steps);
    return optim.min_lr + 0.5 * (1.0 + std::cos(M_PI * r)) * (optim.lr - optim.min_lr);
}

// ||g||², summed in a fixed number of chunks (each in order, then the chunks in order), so
// that it is the same to the bit whatever the thread count: OpenMP's own reduction adds
// the threads' partial sums in whatever order they finish.
static double sum_of_squares(const float* g, int64_t n) {
    constexpr int64_t kChunks = 64, kLanes = 8;
    double chunk_sums[kChunks] = {};
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t c = 0; c < kChunks; ++c) {
        const int64_t begin = n * c / kChunks, end = n * (c + 1) / kChunks;
        // Eight running sums, element i going to lane i % 8: independent adds the compiler
        // can put in one vector (a single running sum is a chain of dependent adds), in an
        // order fixed by the data alone, so the result is the same for any thread count.
        double lanes[kLanes] = {};
        int64_t i = begin;
        for (; i + kLanes <= end; i += kLanes)
            for (int64_t l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(g[i + l]) * g[i + l];
        for (; i < end; ++i) lanes[0] += static_cast<double>(g[i]) * g[i];
        double sum = 0;
        for (double lane : lanes) sum += lane;
        chunk_sums[c] = sum;
    }
    double total = 0;
    for (double chunk_sum : chunk_sums) total += chunk_sum;
    return total;
}

double clip_grad_norm(Parameters& params, double max_norm) {
    Tensor grads = params.gradients();
    float* g = grads.data<float>();
    const int64_t n = grads.numel();
    const double norm = std::sqrt(sum_of_squares(g, n));
    if (max_norm > 0 && norm > max_norm) {
        const float factor = static_cast<float>(max_norm / (norm + 1e-6));
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
        for (int64_t i = 0; i < n; ++i) g[i] *= factor;
    }
    return norm;
}

AdamW::AdamW(Parameters& params, const OptimConfig& optim)
    : params_(params),
      optim_(optim),
      m_(Tensor::zeros({params.count()}, DType::f32)),
      v_(Tensor::zeros({params.count()}, DType::f32)) {
    if (params.dtype() != DType::f32) throw std::invalid_argument("AdamW trains f32 parameters");
    decays_.reserve(params.count());
    for (const auto& [name, p] : params.named())
        decays_.insert(decays_.end(), p.numel(), p.rank() >= 2 ? 1 : 0);
}

void AdamW::step(double lr) {
    ++t_;
    const double b1 = optim_.beta1, b2 = optim_.beta2;
    const double bias1 = 1.0 - std::pow(b1, static_cast<double>(t_));
    const double bias2 = 1.0 - std::pow(b2, static_cast<double>(t_));
    const float step_size = static_cast<float>(lr / bias1);
    const float inv_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(bias2));
    const float decay = static_cast<float>(1.0 - lr * optim_.weight_decay);
    const float eps = static_cast<float>(optim_.eps), fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2);

    float* p = params_.values().data<float>();
    const float* g = params_.gradients().data<float>();
    float* m = m_.data<float>();
    float* v = v_.data<float>();
    const uint8_t* decays = decays_.data();
    const int64_t n = params_.count();
    // Each element on its own: any split over threads gives the same numbers.
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) {
        if (decays[i]) p[i] *= decay;  // decoupled weight decay (PyTorch applies it first)
        m[i] = fb1 * m[i] + (1 - fb1) * g[i];
        v[i] = fb2 * v[i] + (1 - fb2) * g[i] * g[i];
        p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bias2 + eps);
    }
}

}  // namespace tinyformer
