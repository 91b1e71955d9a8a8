#include "tinyformer/explore/page_policy.hpp"

#include <openssl/evp.h>

#include <set>
#include <stdexcept>

namespace tinyformer {

namespace {

// 'sha256-<base64 of the digest>' of `text`, as CSP writes a hash source.
std::string hash_source(std::string_view text) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("serve: OpenSSL could not hash the page's script");
    std::string base64(4 * ((length + 2) / 3) + 1, '\0');
    base64.resize(static_cast<size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(base64.data()), digest,
                                                      static_cast<int>(length))));
    return "'sha256-" + base64 + "'";
}

}  // namespace

std::vector<std::string> inline_script_hashes(const std::vector<std::string_view>& pages) {
    std::set<std::string> hashes;  // sorted, each once
    for (std::string_view page : pages) {
        size_t at = 0;
        while ((at = page.find("<script", at)) != std::string_view::npos) {
            const size_t open_end = page.find('>', at);
            const size_t close = page.find("</script>", open_end);
            if (open_end == std::string_view::npos || close == std::string_view::npos) break;
            // Data blocks (type="application/json") are never run, so they need no hash; they
            // get one all the same, which allows nothing more.
            hashes.insert(hash_source(page.substr(open_end + 1, close - open_end - 1)));
            at = close;
        }
    }
    return {hashes.begin(), hashes.end()};
}

std::vector<std::pair<std::string, std::string>> page_policy_headers(const std::vector<std::string_view>& pages) {
    std::string scripts;
    for (const std::string& hash : inline_script_hashes(pages)) scripts += " " + hash;
    // Inline style (the pages' <style> and the style attributes their scripts write) is
    // allowed: a style cannot run code or send what the page knows.
    const std::string policy = "default-src 'self'; script-src" + scripts +
                               "; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";
    return {{"Content-Security-Policy", policy}, {"X-Frame-Options", "DENY"}, {"Referrer-Policy", "no-referrer"}};
}

}  // namespace tinyformer
