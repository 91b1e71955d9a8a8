// Float32 values in JSON (json_number.hpp): printed by nlohmann::json in their shortest
// decimal form, and read back as the same float, bit for bit.
#include "catch.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "tinyformer/support/json_number.hpp"

using tinyformer::json_number;

namespace {

// What JSON prints for the float.
std::string json_text(float value) { return nlohmann::json(json_number(value)).dump(); }

// The float's shortest decimal, in scientific notation: 0.4365f is "4.365e-01".
std::string shortest_text(float value) {
    char text[32];
    return {text, std::to_chars(text, text + sizeof text, value, std::chars_format::scientific).ptr};
}

// "0.4365" 4, "-1e-07" 1, "123456790.0" 8.
int digits_of(const std::string& text) {
    std::string digits;
    for (char c : text) {
        if (c == 'e') break;
        if (c >= '0' && c <= '9') digits += c;
    }
    const size_t first = digits.find_first_not_of('0');
    return first == std::string::npos ? 0 : static_cast<int>(digits.find_last_not_of('0') - first + 1);
}

uint32_t bits_of(float value) { return std::bit_cast<uint32_t>(value); }

uint32_t float_bits_of_text(const std::string& text) {
    float value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return bits_of(value);
}

}  // namespace

TEST_CASE("json_number: a float prints as its shortest decimal", "[json_number]") {
    CHECK(nlohmann::json(0.4365f).dump() == "0.43650001287460327");  // what a float alone gives
    CHECK(json_text(0.4365f) == "0.4365");
    CHECK(json_text(0.1f) == "0.1");
    CHECK(json_text(-2.5f) == "-2.5");
    CHECK(json_text(1.0f) == "1.0");
    CHECK(json_text(1e-7f) == "1e-07");
    CHECK(json_text(-3.7e-5f) == "-3.7e-05");
    CHECK(json_text(16777216.0f) == "16777216.0");             // 2^24
    CHECK(json_text(123456792.0f) == "123456790.0");           // 1.2345679e+08: 8 digits, not 9
    CHECK(json_text(1e20f) == "1e+20");
    CHECK(json_text(std::numeric_limits<float>::max()) == "3.4028235e+38");
    CHECK(json_text(std::numeric_limits<float>::min()) == "1.1754944e-38");  // the smallest normal
    CHECK(json_text(std::numeric_limits<float>::denorm_min()) == "1e-45");
    CHECK(json_text(1e-40f) == "1e-40");                       // a denormal
    CHECK(json_text(0.0f) == "0.0");
    CHECK(json_text(-0.0f) == "-0.0");
}

TEST_CASE("json_number: NaN and infinities stay as they are, null in JSON as before", "[json_number]") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    CHECK(std::isnan(json_number(nan)));
    CHECK(json_number(inf) == std::numeric_limits<double>::infinity());
    CHECK(json_number(-inf) == -std::numeric_limits<double>::infinity());
    CHECK(json_text(nan) == nlohmann::json(static_cast<double>(nan)).dump());
    CHECK(json_text(nan) == "null");
    CHECK(json_text(inf) == "null");
}

TEST_CASE("json_number: where nlohmann's Grisu2 is not shortest, a digit more", "[json_number]") {
    // nlohmann::json prints the double nearest -0.22907719 as -0.22907719000000001 (and the
    // others likewise, 0.038809250000000003 in an inspect run's attention.json): no double
    // prints as -0.22907719, so the nearest longer decimal that does and reads back the same.
    CHECK(nlohmann::json(-0.22907719).dump() == "-0.22907719000000001");
    CHECK(json_text(-0.22907719f) == "-0.229077191");
    CHECK(json_text(0.4182699f) == "0.41826989");
    CHECK(json_text(0.03880925f) == "0.038809251");
    CHECK(json_text(0.803286f) == "0.80328602");  // 0.803286 and 0.8032860 the same double
    for (const float value : {-0.22907719f, 0.4182699f, 0.03880925f, 0.64976275f, 1.8725522f, 0.803286f}) {
        INFO(shortest_text(value));
        const std::string text = json_text(value);
        INFO(text);
        CHECK(digits_of(text) <= 9);
        CHECK(float_bits_of_text(text) == bits_of(value));
    }
}

TEST_CASE("json_number: random floats print in as few digits as they need and read back bit for bit",
          "[json_number]") {
    // Every bit pattern (all exponents, denormals, both signs) and probabilities in [0, 1).
    std::mt19937 random(20240534);
    std::uniform_real_distribution<float> probability(0.0f, 1.0f);
    int64_t tried = 0, wrong = 0, longer = 0;
    std::string first_wrong;
    for (int i = 0; i < 400000; ++i) {
        const float value = i % 2 ? probability(random) : std::bit_cast<float>(static_cast<uint32_t>(random()));
        if (!std::isfinite(value)) continue;
        ++tried;
        const std::string text = json_text(value);
        const int digits = digits_of(text), fewest = digits_of(shortest_text(value));
        // Read as a float, or as a double and then rounded to float: the same float.
        const bool right = float_bits_of_text(text) == bits_of(value) &&
                           bits_of(static_cast<float>(json_number(value))) == bits_of(value) &&
                           digits <= 9;
        if (!right && wrong++ == 0) first_wrong = shortest_text(value) + " printed " + text;
        longer += digits > fewest;
    }
    INFO(first_wrong);
    CHECK(wrong == 0);
    // The float's shortest decimal but where Grisu2 cannot print it (about 0.2 % of floats:
    // then a digit or two more, 0.80328602 for 0.803286f).
    INFO(longer << " of " << tried << " longer than shortest");
    CHECK(longer * 100 <= tried);
}

TEST_CASE("json_numbers: each float of an array", "[json_number]") {
    const float values[] = {0.4365f, -1e-7f, 0.0f};
    CHECK(nlohmann::json(tinyformer::json_numbers(values)).dump() == "[0.4365,-1e-07,0.0]");
}
