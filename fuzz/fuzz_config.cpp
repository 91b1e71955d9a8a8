// libFuzzer target: any bytes as a TOML config file, followed by --set overrides. The input
// is split at NUL bytes: the first part is the file, each further part one "--set K=V".
// load_config must either return a validated config or throw InputError (exit code 2);
// anything else is a bug. Seeds: fuzz/corpus/config (the shipped configs, and overrides).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scratch_file.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
        const size_t end = input.find('\0', start);
        parts.push_back(input.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    const std::string path = tinyformer::fuzz::write_scratch_file(
        "config.toml", reinterpret_cast<const uint8_t*>(parts[0].data()), parts[0].size());
    const std::vector<std::string> overrides(parts.begin() + 1, parts.end());
    try {
        // check_files = false: the corpus files it names need not exist, so the fuzzer gets
        // past them to every other check.
        tinyformer::load_config(path, overrides, /*check_files=*/false);
    } catch (const tinyformer::InputError&) {
    }
    return 0;
}
