// Who may use the explorer (tinyformer serve), checked before any route runs. A server on
// 127.0.0.1 is reachable from every web page the user visits: a page may POST to it (a
// text/plain body needs no CORS preflight), and with DNS rebinding — a name of the attacker's
// that first resolves to their server, then to 127.0.0.1 — it may read the answers too. As
// Jupyter and the Vite and webpack dev servers do, the explorer answers only:
//
//   Host      a request whose Host header names it: localhost, 127.0.0.1, [::1], the address
//             it listens on (every address of this machine, and its hostname, when it listens
//             on all of them) or a name given with --allow-host; with its port. A rebound
//             name fails here.
//   POST      from its own page: an Origin header, when there is one, that is the server's own
//             (http:// + the Host); and a Content-Type of application/json, which no
//             cross-site request can send without a preflight that the server does not grant.
//   token     when it listens beyond loopback: every request carries the token the server
//             printed, as ?token= (the page's first load: exchanged for an HttpOnly,
//             SameSite=Strict cookie), the cookie, or an "Authorization: token …" header.
//
// The checks are plain functions of the request's headers, so the tests call them directly.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tinyformer {

struct AccessPolicy {
    std::set<std::string> hosts;  // the names it answers to, lowercase; IPv6 ones in brackets
    int port = 0;
    std::string token;            // empty: none needed (loopback, or --no-token)
};

// The policy of a server listening on `bound_host`:`port`, answering the `allowed` names too.
// `token` is used as it is (may be empty).
AccessPolicy access_policy(const std::string& bound_host, int port, const std::vector<std::string>& allowed,
                           const std::string& token);

bool is_loopback_address(const std::string& host);  // 127.0.0.0/8, ::1 and localhost
// A token for a server beyond loopback: 32 random bytes (the system's generator), as 64 hex digits.
std::string new_access_token();

// What the checks read of a request.
struct RequestHeaders {
    std::string method{}, path{};
    std::optional<std::string> host{}, origin{}, content_type{}, cookie{}, authorization{};
    std::optional<std::string> token_parameter{};  // ?token=
};

// Why a request is refused: its status (403), a one-line message for the JSON reply, and what
// the server's log says (once per distinct `log_key`).
struct Refusal {
    int status = 403;
    std::string message, log_key;
};

// nullopt: the request may go on.
std::optional<Refusal> check_access(const AccessPolicy& policy, const RequestHeaders& request);

// The cookie that carries the token after the page's first load.
inline constexpr const char* kTokenCookie = "tinyformer_token";
std::string token_cookie(const std::string& token);  // a Set-Cookie value: HttpOnly, SameSite=Strict

}  // namespace tinyformer
