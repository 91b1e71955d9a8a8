// tinyformer gradcheck [--json]: the engine's gradients against finite differences.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinyformer/model/gradcheck.hpp"

namespace tinyformer::cli {

Runner add_gradcheck(CLI::App& app) {
    auto* cmd = app.add_subcommand("gradcheck", "Check every op's and the whole model's gradients in float64.");
    cmd->footer(
        "Compares the engine's gradients with central finite differences in float64.\n"
        "For each check, with a fixed random R of the output's shape:\n"
        "  analytic = d<f,R>/dx from backward(), numeric = (<f(x+h),R> - <f(x-h),R>) / 2h, h = 1e-5\n"
        "  relative error = |analytic - numeric| / max(|analytic|, |numeric|, 1e-3)\n"
        "A check passes when its largest relative error is <= 1e-6. Exits 1 if any check fails.");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "print one JSON object instead of a table");
    return [cmd, json]() -> int {
        if (!cmd->parsed()) return -1;
        std::vector<GradCheckResult> results = run_gradcheck_suite();
        bool all_pass = true;
        for (const GradCheckResult& r : results) all_pass = all_pass && r.pass;
        if (*json) {
            nlohmann::json out = {{"pass", all_pass}, {"checks", nlohmann::json::array()}};
            for (const GradCheckResult& r : results)
                out["checks"].push_back({{"name", r.name},
                                         {"elements", r.elements},
                                         {"max_abs_error", r.max_abs_error},
                                         {"max_rel_error", r.max_rel_error},
                                         {"pass", r.pass}});
            std::printf("%s\n", out.dump(2).c_str());
        } else {
            std::printf("%-28s %9s %14s %14s  %s\n", "check", "elements", "max abs error", "max rel error", "pass");
            for (const GradCheckResult& r : results)
                std::printf("%-28s %9lld %14.3e %14.3e  %s\n", r.name.c_str(), static_cast<long long>(r.elements),
                            r.max_abs_error, r.max_rel_error, r.pass ? "yes" : "NO");
            std::printf("%s: %zu checks, tolerance 1e-6 relative\n", all_pass ? "PASS" : "FAIL", results.size());
        }
        return all_pass ? kExitOk : kExitFailure;
    };
}

}  // namespace tinyformer::cli
