#include "tinyformer/train/step.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/progress.hpp"

namespace tinyformer {

namespace {

using Clock = std::chrono::steady_clock;

// The gradient arena is summed in buckets of this many floats (4 MB), as DDP sums in buckets
// (of 25 MB). Open MPI 4.1 sums one 43 MB buffer (nanoGPT's shakespeare-char shape) over
// shared memory in 106 ms and the same in pieces of 1 M floats in 8 ms (2 processes, 2026-12-05).
constexpr int64_t kBucketFloats = 1 << 20;

// The gradients of every process summed: each process's backward started from its mean loss
// divided by N (see train_step), so the sum is the gradient of the mean over all their
// windows, the shares being equal. With it, the loss, summed the same way.
double exchange(Parameters& params, double& loss) {
    const int processes = world_size();
    if (processes == 1) return 0;
    const Clock::time_point start = Clock::now();
    Tensor gradients = params.gradients();
    float* g = gradients.data<float>();
    const int64_t n = gradients.numel();
    for (int64_t at = 0; at < n; at += kBucketFloats) all_reduce_sum(g + at, std::min(kBucketFloats, n - at));
    all_reduce_sum(&loss, 1);
    loss /= processes;
    return seconds_since(start);
}

}  // namespace

std::vector<int64_t> this_process_share(const std::vector<int64_t>& starts) {
    const int64_t batch = static_cast<int64_t>(starts.size()), processes = world_size();
    if (batch % processes != 0)
        throw InputError("train.batch_size = " + std::to_string(batch) + " is not divisible by the " +
                         std::to_string(processes) + " processes: each takes an equal share of every batch; use a "
                         "multiple of " + std::to_string(processes));
    const int64_t share = batch / processes, first = rank() * share;
    return {starts.begin() + first, starts.begin() + first + share};
}

StepOutcome train_step(Transformer& model, AdamW& adam, const Batch& share, const StepSettings& settings) {
    StepOutcome outcome;
    Parameters& params = model.parameters();
    params.zero_grad();
    double loss_value = 0;  // this process's mean loss, then every process's
    {
        // The step's matrix products in the settings' precision (evaluations stay float32); the
        // scope ends before the optimizer changes the parameters whose bf16 copies it holds.
        const MatmulPrecisionScope precision(settings.precision);
        Tensor loss = model.loss(share.inputs, share.targets);
        loss_value = loss.item();
        if (world_size() > 1) {
            // 1/N here, on one number, rather than on every gradient after the sum.
            scale(loss, 1.0 / world_size()).backward();
        } else if (std::isfinite(loss_value)) {  // alone, a lost step costs nothing
            loss.backward();
        }
    }
    outcome.exchange_seconds = exchange(params, loss_value);
    if (settings.profile && world_size() > 1) settings.profile->add("exchange: all_reduce_sum", outcome.exchange_seconds);
    outcome.loss = loss_value;
    if (!std::isfinite(outcome.loss)) return outcome;  // every process sees the same sum: all stop here

    auto start = Clock::now();
    outcome.grad_norm = clip_grad_norm(params, settings.grad_clip);
    if (settings.profile) settings.profile->add("optimizer: clip_grad_norm", seconds_since(start));
    start = Clock::now();
    adam.step(settings.lr);
    if (settings.profile) settings.profile->add("optimizer: AdamW", seconds_since(start));
    outcome.updated = true;
    return outcome;
}

}  // namespace tinyformer
