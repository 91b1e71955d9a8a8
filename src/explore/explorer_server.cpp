#include "tinyformer/explore/explorer_server.hpp"

#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <utility>
#include <mutex>
#include <set>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "tinyformer/engine/backend.hpp"
#include "tinyformer/explore/access.hpp"
#include "tinyformer/explore/explorer_api.hpp"
#include "tinyformer/explore/page_policy.hpp"
#include "tinyformer/support/split.hpp"

namespace tinyformer::assets {
extern const std::string_view explorer_html;  // src/explore/explorer.html
}

namespace tinyformer {

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

// The heavy requests (/api/run, /api/sample: a forward pass, a sample) computed at once: at
// most `workers`, and at most workers − 1 for one client (its address), so that another
// client always finds one free. A heavy request that finds none is answered 503 with
// Retry-After at once instead of waiting: under a flood, the connections waiting for a
// thread are answered in microseconds each and the queue drains.
class HeavySlots {
public:
    explicit HeavySlots(int workers) : total_(workers), per_client_(std::max(1, workers - 1)) {}
    bool take(const std::string& client) {
        const std::lock_guard<std::mutex> lock(mutex_);
        int& mine = by_client_[client];
        if (in_flight_ >= total_ || mine >= per_client_) {
            if (mine == 0) by_client_.erase(client);
            return false;
        }
        ++in_flight_, ++mine;
        return true;
    }
    void give_back(const std::string& client) {
        const std::lock_guard<std::mutex> lock(mutex_);
        --in_flight_;
        if (--by_client_[client] == 0) by_client_.erase(client);
    }
    int total() const { return total_; }
    int per_client() const { return per_client_; }

private:
    const int total_, per_client_;
    std::mutex mutex_;
    int in_flight_ = 0;
    std::map<std::string, int> by_client_;
};

// Runs `compute` in a slot of `slots`, or answers 503 (logged once) when there is none.
void in_a_slot(HeavySlots& slots, const httplib::Request& req, httplib::Response& res,
               const std::function<ApiReply()>& compute) {
    if (!slots.take(req.remote_addr)) {
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
            spdlog::warn("busy: {} heavy requests at once ({} per client) are being computed; more get 503 "
                         "(said once)",
                         slots.total(), slots.per_client());
        res.set_header("Retry-After", "1");
        send(res, api_error(503, "busy: " + std::to_string(slots.total()) + " requests are being computed (" +
                                     std::to_string(slots.per_client()) + " at most from one client); try again in "
                                     "a second"));
        return;
    }
    struct GiveBack {
        HeavySlots& slots;
        const std::string& client;
        ~GiveBack() { slots.give_back(client); }
    } give_back{slots, req.remote_addr};
    send(res, compute());
}

// A request target ("/path?a=1&token=…&b=2") without its token parameter.
std::string without_token(const std::string& target) {
    const size_t question = target.find('?');
    if (question == std::string::npos) return target;
    std::string kept;
    for (const std::string_view pair : split(std::string_view(target).substr(question + 1), '&'))
        if (!pair.empty() && !pair.starts_with("token=") && pair != "token")
            kept.append(kept.empty() ? "?" : "&").append(pair);
    return target.substr(0, question) + kept;
}

// The access checks (access.hpp) before any route: a refused request gets 403 and its one
// line, and the log says why, once per Host, Origin or reason. A page's first load with the
// right ?token= gets the token's cookie and is sent on to the same address without it.
void add_access_checks(httplib::Server& server, const AccessPolicy& policy) {
    server.set_pre_routing_handler([&policy](const httplib::Request& req, httplib::Response& res) {
        auto header = [&req](const char* name) -> std::optional<std::string> {
            if (!req.has_header(name)) return std::nullopt;
            return req.get_header_value(name);
        };
        RequestHeaders request{.method = req.method, .path = req.path, .host = header("Host"),
                               .origin = header("Origin"), .content_type = header("Content-Type"),
                               .cookie = header("Cookie"), .authorization = header("Authorization"),
                               .token_parameter = std::nullopt};
        if (req.has_param("token")) request.token_parameter = req.get_param_value("token");
        if (const std::optional<Refusal> refusal = check_access(policy, request)) {
            static std::mutex logged_mutex;
            static std::set<std::string> logged;
            {
                const std::lock_guard<std::mutex> lock(logged_mutex);
                if (logged.insert(refusal->log_key).second)
                    spdlog::warn("refused {} {} from {}: {} (said once for this reason)", req.method, req.path,
                                 req.remote_addr, refusal->message);
            }
            send(res, api_error(refusal->status, refusal->message));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (request.token_parameter && req.method == "GET") {  // the printed address: a cookie from now on
            res.set_header("Set-Cookie", token_cookie(policy.token));
            res.set_redirect(without_token(req.target), 303);
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
}

// SIGINT and SIGTERM are blocked in every thread and taken by one thread with sigwait,
// which stops the server: no work in a signal handler. Blocked first, before any thread
// starts (OpenMP's, the server's), as threads inherit the mask. A shell starts a
// background job with SIGINT ignored; the server is stopped by it all the same.
sigset_t block_stop_signals() {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    return stop_signals;
}

// How the server runs: `workers` threads, the body limit, timeouts, sockets and headers.
// `listening_socket` receives the socket the server will listen on once it binds (the socket
// options' callback sees it first); it must outlive the binding.
void configure_server(httplib::Server& server, int workers, const std::vector<std::string_view>& pages,
                      int& listening_socket) {
    // Threads for connections, more than the computing workers (HeavySlots): a connection
    // that cannot compute is answered at once, and the page's light requests never wait for
    // a computation.
    const size_t connection_threads = static_cast<size_t>(std::max(32, 4 * workers));
    server.new_task_queue = [connection_threads] { return new httplib::ThreadPool(connection_threads); };
    server.set_payload_max_length(kMaxBodyBytes);
    // A connection holds a worker while it is open: one request each, so that a browser's
    // idle keep-alive connections (up to six) cannot hold every worker. On loopback a new
    // connection costs tens of microseconds.
    server.set_keep_alive_max_count(1);
    // A client that stops sending (a stalled body, a half-sent header) is cut off after 2 s
    // without a byte.
    server.set_read_timeout(2, 0);
    // SO_REUSEADDR only: a restarted server may take its port back at once, but a second
    // server may not share it (httplib's default, SO_REUSEPORT, would let it).
    server.set_socket_options([&listening_socket](int sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        listening_socket = sock;
    });
    httplib::Headers headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
    for (const auto& [name, value] : page_policy_headers(pages)) headers.emplace(name, value);
    server.set_default_headers(headers);
}

// The pages and the API, and a JSON reply for everything else. `api` and `split_merge_page`
// must outlive the server.
void add_routes(httplib::Server& server, const ExplorerApi& api, const std::string& split_merge_page,
                HeavySlots& slots) {
    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(std::string(assets::explorer_html), "text/html; charset=utf-8");
    });
    server.Get("/split-merge", [&split_merge_page](const httplib::Request&, httplib::Response& res) {
        res.set_content(split_merge_page, "text/html; charset=utf-8");
    });
    server.Get("/api/model", [&api](const httplib::Request&, httplib::Response& res) { send(res, api.model()); });
    server.Post("/api/run", [&api, &slots](const httplib::Request& req, httplib::Response& res) {
        in_a_slot(slots, req, res, [&] { return api.run(req.body); });
    });
    server.Post("/api/sample", [&api, &slots](const httplib::Request& req, httplib::Response& res) {
        in_a_slot(slots, req, res, [&] { return api.sample(req.body); });
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
}

// Binds the request's host and port (0: any free one) and returns the port.
int bind_server(httplib::Server& server, const ServeRequest& request) {
    int port = request.port;
    const bool bound = port == 0 ? (port = server.bind_to_any_port(request.host)) > 0
                                 : server.bind_to_port(request.host, port);
    if (!bound)
        throw std::runtime_error("cannot listen on " + request.host + " port " + std::to_string(request.port) +
                                 " (in use, or not an address of this machine; try another --port)");
    return port;
}

// Serves until one of `stop_signals` arrives (or the server stops by itself). Returns
// whether it listened without an error.
bool listen_until_stopped(httplib::Server& server, const sigset_t& stop_signals) {
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
    return listened;
}

}  // namespace

void serve_explorer(const ServeRequest& request) {
    const sigset_t stop_signals = block_stop_signals();

    // The start-up work (the heads' mean outputs for mean ablation) runs on the fast backend.
    set_backend(make_onednn_backend());
    set_num_threads(0);
    const ExplorerApi api(request.checkpoint);
    for (const std::string& note : api.notes()) spdlog::info("{}", note);
    const std::string split_merge_page = request.split_merge_page();  // the lesson's demo, computed once

    httplib::Server server;
    const int workers = request.threads > 0 ? request.threads
                                            : std::max(4, static_cast<int>(std::thread::hardware_concurrency()));
    int listening_socket = -1;
    configure_server(server, workers, {assets::explorer_html, split_merge_page}, listening_socket);
    HeavySlots slots(workers);
    add_routes(server, api, split_merge_page, slots);
    const int port = bind_server(server, request);
    // cpp-httplib listens with a backlog of 5 connections: beyond them, a burst's connections
    // are dropped and their clients try again a second later (TCP's SYN retransmission), the
    // page's among them. The backlog is raised to the system's limit (listen() again on a
    // listening socket sets it).
    if (listening_socket >= 0) ::listen(listening_socket, SOMAXCONN);

    // Beyond loopback, a token (access.hpp); on loopback the Host and Origin checks suffice,
    // unless --token asks for one there too.
    std::string token = request.token;
    if (!is_loopback_address(request.host)) {
        if (request.no_token)
            spdlog::warn("listening on {} without a token (--no-token): anyone who can reach this machine on that "
                         "network can use the explorer and read the model",
                         request.host);
        else if (token.empty())
            token = new_access_token();
    }
    const AccessPolicy policy = access_policy(request.host, port, request.allow_hosts, token);
    add_access_checks(server, policy);
    const std::string host = request.host.find(':') != std::string::npos ? "[" + request.host + "]" : request.host;
    const std::string address = "http://" + host + ":" + std::to_string(port) + "/" + (token.empty() ? "" : "?token=" + token);
    std::printf("serving the explorer for %s at %s (%d workers; Ctrl-C stops)\n", api.loaded().path.c_str(),
                address.c_str(), workers);
    std::fflush(stdout);

    if (!listen_until_stopped(server, stop_signals)) throw std::runtime_error("the server stopped with an error");
    std::printf("stopped\n");
}

}  // namespace tinyformer
