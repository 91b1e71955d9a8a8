// Copy bandwidth: each running thread copies its share of a buffer into another, several
// times; the median copy's bytes (read + written) per second.
#include "tinyformer/engine/memory_bandwidth.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "tinyformer/engine/threads.hpp"

namespace tinyformer {

CopyBandwidth measure_copy_bandwidth(int64_t bytes, int repeats) {
    using Clock = std::chrono::steady_clock;
    const int threads = running_threads();
    const int64_t share = bytes / threads;
    std::vector<char> source(static_cast<size_t>(share * threads), 1), destination(source.size());
    // Enough copies per timing for about a millisecond even for a cache-sized buffer.
    const int64_t copies = std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(bytes, 1));
    std::vector<double> rates;
    for (int r = -1; r < std::max(repeats, 1); ++r) {  // r = -1: the warm-up (page faults, caches filled)
        const auto start = Clock::now();
        // Each thread copies its own share, `copies` times in one parallel region: the time of
        // waking the threads is paid once, not per copy.
#pragma omp parallel num_threads(threads)
        {
            const int64_t offset = omp_get_thread_num() * share;
            for (int64_t c = 0; c < copies; ++c) std::memcpy(destination.data() + offset, source.data() + offset, share);
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (r >= 0) rates.push_back(2.0 * static_cast<double>(share * threads * copies) / seconds);
    }
    std::nth_element(rates.begin(), rates.begin() + static_cast<long>(rates.size() / 2), rates.end());
    return {share * threads, rates[rates.size() / 2]};
}

}  // namespace tinyformer
