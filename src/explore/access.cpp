#include "tinyformer/explore/access.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "tinyformer/support/split.hpp"

namespace tinyformer {

namespace {

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

std::string trimmed(const std::string& text) {
    const size_t first = text.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// An address as a Host header names it: IPv6 in brackets.
std::string host_name(const std::string& address) {
    const std::string name = lowercase(address);
    return name.find(':') != std::string::npos && name.front() != '[' ? "[" + name + "]" : name;
}

// Every address of this machine's interfaces, and its hostname: what a client may call a
// server that listens on all of them.
std::vector<std::string> this_machines_names() {
    std::vector<std::string> names;
    char hostname[256] = {};
    if (gethostname(hostname, sizeof hostname - 1) == 0 && hostname[0] != '\0') names.push_back(hostname);
    ifaddrs* interfaces = nullptr;
    if (getifaddrs(&interfaces) != 0) return names;
    for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr) continue;
        char text[INET6_ADDRSTRLEN] = {};
        if (i->ifa_addr->sa_family == AF_INET &&
            inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text))
            names.push_back(text);
        else if (i->ifa_addr->sa_family == AF_INET6 &&
                 inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, text, sizeof text))
            names.push_back(text);
    }
    freeifaddrs(interfaces);
    return names;
}

// The Host header's name and port ("name", "name:port", "[v6]:port"); port 80 when it has none
// (the default of http://), -1 when the header is malformed.
std::pair<std::string, int> split_host(const std::string& header) {
    std::string name = lowercase(trimmed(header)), port;
    if (!name.empty() && name.front() == '[') {
        const size_t close = name.find(']');
        if (close == std::string::npos) return {name, -1};
        if (close + 1 < name.size()) {
            if (name[close + 1] != ':') return {name, -1};
            port = name.substr(close + 2);
        }
        name = name.substr(0, close + 1);
    } else if (const size_t colon = name.find(':'); colon != std::string::npos) {
        port = name.substr(colon + 1);
        name = name.substr(0, colon);
    }
    if (port.empty()) return {name, 80};
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }))
        return {name, -1};
    return {name, std::stoi(port)};
}

// The cookie named `name` in a Cookie header ("a=1; b=2"), or "".
std::string cookie_value(const std::string& header, const std::string& name) {
    for (const std::string_view piece : split(header, ';')) {
        const std::string pair = trimmed(std::string(piece));
        if (const size_t equals = pair.find('='); equals != std::string::npos && pair.substr(0, equals) == name)
            return pair.substr(equals + 1);
    }
    return "";
}

// The same bytes, compared in a time that does not depend on where they first differ.
bool same_token(const std::string& given, const std::string& token) {
    return given.size() == token.size() && CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0;
}

Refusal refuse(std::string message, std::string log_key) { return Refusal{403, std::move(message), std::move(log_key)}; }

}  // namespace

bool is_loopback_address(const std::string& host) {
    const std::string name = lowercase(host);
    return name == "localhost" || name == "::1" || name == "[::1]" || name.rfind("127.", 0) == 0;
}

AccessPolicy access_policy(const std::string& bound_host, int port, const std::vector<std::string>& allowed,
                           const std::string& token) {
    AccessPolicy policy;
    policy.port = port;
    policy.token = token;
    policy.hosts = {"localhost", "127.0.0.1", "[::1]", host_name(bound_host)};
    if (bound_host == "0.0.0.0" || bound_host == "::" || bound_host.empty())
        for (const std::string& name : this_machines_names()) policy.hosts.insert(host_name(name));
    for (const std::string& name : allowed) policy.hosts.insert(host_name(name));
    return policy;
}

std::string new_access_token() {
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("serve: the system gave no random bytes for a token");
    static const char digits[] = "0123456789abcdef";
    std::string token;
    for (unsigned char byte : bytes) token += {digits[byte >> 4], digits[byte & 15]};
    return token;
}

std::string token_cookie(const std::string& token) {
    return std::string(kTokenCookie) + "=" + token + "; Path=/; HttpOnly; SameSite=Strict";
}

std::optional<Refusal> check_access(const AccessPolicy& policy, const RequestHeaders& request) {
    const std::string port = std::to_string(policy.port);
    // Host: one of the names this server answers to, with its port.
    if (!request.host || trimmed(*request.host).empty())
        return refuse("no Host header: expected this server's name and port, such as localhost:" + port, "host");
    const auto [name, host_port] = split_host(*request.host);
    if (!policy.hosts.contains(name) || host_port != policy.port)
        return refuse("Host \"" + *request.host + "\" is not this server (it answers to localhost:" + port +
                          ", 127.0.0.1:" + port + ", [::1]:" + port +
                          " and the names given with --allow-host); a page that reached it under another name "
                          "is refused",
                      "host " + name);

    // The token, when the server listens beyond loopback.
    if (!policy.token.empty()) {
        std::string given = request.token_parameter.value_or("");
        if (given.empty() && request.cookie) given = cookie_value(*request.cookie, kTokenCookie);
        if (given.empty() && request.authorization) {
            const std::string value = trimmed(*request.authorization);
            if (lowercase(value.substr(0, 6)) == "token ") given = trimmed(value.substr(6));
        }
        if (given.empty())
            return refuse("no token: this server asks for one; open the address it printed "
                          "(http://HOST:" + port + "/?token=...) or send \"Authorization: token ...\"",
                          "token missing");
        if (!same_token(given, policy.token))
            return refuse("wrong token: open the address the server printed", "token wrong");
    }

    // A GET may come from anywhere that passed the above (a link, a reload); a POST computes,
    // and must come from the server's own page. (No other method is routed: 404 or 405.)
    if (request.method != "POST") return std::nullopt;
    const std::string own_origin = "http://" + lowercase(trimmed(*request.host));
    if (request.origin && lowercase(trimmed(*request.origin)) != own_origin)
        return refuse("Origin \"" + *request.origin + "\" is not this server's (" + own_origin +
                          "): a request from another site is refused",
                      "origin " + lowercase(*request.origin));
    const std::string media_type =
        request.content_type ? lowercase(trimmed(request.content_type->substr(0, request.content_type->find(';')))) : "";
    if (media_type != "application/json")
        return refuse("Content-Type \"" + request.content_type.value_or("") +
                          "\": expected application/json (a request body another site's page could send "
                          "without asking is refused)",
                      "content-type " + media_type);
    return std::nullopt;
}

}  // namespace tinyformer
