// What a browser may do with the explorer's answers, said in headers on every one of them:
//
//   Content-Security-Policy   default-src 'self': the page loads nothing from elsewhere and
//                             sends nothing elsewhere; its inline scripts run because their
//                             SHA-256 is listed (no other inline script, no eval); no site may
//                             frame it (frame-ancestors 'none'), no <base> or form may point away.
//   X-Frame-Options: DENY     the same for browsers that predate frame-ancestors
//   Referrer-Policy: no-referrer   a link followed from the page does not carry its address
//                             (which may hold the token)
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tinyformer {

// The SHA-256 of every inline <script> element's text in `pages`, as CSP's 'sha256-…' sources.
std::vector<std::string> inline_script_hashes(const std::vector<std::string_view>& pages);

// The headers above, for pages whose inline scripts are `pages`'.
std::vector<std::pair<std::string, std::string>> page_policy_headers(const std::vector<std::string_view>& pages);

}  // namespace tinyformer
