// Catch2 behind one include, for both the v2 that Debian 12 ships (one header,
// catch2/catch.hpp) and the v3 of Debian 13 (catch2/catch_all.hpp and a library). The tests
// use v3's names; on v2 this file supplies them. main.cpp defines CATCH_CONFIG_RUNNER
// before including it, which on v2 also compiles Catch2's own implementation there.
#pragma once

#include <string>

#if __has_include(<catch2/catch_all.hpp>)  // Catch2 v3
#include <catch2/catch_all.hpp>
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
#else  // Catch2 v2
#include <catch2/catch.hpp>
// v3's name for the substring matcher (v2 calls it Contains; v3's Contains is for ranges).
inline Catch::Matchers::StdString::ContainsMatcher ContainsSubstring(
    const std::string& text, Catch::CaseSensitive::Choice case_sensitivity = Catch::CaseSensitive::Yes) {
    return Catch::Matchers::Contains(text, case_sensitivity);
}
#endif
