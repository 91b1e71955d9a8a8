// The two kinds of failure tinyformer reports, and their exit codes:
//   InputError   — bad usage, config, corpus, prompt or checkpoint: the user can fix it (exit 2)
//   Interrupted  — Ctrl-C stopped a training run or a sweep, after saving what it had (exit 130)
//   anything else — a runtime failure (exit 1)
// Messages are one line naming the file, key, character or byte offset, and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace tinyformer {

struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Interrupted : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The exit code a command ends with when `e` stops it: 2, 130 or 1, as above.
inline int exit_code_of(const std::exception& e) {
    if (dynamic_cast<const InputError*>(&e) != nullptr) return 2;
    if (dynamic_cast<const Interrupted*>(&e) != nullptr) return 130;
    return 1;
}

// Throws the one-line InputError "<where>: <what>, expected <expected>".
[[noreturn]] inline void reject(const std::string& where, const std::string& what, const std::string& expected) {
    throw InputError(where + ": " + what + ", expected " + expected);
}

}  // namespace tinyformer
