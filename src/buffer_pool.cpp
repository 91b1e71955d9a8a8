#include "tinyformer/buffer_pool.hpp"

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

std::byte* acquire(size_t bytes) {
    const size_t size = rounded(bytes);
    Pool& p = pool();
    {
        std::lock_guard lock(p.mutex);
        p.stats.bytes_in_use += size;
        p.stats.peak_bytes_in_use = std::max(p.stats.peak_bytes_in_use, p.stats.bytes_in_use);
        auto found = p.free_blocks.find(size);
        if (found != p.free_blocks.end() && !found->second.empty()) {
            std::byte* block = found->second.back();
            found->second.pop_back();
            ++p.stats.reuses;
            p.stats.bytes_cached -= size;
            TINYFORMER_UNPOISON(block, size);
            return block;
        }
        ++p.stats.system_allocations;
    }
    auto* block = static_cast<std::byte*>(std::aligned_alloc(64, size));
    if (!block) throw std::bad_alloc();
    return block;
}

void release(std::byte* block, size_t bytes) {
    if (!block) return;
    const size_t size = rounded(bytes);
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    p.stats.bytes_in_use -= size;
    p.stats.bytes_cached += size;
    TINYFORMER_POISON(block, size);
    p.free_blocks[size].push_back(block);
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
