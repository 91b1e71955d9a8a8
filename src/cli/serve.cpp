// tinyformer serve --checkpoint PATH [--host 127.0.0.1] [--port 8080] [--threads N]
//
// The explorer: a web page, served from this binary, where a learner types a sentence and
// sees every head's attention, switches heads off and samples (explorer_api.hpp is the JSON
// API behind it). The HTTP server is Debian's cpp-httplib. The pages are compiled in
// (src/explore/*.html, embedded by cmake/embed_asset.cmake): no file is read on a request, so
// no request path can reach the disk, and nothing is fetched from the network.
//
// Each request runs on one of the server's worker threads (--threads of them) with its own
// Decoder; the model is only read, so they need no lock. SIGINT and SIGTERM stop the server:
// it stops accepting, answers what it is answering, and exits 0.
#include <httplib.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string_view>
#include <thread>

#include "commands.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/explore/explorer_api.hpp"
#include "tinyformer/lesson/lesson_page.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer::assets {
extern const std::string_view explorer_html;  // src/explore/explorer.html
}

namespace tinyformer::cli {

namespace {

void send(httplib::Response& res, const ApiReply& reply) {
    res.status = reply.status;
    // A reply may quote a request's bytes that are not UTF-8 (in a JSON parse error): those
    // are replaced by U+FFFD, as JSON text must be UTF-8.
    res.set_content(reply.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json; charset=utf-8");
}

// The routes, each with the methods it answers; any other method gets 405 and an Allow header.
struct Route {
    std::string path, allow;
};
const std::vector<Route>& routes() {
    static const std::vector<Route> all = {{"/", "GET"},           {"/split-merge", "GET"},
                                           {"/api/model", "GET"},  {"/api/run", "POST"},
                                           {"/api/sample", "POST"}};
    return all;
}

// 405 for a known path asked with another method, 404 for any other path.
void not_routed(const httplib::Request& req, httplib::Response& res) {
    for (const Route& route : routes())
        if (route.path == req.path) {
            res.set_header("Allow", route.allow);
            send(res, api_error(405, req.method + " " + req.path + ": method not allowed, expected " + route.allow));
            return;
        }
    send(res, api_error(404, req.path + ": not found; the explorer is at /, its API at /api/model, /api/run and "
                             "/api/sample"));
}

bool is_loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

}  // namespace

Runner add_serve(CLI::App& app) {
    struct Args {
        std::string checkpoint, host = "127.0.0.1";
        int port = 8080, threads = 0;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("serve", "The explorer: a local web page to type a sentence and watch every head, "
                                            "switch heads off and sample.");
    cmd->add_option("--checkpoint", args->checkpoint, "a .safetensors file or a run directory")->required();
    cmd->add_option("--host", args->host, "address to listen on (default 127.0.0.1: this machine only)");
    cmd->add_option("--port", args->port, "port (default 8080; 0 = any free port, printed)")
        ->check(CLI::Range(0, 65535));
    cmd->add_option("--threads", args->threads, "requests computed at once (default: the cores, at least 4)")
        ->check(CLI::Range(0, 256));
    cmd->footer("Open the printed address in a browser. The JSON API: GET /api/model, POST /api/run "
                "{\"text\", \"ablate\", \"ablation\"}, POST /api/sample {\"prompt\", \"max_new\", \"temperature\", "
                "\"top_k\", \"top_p\", \"seed\", \"stop\"}; the lesson's split/merge demo is at /split-merge. "
                "Ctrl-C stops the server.");
    return [cmd, args]() -> int {
        if (!cmd->parsed()) return -1;
        // SIGINT and SIGTERM are blocked in every thread and taken by one thread with sigwait,
        // which stops the server: no work in a signal handler. Blocked first, before any thread
        // starts (OpenMP's, the server's), as threads inherit the mask. A shell starts a
        // background job with SIGINT ignored; the server is stopped by it all the same.
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGTERM, SIG_DFL);
        sigset_t stop_signals;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

        // The start-up work (the heads' mean outputs for mean ablation) runs on the fast backend.
        set_backend(make_onednn_backend());
        set_num_threads(0);
        const ExplorerApi api(args->checkpoint);
        for (const std::string& note : api.notes()) spdlog::info("{}", note);
        const std::string split_merge_page = split_merge_html();  // the lesson's demo, computed once

        httplib::Server server;
        const int workers = args->threads > 0 ? args->threads
                                              : std::max(4, static_cast<int>(std::thread::hardware_concurrency()));
        server.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
        server.set_payload_max_length(kMaxBodyBytes);
        server.set_keep_alive_timeout(2);  // an idle browser connection holds a worker for at most 2 s
        // SO_REUSEADDR only: a restarted server may take its port back at once, but a second
        // server may not share it (httplib's default, SO_REUSEPORT, would let it).
        server.set_socket_options([](int sock) {
            int yes = 1;
            setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        });
        server.set_default_headers({{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}});

        server.Get("/", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(assets::explorer_html), "text/html; charset=utf-8");
        });
        server.Get("/split-merge", [&split_merge_page](const httplib::Request&, httplib::Response& res) {
            res.set_content(split_merge_page, "text/html; charset=utf-8");
        });
        server.Get("/api/model", [&api](const httplib::Request&, httplib::Response& res) { send(res, api.model()); });
        server.Post("/api/run", [&api](const httplib::Request& req, httplib::Response& res) {
            send(res, api.run(req.body));
        });
        server.Post("/api/sample", [&api](const httplib::Request& req, httplib::Response& res) {
            send(res, api.sample(req.body));
        });
        // Browsers ask for an icon: none, and no 404 in their console.
        server.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
        // Everything else: 404 or 405, as JSON.
        server.Get(".*", not_routed);
        server.Post(".*", not_routed);
        server.Put(".*", not_routed);
        server.Patch(".*", not_routed);
        server.Delete(".*", not_routed);
        server.Options(".*", not_routed);
        // Errors httplib answers itself (a body over the limit: 413; a malformed request: 400)
        // get a JSON body too; replies that have one keep it.
        server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
            if (!res.body.empty()) return;
            const std::string message = res.status == 413 ? "body: over " + std::to_string(kMaxBodyBytes) +
                                                                " bytes, the most a request may send"
                                                          : "HTTP " + std::to_string(res.status);
            send(res, api_error(res.status, message));
        });
        server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
            send(res, api_error(500, "internal error"));
        });
        server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
            spdlog::debug("{} {} {}", req.method, req.path, res.status);
        });

        int port = args->port;
        const bool bound = port == 0 ? (port = server.bind_to_any_port(args->host)) > 0
                                     : server.bind_to_port(args->host, port);
        if (!bound)
            throw std::runtime_error("cannot listen on " + args->host + " port " + std::to_string(args->port) +
                                     " (in use, or not an address of this machine; try another --port)");
        if (!is_loopback(args->host))
            spdlog::warn("listening on {}: anyone who can reach this machine on that network can use the explorer",
                         args->host);
        const std::string host = args->host.find(':') != std::string::npos ? "[" + args->host + "]" : args->host;
        std::printf("serving the explorer for %s at http://%s:%d/ (%d workers; Ctrl-C stops)\n", api.loaded().path.c_str(),
                    host.c_str(), port, workers);
        std::fflush(stdout);

        std::thread stopper([&server, &stop_signals] {
            int signal = 0;
            sigwait(&stop_signals, &signal);
            if (signal != 0 && server.is_running()) spdlog::info("stopping (signal {})", signal);
            server.stop();
        });
        const bool listened = server.listen_after_bind();
        if (stopper.joinable()) {
            // Wakes it if the server stopped by itself; after a signal this one stays pending,
            // blocked, until the process exits.
            pthread_kill(stopper.native_handle(), SIGTERM);
            stopper.join();
        }
        if (!listened) throw std::runtime_error("the server stopped with an error");
        std::printf("stopped\n");
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
