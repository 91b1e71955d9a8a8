// The explorer's web server (tinyformer serve): the page where a learner types a sentence and
// sees every head's attention, switches heads off and samples, and the JSON API behind it
// (explorer_api.hpp). The HTTP server is Debian's cpp-httplib. The pages are compiled in
// (src/explore/*.html, embedded by cmake/embed_asset.cmake): no file is read on a request, so
// no request path can reach the disk, and nothing is fetched from the network.
//
// Before any route, every request passes the access checks (access.hpp: its Host, a POST's
// Origin and Content-Type, the token beyond loopback), and every answer carries the page
// policy's headers (page_policy.hpp).
//
// Each request runs on one of the server's worker threads (ServeRequest::threads of them)
// with its own Decoder; the model is only read, so they need no lock. SIGINT and SIGTERM stop
// the server: it stops accepting, answers what it is answering, and returns.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tinyformer {

struct ServeRequest {
    std::string checkpoint;          // a .safetensors file or a run directory
    std::string host = "127.0.0.1";  // the address to listen on (127.0.0.1: this machine only)
    int port = 8080;                 // 0 = any free port, printed
    int threads = 0;                 // requests computed at once; 0 = the cores, at least 4
    std::vector<std::string> allow_hosts;  // more names the Host header may give (access.hpp)
    std::string token;               // the token to ask for (beyond loopback, empty: a random one)
    bool no_token = false;           // beyond loopback: ask for none (warned)
    // The page served at /split-merge: the lesson's demo (split_merge_html in lesson_page.hpp,
    // a layer beside this one), made once at start-up.
    std::function<std::string()> split_merge_page;
};

// Loads the checkpoint, listens, prints the address, and serves until SIGINT or SIGTERM;
// then prints "stopped". Throws std::runtime_error when it cannot listen on the host and
// port, or the server stopped with an error.
void serve_explorer(const ServeRequest& request);

}  // namespace tinyformer
