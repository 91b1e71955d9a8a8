// One optimizer step, the only one: the trainer and `bench` both take it, alone or as one
// process of a data-parallel run (docs/distributed.md).
//
//   each process:   loss = mean cross-entropy of its share of the batch's windows
//                   backward from loss / N → its part of the gradient, in the gradient arena
//   every process:  gradient arena ← Σ over the N processes   (all_reduce_sum, in buckets;
//                   across machines each bucket as soon as the backward has finished it)
//                   = the gradient of the whole batch's mean loss, the shares being equal
//                   clip to optim.grad_clip, then AdamW: the same numbers on every process
//
// Alone (N = 1) nothing is exchanged and the step is the one-process step as it always was.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/engine/mixed_precision.hpp"
#include "tinyformer/engine/profiling.hpp"
#include "tinyformer/model/model.hpp"
#include "tinyformer/train/optim.hpp"

namespace tinyformer {

struct StepSettings {
    double lr = 1e-3;
    double grad_clip = 1.0;  // 0: no clipping
    MatmulPrecision precision = MatmulPrecision::float32;  // the forward's and backward's products
    bool overlap_exchange = false;  // sum the gradients during the backward (see overlap_exchange())
    Profile* profile = nullptr;   // when set, the step's own passes (exchange, clipping, AdamW) are timed into it
};

struct StepOutcome {
    double loss = 0;       // the whole batch's mean loss (every process's windows), before the update
    double grad_norm = 0;  // the whole batch's gradient norm, before clipping
    bool updated = false;  // false when the loss was not finite: the weights are left as they were
    double exchange_seconds = 0;  // in all_reduce_sum, waiting for the other processes included
    int64_t buckets = 0;                      // pieces the gradients were summed in (0 alone)
    int64_t buckets_started_in_backward = 0;  // of them, sent while the backward still ran
};

// train.exchange's choice for this run: "overlap" → true, "after" → false, "auto" → whether
// the processes span more than one machine (by the launcher's local size).
bool overlap_exchange(const std::string& exchange);

// `share` holds this process's windows: the batch's windows [rank·B/N, (rank+1)·B/N).
StepOutcome train_step(Transformer& model, AdamW& adam, const Batch& share, const StepSettings& settings);

// This process's windows of a batch drawn as `starts` (all B of them, the same on every
// process). Throws InputError when the process count does not divide B.
std::vector<int64_t> this_process_share(const std::vector<int64_t>& starts);

}  // namespace tinyformer
