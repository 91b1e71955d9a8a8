#include "tinyformer/train/step.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/progress.hpp"

namespace tinyformer {

namespace {

using Clock = std::chrono::steady_clock;

// The gradients of every process are summed in buckets: pieces of the gradient arena, as
// DDP sums. Each process's backward started from its mean loss divided by N (see
// train_step), so the sum is the gradient of the mean over all their windows, the shares
// being equal.
//
// After the backward (train.exchange = "after", and "auto" on one machine) the buckets are
// 1 M floats (4 MB) and each is one MPI_Allreduce: Open MPI 4.1 sums one 43 MB buffer
// (nanoGPT's shakespeare-char shape) over shared memory in 106 ms, in such pieces in 8 ms.
//
// During the backward (train.exchange = "overlap", and "auto" across machines) a bucket is
// started (start_all_reduce_sum) as soon as the backward has finished every gradient in it,
// and travels while the backward goes on. The backward finishes the parameters in about the
// reverse of their order in the arena (lm_head first, tok_emb last), so the buckets are
// started from the last to the first: the same order on every process, as MPI requires,
// whatever the timing. Smaller buckets start sooner; each costs a message's latency: an
// eighth of the arena, from 128 K to 1 M floats (docs/distributed.md measures them).
constexpr int64_t kBucketFloatsAfter = int64_t{1} << 20;
constexpr int64_t kBucketFloatsOverlapMin = int64_t{1} << 17, kBucketFloatsOverlapMax = int64_t{1} << 20;

int64_t bucket_floats(int64_t arena_floats, bool overlap) {
    if (!overlap) return kBucketFloatsAfter;
    // Equal buckets, none a small remainder (a sum of fewer elements than processes is a
    // corner of MPI's algorithms best not visited).
    const int64_t target = std::clamp(arena_floats / 8, kBucketFloatsOverlapMin, kBucketFloatsOverlapMax);
    const int64_t buckets = std::max<int64_t>(1, (arena_floats + target - 1) / target);
    return (arena_floats + buckets - 1) / buckets;
}

class BucketExchange {
public:
    BucketExchange(Parameters& params, bool overlap)
        : arena_(params.gradients()), overlap_(overlap), bucket_floats_(bucket_floats(arena_.numel(), overlap)) {
        const int64_t buckets = (arena_.numel() + bucket_floats_ - 1) / bucket_floats_;
        unfinished_leaves_.assign(static_cast<size_t>(buckets), 0);
        next_ = buckets - 1;
    }

    int64_t buckets() const { return static_cast<int64_t>(unfinished_leaves_.size()); }
    int64_t started_in_backward() const { return started_in_backward_; }

    // The graph's leaves: each bucket waits for those whose gradient lies in it.
    void expect(const std::vector<Tensor>& leaves) {
        for (const Tensor& leaf : leaves)
            for_each_bucket_of(leaf, [&](int64_t bucket) { ++unfinished_leaves_[bucket]; });
    }

    void leaf_done(const Tensor& leaf) {
        for_each_bucket_of(leaf, [&](int64_t bucket) { --unfinished_leaves_[bucket]; });
        if (!overlap_) return;
        const Clock::time_point start = Clock::now();
        for (; next_ >= 0 && unfinished_leaves_[next_] == 0; --next_, ++started_in_backward_) start_sum(next_);
        seconds_ += seconds_since(start);
    }

    // Between backward nodes: MPI moves a started sum on only inside its calls.
    void progress() {
        if (in_flight_.empty()) return;
        const Clock::time_point start = Clock::now();
        for (PendingSum& pending : in_flight_) pending.done();
        seconds_ += seconds_since(start);
    }

    // After the backward, every gradient is final: the buckets not yet summed are summed now
    // and the started ones waited for. Returns the seconds this process spent in the
    // exchange's calls (waiting for the others included).
    double finish() {
        const Clock::time_point start = Clock::now();
        if (overlap_) {
            for (; next_ >= 0; --next_) start_sum(next_);
            for (PendingSum& pending : in_flight_) pending.wait();
            in_flight_.clear();
        } else {
            for (int64_t bucket = 0; bucket < buckets(); ++bucket) {
                const auto [first, count] = range_of(bucket);
                all_reduce_sum(arena_.data<float>() + first, count);
            }
        }
        return seconds_ + seconds_since(start);
    }

private:
    std::pair<int64_t, int64_t> range_of(int64_t bucket) const {  // first element, count
        const int64_t first = bucket * bucket_floats_;
        return {first, std::min(bucket_floats_, arena_.numel() - first)};
    }

    // The buckets that hold part of `leaf`'s gradient (none if it is not in the arena).
    template <typename Visit>
    void for_each_bucket_of(const Tensor& leaf, Visit visit) const {
        const Tensor grad = leaf.grad();
        if (!grad.defined() || grad.storage() != arena_.storage()) return;
        const int64_t first = static_cast<int64_t>((grad.offset_bytes() - arena_.offset_bytes()) / sizeof(float));
        const int64_t last = first + grad.numel() - 1;
        for (int64_t bucket = first / bucket_floats_; bucket <= last / bucket_floats_; ++bucket) visit(bucket);
    }

    void start_sum(int64_t bucket) {
        const auto [first, count] = range_of(bucket);
        in_flight_.push_back(start_all_reduce_sum(arena_.data<float>() + first, count));
    }

    Tensor arena_;  // the gradient arena, [count]
    bool overlap_;
    int64_t bucket_floats_;
    std::vector<int64_t> unfinished_leaves_;  // per bucket: leaves whose gradient is not final yet
    int64_t next_ = -1;                       // the next bucket to start, counting down
    int64_t started_in_backward_ = 0;
    std::vector<PendingSum> in_flight_;
    double seconds_ = 0;
};

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

bool overlap_exchange(const std::string& exchange) {
    if (exchange == "overlap") return true;
    if (exchange == "after") return false;
    // "auto": across machines, where the network is slower than the backward; on one
    // machine the sum is a copy through shared memory on cores that are all computing.
    return world_size() > launch_from_environment().local_size;
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
            BucketExchange exchange(params, settings.overlap_exchange);
            BackwardWatch watch;  // after the backward: nothing to watch
            if (settings.overlap_exchange) {
                watch.leaves = [&](const std::vector<Tensor>& leaves) { exchange.expect(leaves); };
                watch.leaf_done = [&](const Tensor& leaf) { exchange.leaf_done(leaf); };
                watch.after_node = [&] { exchange.progress(); };
            }
            // 1/N here, on one number, rather than on every gradient after the sum.
            scale(loss, 1.0 / world_size()).backward(Tensor(), watch);
            outcome.exchange_seconds = exchange.finish();
            outcome.buckets = exchange.buckets();
            outcome.buckets_started_in_backward = exchange.started_in_backward();
            const Clock::time_point start = Clock::now();
            all_reduce_sum(&loss_value, 1);
            loss_value /= world_size();
            outcome.exchange_seconds += seconds_since(start);
        } else if (std::isfinite(loss_value)) {  // alone, a lost step costs nothing
            loss.backward();
        }
    }
    if (settings.profile && world_size() > 1) settings.profile->add("exchange: all_reduce_sum", outcome.exchange_seconds);
    outcome.loss = loss_value;
    if (!std::isfinite(outcome.loss)) return outcome;  // every process sees the same sum: all stop here

    // The bytes the two passes move at least (float32 arenas): clipping reads the gradients
    // (and scales them in place, a second pass, only when over the limit); AdamW reads weights,
    // gradients, both moments and a decay flag byte each, and writes back all but the last two.
    const double arena_bytes = 4.0 * static_cast<double>(params.count());
    auto start = Clock::now();
    outcome.grad_norm = clip_grad_norm(params, settings.grad_clip);
    if (settings.profile) settings.profile->add("optimizer: clip_grad_norm", seconds_since(start), arena_bytes);
    start = Clock::now();
    adam.step(settings.lr);
    if (settings.profile) settings.profile->add("optimizer: AdamW", seconds_since(start),
                              7 * arena_bytes + static_cast<double>(params.count()));
    outcome.updated = true;
    return outcome;
}

}  // namespace tinyformer
