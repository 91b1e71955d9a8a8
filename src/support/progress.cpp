#include "tinyformer/support/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace tinyformer {

std::string size_str(double bytes) {
    char text[32];
    if (bytes >= 1e9) std::snprintf(text, sizeof text, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1e6) std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
    else if (bytes >= 1e3) std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
    else std::snprintf(text, sizeof text, "%.0f B", bytes);
    return text;
}

ProgressBar::ProgressBar(std::string label, int64_t total, Unit unit, bool enabled)
    : label_(std::move(label)), total_(total), unit_(unit), drawing_(enabled && isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()), last_draw_(start_ - std::chrono::seconds(1)) {}  // the first update draws

ProgressBar::~ProgressBar() {
    if (drawn_) {
        std::fprintf(stderr, "\r%100s\r", "");
        std::fflush(stderr);
    }
}

double ProgressBar::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::update(int64_t done) {
    if (!drawing_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const double elapsed = seconds(), rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const int width = 30;
    const double fraction = total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 0;
    std::string bar(static_cast<size_t>(width * fraction), '#');
    bar.resize(width, '.');
    const double eta = rate > 0 && total_ > 0 ? static_cast<double>(total_ - done) / rate : 0;
    if (unit_ == Unit::bytes)
        std::fprintf(stderr, "\r%s [%s] %s/%s  %s/s  ETA %.1fs   ", label_.c_str(), bar.c_str(),
                     size_str(static_cast<double>(done)).c_str(), size_str(static_cast<double>(total_)).c_str(),
                     size_str(rate).c_str(), eta);
    else
        std::fprintf(stderr, "\r%s [%s] %lld/%lld windows  %.0f/s  ETA %.1fs   ", label_.c_str(), bar.c_str(),
                     static_cast<long long>(done), static_cast<long long>(total_), rate, eta);
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace tinyformer
