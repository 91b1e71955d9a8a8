#include "tinyformer/engine/buffer_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A block waiting in the pool is poisoned, so AddressSanitizer still reports a tensor
// buffer used after its tensor died, as it would if the block had gone back to malloc.
#define TINYFORMER_POISON(block, size) ASAN_POISON_MEMORY_REGION(block, size)
#define TINYFORMER_UNPOISON(block, size) ASAN_UNPOISON_MEMORY_REGION(block, size)
#else
#define TINYFORMER_POISON(block, size) ((void)(block), (void)(size))
#define TINYFORMER_UNPOISON(block, size) ((void)(block), (void)(size))
#endif

namespace tinyformer::buffer_pool {

namespace {

// Sizes are rounded up to whole cache lines; blocks of one rounded size are interchangeable.
size_t rounded(size_t bytes) { return bytes == 0 ? 64 : (bytes + 63) / 64 * 64; }

struct Pool {
    std::mutex mutex;
    std::map<size_t, std::vector<std::byte*>> free_blocks;  // rounded size → free blocks
    Stats stats;
};

// Never destroyed: a tensor living in a static may release its block after every other
// static is gone. (The blocks stay reachable, so a leak checker does not count them.)
Pool& pool() {
    static Pool* instance = new Pool;
    return *instance;
}

}  // namespace

Block acquire(size_t bytes) {
    const size_t size = rounded(bytes);
    Pool& p = pool();
    {
        std::lock_guard lock(p.mutex);
        // Best fit: the smallest size class that can hold `size` without wasting half of it.
        for (auto found = p.free_blocks.lower_bound(size); found != p.free_blocks.end() && found->first <= 2 * size;
             ++found) {
            if (found->second.empty()) continue;
            const Block block{found->second.back(), found->first};
            found->second.pop_back();
            ++p.stats.reuses;
            p.stats.bytes_cached -= block.size;
            p.stats.bytes_in_use += block.size;
            p.stats.peak_bytes_in_use = std::max(p.stats.peak_bytes_in_use, p.stats.bytes_in_use);
            TINYFORMER_UNPOISON(block.data, block.size);
            return block;
        }
        ++p.stats.system_allocations;
        p.stats.bytes_in_use += size;
        p.stats.peak_bytes_in_use = std::max(p.stats.peak_bytes_in_use, p.stats.bytes_in_use);
    }
    auto* data = static_cast<std::byte*>(std::aligned_alloc(64, size));
    if (!data) throw std::bad_alloc();
    return {data, size};
}

void release(Block block) {
    if (!block.data) return;
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    p.stats.bytes_in_use -= block.size;
    p.stats.bytes_cached += block.size;
    TINYFORMER_POISON(block.data, block.size);
    p.free_blocks[block.size].push_back(block.data);
}

Stats stats() {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    return p.stats;
}

void reset_peak() {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    p.stats.peak_bytes_in_use = p.stats.bytes_in_use;
}

void trim() {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    for (auto& [size, blocks] : p.free_blocks) {
        for (std::byte* block : blocks) {
            TINYFORMER_UNPOISON(block, size);
            std::free(block);
        }
        p.stats.bytes_cached -= size * blocks.size();
        blocks.clear();
    }
}

}  // namespace tinyformer::buffer_pool
