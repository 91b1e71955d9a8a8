#include "tinyformer/train/optim.hpp"

#include "tinyformer/engine/optimizer_kernels.hpp"

#include <algorithm>
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

// The gradient arena is worked on in a fixed number of chunks, whatever the thread count.
constexpr int64_t kChunks = 64;
static int64_t chunk_start(int64_t n, int64_t c) { return n * c / kChunks; }

// ||g||², each chunk by the kernel's fixed order, then the chunks in order, so that it is the
// same to the bit whatever the thread count: OpenMP's own reduction adds the threads' partial
// sums in whatever order they finish.
static double squared_norm(const float* g, int64_t n) {
    double chunk_sums[kChunks] = {};
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t c = 0; c < kChunks; ++c)
        chunk_sums[c] = sum_of_squares(g + chunk_start(n, c), chunk_start(n, c + 1) - chunk_start(n, c));
    double total = 0;
    for (double chunk_sum : chunk_sums) total += chunk_sum;
    return total;
}

double clip_grad_norm(Parameters& params, double max_norm) {
    Tensor grads = params.gradients();
    float* g = grads.data<float>();
    const int64_t n = grads.numel();
    const double norm = std::sqrt(squared_norm(g, n));
    if (max_norm > 0 && norm > max_norm) {
        const float factor = static_cast<float>(max_norm / (norm + 1e-6));
#pragma omp parallel for schedule(static) if (n > (1 << 16))
        for (int64_t c = 0; c < kChunks; ++c)
            scale_in_place(g + chunk_start(n, c), factor, chunk_start(n, c + 1) - chunk_start(n, c));
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

    const AdamWStep this_step{.decay = decay, .beta1 = fb1, .beta2 = fb2, .step_size = step_size,
                              .inv_sqrt_bias2 = inv_sqrt_bias2, .eps = eps};
    float* p = params_.values().data<float>();
    const float* g = params_.gradients().data<float>();
    float* m = m_.data<float>();
    float* v = v_.data<float>();
    const uint8_t* decays = decays_.data();
    const int64_t n = params_.count();
    // The update is engine/optimizer_kernels' (in AVX-512, AVX2 or SSE4 registers, whichever
    // this CPU has), over spans the threads share. Each element on its own: any split over
    // threads gives the same numbers.
    constexpr int64_t span = 1 << 14;
    const int64_t spans = (n + span - 1) / span;
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t s = 0; s < spans; ++s) {
        const int64_t begin = s * span;
        adamw_update(this_step, p + begin, g + begin, m + begin, v + begin, decays + begin, std::min(span, n - begin));
    }
}

}  // namespace tinyformer
