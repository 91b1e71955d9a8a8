// tinyformer serve --checkpoint PATH [--host 127.0.0.1] [--port 8080] [--threads N]
//
// The explorer: a web page, served from this binary, where a learner types a sentence and
// sees every head's attention, switches heads off and samples (explorer_server.hpp is the
// server, explorer_api.hpp the JSON API behind the page). SIGINT and SIGTERM stop the server:
// it stops accepting, answers what it is answering, and exits 0.
#include <memory>

#include "commands.hpp"
#include "tinyformer/explore/explorer_server.hpp"
#include "tinyformer/lesson/lesson_page.hpp"

namespace tinyformer::cli {

Runner add_serve(CLI::App& app) {
    auto request = std::make_shared<ServeRequest>();
    auto* cmd = app.add_subcommand("serve", "The explorer: a local web page to type a sentence and watch every head, "
                                            "switch heads off and sample.");
    cmd->add_option("--checkpoint", request->checkpoint, "a .safetensors file or a run directory")->required();
    cmd->add_option("--host", request->host, "address to listen on (default 127.0.0.1: this machine only)");
    cmd->add_option("--port", request->port, "port (default 8080; 0 = any free port, printed)")
        ->check(CLI::Range(0, 65535));
    cmd->add_option("--threads", request->threads, "requests computed at once (default: the cores, at least 4)")
        ->check(CLI::Range(0, 256));
    cmd->footer("Open the printed address in a browser. The JSON API: GET /api/model, POST /api/run "
                "{\"text\", \"ablate\", \"ablation\"}, POST /api/sample {\"prompt\", \"max_new\", \"temperature\", "
                "\"top_k\", \"top_p\", \"seed\", \"stop\"}; the lesson's split/merge demo is at /split-merge. "
                "Ctrl-C stops the server.");
    return [cmd, request]() -> int {
        if (!cmd->parsed()) return -1;
        request->split_merge_page = split_merge_html;  // the lesson's, a layer the explorer does not use
        serve_explorer(*request);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
