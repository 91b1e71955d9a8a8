#include "tinyformer/train/step.hpp"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_from(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The gradients of every process summed, then divided by their number: the gradient of the
// mean over all their windows (each process's loss is the mean over an equal share). With it,
// the loss and the stop flag, summed the same way.
double exchange(Parameters& params, double local[2]) {
    const int processes = world_size();
    if (processes == 1) return 0;
    const Clock::time_point start = Clock::now();
    Tensor gradients = params.gradients();
    float* g = gradients.data<float>();
    const int64_t n = gradients.numel();
    all_reduce_sum(g, n);
    const float inverse = 1.0f / static_cast<float>(processes);  // exact when N is a power of 2
    for (int64_t i = 0; i < n; ++i) g[i] *= inverse;
    all_reduce_sum(local, 2);
    local[0] /= processes;
    return seconds_from(start);
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
    double local[2];  // [this process's mean loss, 1 if it was asked to stop]
    {
        // The step's matrix products in the settings' precision (evaluations stay float32); the
        // scope ends before the optimizer changes the parameters whose bf16 copies it holds.
        const MatmulPrecisionScope precision(settings.precision);
        Tensor loss = model.loss(share.inputs, share.targets);
        local[0] = loss.item();
        local[1] = settings.stop_requested ? 1.0 : 0.0;
        if (std::isfinite(local[0]) || world_size() > 1) loss.backward();  // alone, a lost step costs nothing
    }
    outcome.exchange_seconds = exchange(params, local);
    if (settings.profile && world_size() > 1) settings.profile->add("exchange: all_reduce_sum", outcome.exchange_seconds);
    outcome.loss = local[0];
    outcome.stop = local[1] > 0;
    if (!std::isfinite(outcome.loss)) return outcome;  // every process sees the same sum: all stop here

    auto start = Clock::now();
    outcome.grad_norm = clip_grad_norm(params, settings.grad_clip);
    if (settings.profile) settings.profile->add("optimizer: clip_grad_norm", seconds_from(start));
    start = Clock::now();
    adam.step(settings.lr);
    if (settings.profile) settings.profile->add("optimizer: AdamW", seconds_from(start));
    outcome.updated = true;
    return outcome;
}

}  // namespace tinyformer
