// AdamW with decoupled weight decay on matrices only, a linear warm-up then cosine decay of
// the learning rate, and global-norm gradient clipping — the same recipe as the PyTorch
// reference's `train`.
#pragma once

#include <cstdint>
#include <vector>

#include "tinyformer/engine/parameters.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer {

// Learning rate at step `step` (0-based) of `total_steps`:
//   step < warmup:  lr * (step + 1) / (warmup + 1)
//   after:          min_lr + (lr - min_lr) * (1 + cos(pi * r)) / 2,  r = (step - warmup) / (total - warmup)
double learning_rate(const OptimConfig& optim, int64_t step, int64_t total_steps);

// Scales every gradient by min(1, max_norm / ||g||) and returns ||g|| before clipping.
double clip_grad_norm(Parameters& params, double max_norm);

class AdamW {
public:
    AdamW(Parameters& params, const OptimConfig& optim);

    // One update with learning rate `lr`, from the gradients in params' gradient arena:
    //   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g²
    //   p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)  +  lr * wd * p  (matrices only)
    void step(double lr);

    int64_t steps_taken() const { return t_; }
    void set_steps_taken(int64_t t) { t_ = t; }
    Tensor& first_moment() { return m_; }   // [count], f32 like the parameters
    Tensor& second_moment() { return v_; }  // [count]

private:
    Parameters& params_;
    OptimConfig optim_;
    Tensor m_, v_;
    std::vector<uint8_t> decays_;  // per element: 1 where weight decay applies (matrices)
    int64_t t_ = 0;
};

}  // namespace tinyformer
