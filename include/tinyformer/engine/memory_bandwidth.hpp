// How many bytes per second this machine's threads move, measured now: the yardstick that
// `bench --profile` sets beside each kernel's own bytes per second.
#pragma once

#include <cstdint>

namespace tinyformer {

struct CopyBandwidth {
    int64_t bytes = 0;        // the size of the copy: source and destination each
    double bytes_per_s = 0;   // read + written per second (STREAM's "copy" counts both), median
};

// The running threads (threads.hpp) copy `bytes` from one buffer to another, each thread its
// own contiguous share, `repeats` times after a warm-up; the median copy's rate. Far larger
// than the last-level cache, it is the memory's bandwidth; small enough for each thread's
// share to sit in its L2, the bandwidth a kernel gets whose tensors stay in cache.
CopyBandwidth measure_copy_bandwidth(int64_t bytes, int repeats = 7);

}  // namespace tinyformer
