// tinyformer serve --checkpoint PATH [--host 127.0.0.1] [--port 8080] [--threads N]
//                  [--allow-host NAME]... [--token VALUE | --no-token]
//
// The explorer: a web page, served from this binary, where a learner types a sentence and
// sees every head's attention, switches heads off and samples (explorer_server.hpp is the
// server, explorer_api.hpp the JSON API behind the page). SIGINT and SIGTERM stop the server:
// it stops accepting, answers what it is answering, and exits 0.
#include <algorithm>
#include <cctype>
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
    cmd->add_option("--allow-host", request->allow_hosts,
                    "another name this server may be reached by (the Host header), repeatable; it always "
                    "answers to localhost, 127.0.0.1, [::1] and the address it listens on");
    auto* token = cmd->add_option("--token", request->token,
                                  "the token every request must carry (beyond loopback, default: a random one, "
                                  "printed in the address; on loopback, none unless given)")
                     ->check(CLI::Validator(
                         [](const std::string& value) -> std::string {
                             const bool plain = std::all_of(value.begin(), value.end(), [](unsigned char c) {
                                 return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
                             });
                             if (value.size() >= 16 && plain) return "";
                             return "\"" + value + "\": expected at least 16 letters, digits or -_.~ (it goes in "
                                    "the address and a cookie)";
                         },
                         "TOKEN"));
    cmd->add_flag("--no-token", request->no_token,
                  "beyond loopback: ask for no token (anyone who can reach the machine can use the explorer)")
        ->excludes(token);
    cmd->footer("Open the printed address in a browser. The JSON API: GET /api/model, POST /api/run "
                "{\"text\", \"ablate\", \"ablation\"}, POST /api/sample {\"prompt\", \"max_new\", \"temperature\", "
                "\"top_k\", \"top_p\", \"seed\", \"stop\"}; the lesson's split/merge demo is at /split-merge. "
                "A request must name this server in its Host header, and a POST come from its own page as JSON; beyond "
                "loopback, every request carries the token printed in the address (docs/explorer.md, Security). "
                "Ctrl-C stops the server.");
    return [cmd, request]() -> int {
        if (!cmd->parsed()) return -1;
        request->split_merge_page = split_merge_html;  // the lesson's, a layer the explorer does not use
        serve_explorer(*request);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
