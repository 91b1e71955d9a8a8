// NumPy's .npy file format, version 1.0, for float32 arrays — what np.save writes, byte for
// byte, so that `np.load("attention.npy")` in Python gets the attention maps back.
//
//   "\x93NUMPY" 0x01 0x00            magic and version 1.0
//   header length                    2 bytes, little-endian
//   "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
//                                    padded with spaces and ended by "\n" so that the data
//                                    starts at a multiple of 64 bytes
//   the data                         little-endian float32, row-major (C order)
#pragma once

#include <string>
#include <vector>

#include "tinyformer/engine/tensor.hpp"

namespace tinyformer {

// The whole file's bytes for `values` (row-major) of `shape`; values.size() must equal the
// shape's element count (else std::invalid_argument).
std::string npy_bytes(const std::vector<float>& values, const Shape& shape);

}  // namespace tinyformer
