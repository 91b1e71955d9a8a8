// The .npy writer: see include/tinyformer/inspect/npy.hpp for the layout, and NumPy's
// numpy/lib/format.py (_write_array_header, _wrap_header) for where each byte comes from.
#include "tinyformer/inspect/npy.hpp"

#include <bit>
#include <cstring>
#include <stdexcept>

namespace tinyformer {

static_assert(std::endian::native == std::endian::little, "the .npy data is written as it lies in memory: '<f4'");

// Python's repr of a shape tuple: "()", "(3,)", "(2, 3)".
static std::string shape_repr(const Shape& shape) {
    std::string out = "(";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + (shape.size() == 1 ? ",)" : ")");
}

std::string npy_bytes(const std::vector<float>& values, const Shape& shape) {
    if (static_cast<int64_t>(values.size()) != numel_of(shape))
        throw std::invalid_argument("npy: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_repr(shape) + ", }";
    // np.save leaves room for the first axis to grow to 21 digits in place (NumPy >= 1.23:
    // GROWTH_AXIS_MAX_DIGITS), then pads to the 64-byte alignment (ARRAY_ALIGN).
    if (!shape.empty()) header += std::string(21 - std::to_string(shape[0]).size(), ' ');
    const size_t preamble = 6 + 2 + 2;  // magic, version, header length
    const size_t padding = (64 - (preamble + header.size() + 1) % 64) % 64;
    header += std::string(padding, ' ') + "\n";

    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xFF);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    const size_t data_start = bytes.size();
    bytes.resize(data_start + values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(bytes.data() + data_start, values.data(), values.size() * sizeof(float));
    return bytes;
}

}  // namespace tinyformer
