// One function per subcommand: each registers its options on the CLI11 app and returns
// the exit code through `run` once parsing succeeded.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tinyformer::cli {

// Exit codes: 0 success, 1 runtime failure, 2 usage / config / input error.
constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

using Runner = std::function<int()>;

Runner add_gradcheck(CLI::App& app);

}  // namespace tinyformer::cli
