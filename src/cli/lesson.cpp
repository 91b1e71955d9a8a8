// tinyformer lesson [--json] [--html FILE]: the multi-head attention lesson's numbers, each
// computed by the engine (lesson.hpp): the split and merge of arange(12), the seeded random
// example's attention weights, all heads at once against one head at a time, the parameter
// count, the D=5 error, and the check questions. --html writes the split/merge demo page.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "tinyformer/lesson/lesson.hpp"
#include "tinyformer/lesson/lesson_page.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer::cli {

Runner add_lesson(CLI::App& app) {
    struct Args {
        bool json = false;
        std::string html;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("lesson", "Print the multi-head attention lesson's numbers, computed by the engine.");
    cmd->add_flag("--json", args->json, "print every number as JSON instead of the report");
    cmd->add_option("--html", args->html, "also write the split/merge demo page (one self-contained HTML file) to FILE")
        ->type_name("FILE");
    return [cmd, args]() -> int {
        if (!cmd->parsed()) return -1;
        if (cmd->count("--html") > 0 && args->html.empty())
            throw InputError("--html: empty, expected the path of the HTML file to write");
        const Lesson lesson = run_lesson();
        if (args->json) std::fputs((lesson_json(lesson).dump(2) + "\n").c_str(), stdout);
        else std::fputs(lesson_text(lesson).c_str(), stdout);
        if (!args->html.empty()) {
            write_file_atomic(args->html, split_merge_html());
            spdlog::info("wrote the split/merge demo page to {}", args->html);
        }
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
