// A text cut at a separator: a URL's query at '&', a Cookie header at ';', a list at ','.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tinyformer {

// The pieces of `text` between the separators, as they are, empty ones included: "a,,b" →
// {"a", "", "b"}, "" → {""}. Views into `text`, which must outlive them.
std::vector<std::string_view> split(std::string_view text, char separator);

}  // namespace tinyformer
