// Float32 values in JSON, in their shortest round-trip form.
//
// nlohmann::json holds every number as a double, and a float converts to the double of
// exactly its value: 0.4365f is 0.436500012874603271484375, which JSON prints as
// 0.43650001287460327. json_number(0.4365f) is instead the double nearest 0.4365, the
// float's shortest decimal, which JSON prints as 0.4365; read back as a float (or as a
// double, then rounded to float) it is the same float, bit for bit.
//
// Every float32 value put into a nlohmann::json goes through json_number: a float, an element
// of a float32 tensor or attention map, a float32 tensor's item(). A value computed in double
// (a mean of float losses summed in double, a probability, a timing) is a double and goes in
// as it is. Explicit at each call, rather than a specialised adl_serializer<float>: a float
// often becomes a double before it reaches the JSON (std::vector<double>(map, map + T),
// Tensor::to_vector()), where no serializer for float sees it, and a specialisation has to be
// seen by every file that puts a float into a json, or the same float prints two ways.
#pragma once

#include <span>
#include <vector>

namespace tinyformer {

// The double that JSON prints as `value`'s shortest decimal and that reads back as `value`.
// nlohmann::json prints doubles with Grisu2, which for about 0.2 % of floats' shortest
// decimals prints 17 digits (-0.22907719 as -0.22907719000000001): for those, the nearest
// decimal of a digit or two more that it prints (-0.229077191). At most 9 significant digits.
// NaN and infinities stay as they are (dump() writes null), ±0 too.
double json_number(float value);
double json_number(double value) = delete;  // a double is already a JSON number

// json_number of each value: for a float32 array.
std::vector<double> json_numbers(std::span<const float> values);

}  // namespace tinyformer
