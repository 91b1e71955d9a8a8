#include "tinyformer/support/json_number.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tinyformer {

namespace {

// The significant digits of a number written in decimal: "0.4365" 4, "-2.5e-07" 2, "100.0" 1.
int significant_digits(std::string_view text) {
    std::string digits;
    for (char c : text) {
        if (c == 'e' || c == 'E') break;
        if (c >= '0' && c <= '9') digits += c;
    }
    const size_t first = digits.find_first_not_of('0');
    return first == std::string::npos ? 0 : static_cast<int>(digits.find_last_not_of('0') - first + 1);
}

bool same_float(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

// The double nearest mantissa·10^exponent.
double decimal(int64_t mantissa, int exponent) {
    const std::string text = std::to_string(mantissa) + "e" + std::to_string(exponent);
    double number = 0;
    std::from_chars(text.data(), text.data() + text.size(), number);
    return number;
}

// Whether JSON prints `number` in at most `digits` significant digits that read back as `value`.
bool prints_within(double number, float value, int digits) {
    const std::string printed = nlohmann::json(number).dump();
    float back = 0;
    std::from_chars(printed.data(), printed.data() + printed.size(), back);
    return significant_digits(printed) <= digits && same_float(back, value);
}

// The decimal of `digits` significant digits nearest `value`, as mantissa·10^exponent.
struct Decimal {
    int64_t mantissa = 0;
    int exponent = 0;
};
Decimal nearest_decimal(float value, int digits) {
    char text[32];  // -d.ddddddddde-XX
    const char* end = std::to_chars(text, text + sizeof text, value, std::chars_format::scientific, digits - 1).ptr;
    Decimal out;
    const char* c = text + (text[0] == '-');
    for (; c < end && *c != 'e'; ++c)
        if (*c != '.') out.mantissa = out.mantissa * 10 + (*c - '0');
    std::from_chars(c + 1 + (c[1] == '+'), end, out.exponent);
    if (text[0] == '-') out.mantissa = -out.mantissa;
    out.exponent -= digits - 1;
    return out;
}

}  // namespace

double json_number(float value) {
    if (!std::isfinite(value) || value == 0) return value;  // NaN and ±inf print as null, ±0 as 0.0 and -0.0
    // The float's shortest decimal: std::to_chars' shortest form, in scientific notation so that
    // 1.1991881e+10f keeps its 8 digits (not the 11 of 11991880704), read as a double.
    char text[32];
    const char* end = std::to_chars(text, text + sizeof text, value, std::chars_format::scientific).ptr;
    const int fewest = significant_digits({text, static_cast<size_t>(end - text)});
    double number = 0;
    std::from_chars(text, end, number);
    if (prints_within(number, value, fewest)) return number;
    // nlohmann::json prints a double with Grisu2, which misses the shortest decimal of about
    // 0.2 % of them: it prints the double nearest -0.22907719 as -0.22907719000000001, and no
    // other double prints as -0.22907719. Then another decimal of as few digits that reads back
    // as the float (a unit of the last digit away) will do, else one of a digit more: the
    // nearest that JSON prints in those digits. 9 significant digits tell any floats apart.
    for (int digits = fewest; digits <= 9; ++digits) {
        const Decimal nearest = nearest_decimal(value, digits);
        // The decimals of `digits` digits that read back as the float are consecutive mantissas
        // around the nearest: try them nearest first, until neither side reads back.
        for (int64_t step = 0;; ++step) {
            bool reads_back = false;
            for (const int64_t mantissa : {nearest.mantissa - step, nearest.mantissa + step}) {
                number = decimal(mantissa, nearest.exponent);
                if (!same_float(static_cast<float>(number), value)) continue;
                reads_back = true;
                if (prints_within(number, value, digits)) return number;
            }
            if (step > 0 && !reads_back) break;
        }
    }
    return value;  // not reached: some decimal of 9 digits always prints so
}

std::vector<double> json_numbers(std::span<const float> values) {
    std::vector<double> numbers;
    numbers.reserve(values.size());
    for (float value : values) numbers.push_back(json_number(value));
    return numbers;
}

}  // namespace tinyformer
