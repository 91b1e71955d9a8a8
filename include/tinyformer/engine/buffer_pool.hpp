// Where tensor buffers come from. A training step asks for the same buffer sizes in the
// same order every time, so instead of returning a freed buffer to the system (and asking
// the system for a fresh, zero-filled one a moment later) it is kept here by size and
// handed out again. After the first step, every activation and gradient buffer of a
// training step is a reused one: the system allocator is not called for them.
//
// Blocks are 64-byte aligned (a cache line, and what AVX-512 loads like best). A reused
// block holds whatever its last owner wrote: Tensor::empty() is for outputs a kernel
// overwrites in full, Tensor::zeros() clears.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tinyformer::buffer_pool {

struct Block {
    std::byte* data = nullptr;
    size_t size = 0;  // at least the bytes asked for
};
// The smallest free block of at least `bytes` (and at most twice as big, so that little
// is wasted), else a new one from the system.
Block acquire(size_t bytes);
void release(Block block);

struct Stats {
    uint64_t system_allocations = 0;  // blocks the pool had to get from the system
    uint64_t reuses = 0;              // blocks handed out again from the pool
    size_t bytes_in_use = 0;          // held by live tensors
    size_t peak_bytes_in_use = 0;     // the most ever held at once
    size_t bytes_cached = 0;          // free, waiting in the pool
};
Stats stats();
void reset_peak();  // peak_bytes_in_use starts again from bytes_in_use

// Returns every cached block to the system (live tensors keep theirs).
void trim();

}  // namespace tinyformer::buffer_pool
