// Rope's rotation of one row: pairs (2j, 2j+1) turned by angle theta_j, given as its cos and
// sin. Shared by the oneDNN backend's rope, its q/k/v split and its attention blocks.
#pragma once

#include <cstdint>

namespace tinyformer::detail {

// to's pairs (2j, 2j+1) = from's rotated by the angle whose cos and sin are given (sin
// times `sign`: -1 rotates back). from and to may be the same row.
inline void rotate_pairs(const float* from, float* to, const float* cos_row, const float* sin_row, int64_t half,
                         float sign) {
    for (int64_t j = 0; j < half; ++j) {
        const float c = cos_row[j], s = sign * sin_row[j];
        const float u0 = from[2 * j], u1 = from[2 * j + 1];
        to[2 * j] = u0 * c - u1 * s;
        to[2 * j + 1] = u0 * s + u1 * c;
    }
}

}  // namespace tinyformer::detail
