// Who may use the explorer (explore/access.hpp) and what its answers let a browser do
// (explore/page_policy.hpp): each check against the requests it must refuse and the ones it
// must let through. tests/cli/test_serve.sh sends the same cases over HTTP, and
// scripts/check-explorer.sh runs the page under its policy in Chromium.
#include "catch.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "tinyformer/explore/access.hpp"
#include "tinyformer/explore/page_policy.hpp"

using namespace tinyformer;

namespace {

RequestHeaders get(const std::string& host) { return RequestHeaders{.method = "GET", .path = "/api/model", .host = host}; }

RequestHeaders post(const std::string& host, std::optional<std::string> origin, std::optional<std::string> type) {
    return RequestHeaders{.method = "POST", .path = "/api/run", .host = host, .origin = std::move(origin),
                          .content_type = std::move(type)};
}

}  // namespace

TEST_CASE("access: the Host must name this server, with its port", "[explorer]") {
    const AccessPolicy policy = access_policy("127.0.0.1", 8080, {"lab.example"}, "");
    for (const char* host : {"localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST:8080", "lab.example:8080",
                             " localhost:8080 "}) {
        INFO(host);
        CHECK_FALSE(check_access(policy, get(host)));
    }
    for (const char* host : {"evil.example:8080", "evil.example", "localhost", "localhost:8081", "localhost:80",
                             "localhost.evil.example:8080", "127.0.0.1.nip.io:8080", "[::1]", "::1:8080",
                             "[::1:8080", "localhost:80800", "localhost:8080x", "localhost:-8080", ""}) {
        INFO(host);
        const std::optional<Refusal> refusal = check_access(policy, get(host));
        REQUIRE(refusal);
        CHECK(refusal->status == 403);
    }
    CHECK(check_access(policy, RequestHeaders{.method = "GET", .path = "/"})->message.starts_with("no Host header"));
    // Once per name in the log, whatever the port.
    CHECK(check_access(policy, get("Evil.example:1"))->log_key == check_access(policy, get("evil.example:2"))->log_key);
    // Port 80 needs none in the header, as http:// writes it.
    CHECK_FALSE(check_access(access_policy("127.0.0.1", 80, {}, ""), get("localhost")));
    // An IPv6 address given to --allow-host or --host is matched in brackets.
    CHECK_FALSE(check_access(access_policy("::1", 9000, {"fd00::7"}, ""), get("[fd00::7]:9000")));
}

TEST_CASE("access: a POST comes from the server's own page, as JSON", "[explorer]") {
    const AccessPolicy policy = access_policy("127.0.0.1", 8080, {}, "");
    CHECK_FALSE(check_access(policy, post("127.0.0.1:8080", "http://127.0.0.1:8080", "application/json")));
    CHECK_FALSE(check_access(policy, post("localhost:8080", "http://localhost:8080", "application/json; charset=utf-8")));
    CHECK_FALSE(check_access(policy, post("localhost:8080", std::nullopt, "Application/JSON")));  // curl, a script
    const std::pair<std::optional<std::string>, std::optional<std::string>> refused[] = {
        {"http://evil.example", "application/json"},  // another site's fetch, after a preflight it is not granted
        {"http://localhost:8080", "application/json"},  // the Host says 127.0.0.1: another origin
        {"https://127.0.0.1:8080", "application/json"},
        {"null", "application/json"},                  // a sandboxed frame, a file:// page
        {std::nullopt, "text/plain"},                   // what a page may send anywhere without asking
        {std::nullopt, "application/x-www-form-urlencoded"},
        {std::nullopt, "multipart/form-data; boundary=x"},
        {std::nullopt, std::nullopt},
        {std::nullopt, "application/jsonp"},
    };
    for (const auto& [origin, type] : refused) {
        INFO(origin.value_or("(no Origin)") << " " << type.value_or("(no Content-Type)"));
        const std::optional<Refusal> refusal = check_access(policy, post("127.0.0.1:8080", origin, type));
        REQUIRE(refusal);
        CHECK(refusal->status == 403);
    }
    // A GET is not asked for an Origin or a type: links and reloads.
    RequestHeaders linked = get("localhost:8080");
    linked.origin = "http://evil.example";
    CHECK_FALSE(check_access(policy, linked));
}

TEST_CASE("access: the token, as a parameter, the cookie or a header", "[explorer]") {
    const std::string token = new_access_token();
    CHECK(token.size() == 64);
    CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(new_access_token() != token);
    const AccessPolicy policy = access_policy("0.0.0.0", 8080, {}, token);
    CHECK(policy.hosts.contains("0.0.0.0"));  // and this machine's own addresses and name
    RequestHeaders request = get("127.0.0.1:8080");
    CHECK(check_access(policy, request)->message.starts_with("no token"));
    request.token_parameter = token;
    CHECK_FALSE(check_access(policy, request));
    request.token_parameter = token.substr(0, 63);
    CHECK(check_access(policy, request)->message.starts_with("wrong token"));
    request.token_parameter.reset();
    request.cookie = "theme=dark; " + std::string(kTokenCookie) + "=" + token + "; other=1";
    CHECK_FALSE(check_access(policy, request));
    request.cookie = std::string(kTokenCookie) + "x=" + token;  // another cookie's name
    CHECK(check_access(policy, request));
    request.cookie.reset();
    request.authorization = "token " + token;
    CHECK_FALSE(check_access(policy, request));
    request.authorization = "Bearer " + token;
    CHECK(check_access(policy, request));
    // The Host is checked first: a rebound name with the token is refused all the same.
    RequestHeaders rebound = get("evil.example:8080");
    rebound.token_parameter = token;
    CHECK(check_access(policy, rebound)->message.find("is not this server") != std::string::npos);
    CHECK(token_cookie(token) == std::string(kTokenCookie) + "=" + token + "; Path=/; HttpOnly; SameSite=Strict");
    CHECK(is_loopback_address("127.0.0.1"));
    CHECK(is_loopback_address("127.1.2.3"));
    CHECK(is_loopback_address("::1"));
    CHECK_FALSE(is_loopback_address("0.0.0.0"));
    CHECK_FALSE(is_loopback_address("10.0.0.1"));
}

TEST_CASE("page policy: every inline script's SHA-256, and the headers", "[explorer]") {
    // sha256("") and sha256("alert(1)"), base64: known values (`printf 'alert(1)' | openssl dgst -sha256 -binary | base64`).
    const std::string page = "<html><script></script><p>x</p><script type=\"application/json\">alert(1)</script>";
    const std::vector<std::string> hashes = inline_script_hashes({page});
    REQUIRE(hashes.size() == 2);
    CHECK(hashes[0] == "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='");
    CHECK(hashes[1] == "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='");
    const auto headers = page_policy_headers({page, "<script></script>"});
    REQUIRE(headers.size() == 3);
    CHECK(headers[0].first == "Content-Security-Policy");
    CHECK(headers[0].second.starts_with("default-src 'self'; script-src " + hashes[0] + " " + hashes[1] + ";"));
    CHECK(headers[0].second.find("frame-ancestors 'none'") != std::string::npos);
    CHECK(headers[0].second.find("unsafe-eval") == std::string::npos);
    CHECK(headers[1] == std::pair<std::string, std::string>{"X-Frame-Options", "DENY"});
    CHECK(headers[2] == std::pair<std::string, std::string>{"Referrer-Policy", "no-referrer"});
}
