// A live progress line on a terminal's stderr, for work that takes a while: reading a large
// text ("bytes", with MB/s) and scoring many validation windows ("windows", with windows/s).
//
//   reading big.txt [##########....................] 340/1,024 MB  412 MB/s  ETA 1.7s
//
// Drawn only when enabled and stderr is a terminal, at most ten times a second; cleared
// when done, so logs written to a file hold only the lines that follow it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

namespace tinyformer {

// Seconds of wall-clock time since `start` (steady_clock): how long a step, a run or a read took.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class ProgressBar {
public:
    enum class Unit { bytes, windows };
    ProgressBar(std::string label, int64_t total, Unit unit, bool enabled = true);
    ~ProgressBar();  // clears the line
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    void update(int64_t done);
    double seconds() const;  // since construction

private:
    std::string label_;
    int64_t total_;
    Unit unit_;
    bool drawing_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
};

// "1.0 GB", "340 MB", "12 kB", "812 B" (powers of 1000, as file sizes are shown).
std::string size_str(double bytes);

}  // namespace tinyformer
