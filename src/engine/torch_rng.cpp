#include "tinyformer/engine/torch_rng.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tinyformer {

// torch seeds with the low 32 bits of the seed (mt19937's own 32-bit initialisation).
TorchRng::TorchRng(uint64_t seed) : engine_(static_cast<uint32_t>(seed)) {}

uint64_t TorchRng::random64() {
    const uint64_t high = engine_(), low = engine_();
    return (high << 32) | low;
}

double TorchRng::uniform53() { return static_cast<double>(random64() & ((1ULL << 53) - 1)) * 0x1.0p-53; }

void TorchRng::uniform(float* values, int64_t n, double from, double to) {
    const float low = static_cast<float>(from), high = static_cast<float>(to);
    const float width = high - low;  // in float, as torch computes it
    for (int64_t i = 0; i < n; ++i) {
        const double x = static_cast<double>(engine_() & ((1u << 24) - 1)) * 0x1.0p-24;
        values[i] = static_cast<float>(x * width + low);
    }
}

// Box–Muller on 16 uniforms in place: pairs (j, j+8) become a cosine and a sine normal.
static void box_muller_16(float* values, float mean, float std) {
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.0f - values[j];  // [0,1) → (0,1]: the log is finite
        const float u2 = values[j + 8];
        const float radius = std::sqrt(-2.0f * std::log(u1));
        const float theta = static_cast<float>(2.0 * M_PI * u2);
        values[j] = radius * std::cos(theta) * std + mean;
        values[j + 8] = radius * std::sin(theta) * std + mean;
    }
}

void TorchRng::normal(float* values, int64_t n, double mean, double std) {
    if (n >= 16) {
        uniform(values, n, 0.0, 1.0);
        for (int64_t i = 0; i + 16 <= n; i += 16) box_muller_16(values + i, static_cast<float>(mean), static_cast<float>(std));
        if (n % 16 != 0) {  // the tail: redraw the last 16 and transform them again
            uniform(values + n - 16, 16, 0.0, 1.0);
            box_muller_16(values + n - 16, static_cast<float>(mean), static_cast<float>(std));
        }
        return;
    }
    for (int64_t i = 0; i < n; ++i) {  // torch's scalar path: double normals, in pairs
        double z;
        if (next_double_normal_) {
            z = *next_double_normal_;
            next_double_normal_.reset();
        } else {
            const double u1 = uniform53(), u2 = uniform53();
            const double radius = std::sqrt(-2.0 * std::log(1.0 - u2));
            const double theta = 2.0 * M_PI * u1;
            next_double_normal_ = radius * std::sin(theta);
            z = radius * std::cos(theta);
        }
        values[i] = static_cast<float>(z * std + mean);
    }
}

int64_t TorchRng::randint(int64_t high) {
    if (high <= 0 || high >= (int64_t{1} << 32)) throw std::invalid_argument("randint: high must be in [1, 2^32)");
    return static_cast<int64_t>(engine_() % static_cast<uint64_t>(high));
}

std::string TorchRng::state() const {
    std::ostringstream out;
    out << engine_ << ' ';
    if (next_double_normal_) out << "normal " << std::hexfloat << *next_double_normal_;
    else out << "no-normal";
    return out.str();
}

void TorchRng::set_state(const std::string& text) {
    const std::invalid_argument malformed("not a torch generator state (624 + 1 integers, then the cached normal)");
    std::istringstream in(text);
    // The twister: its 624 32-bit words, then its position in them (at most 624).
    std::string twister_text, word;
    for (int i = 0; i <= 624; ++i) {
        if (!(in >> word) || word.size() > 10 || word.find_first_not_of("0123456789") != std::string::npos)
            throw malformed;
        const uint64_t value = std::stoull(word);
        if (value > (i < 624 ? 0xffffffffULL : 624ULL)) throw malformed;
        twister_text += word + ' ';
    }
    std::mt19937 engine;
    std::istringstream(twister_text) >> engine;
    // Then "no-normal", or "normal" and the kept sine as a hex float.
    std::optional<double> next;
    std::string normal_word, number;
    in >> normal_word;
    if (normal_word == "normal") {
        in >> number;
        char* end = nullptr;
        const double value = std::strtod(number.c_str(), &end);
        if (number.empty() || *end != '\0' || !std::isfinite(value)) throw malformed;
        next = value;
    } else if (normal_word != "no-normal") {
        throw malformed;
    }
    std::string rest;
    if (in >> rest) throw malformed;
    engine_ = engine;
    next_double_normal_ = next;
}

}  // namespace tinyformer
