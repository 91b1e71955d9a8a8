// Which CPU a figure was measured on (cpu_features.hpp): the core generation a vendor's
// family and model numbers name, and cpu_model()'s numbers against /proc/cpuinfo's.
#include "catch.hpp"

#include <fstream>
#include <string>

#include "tinyformer/engine/cpu_features.hpp"

using namespace tinyformer;

TEST_CASE("the family and model numbers name the core generation only where they name one", "[cpu]") {
    CHECK(core_generation("AuthenticAMD", 26, 2) == "Zen 5");     // EPYC 9005 (Turin)
    CHECK(core_generation("AuthenticAMD", 25, 0x11) == "Zen 4");  // EPYC 9004 (Genoa)
    CHECK(core_generation("AuthenticAMD", 25, 0x01) == "Zen 3");  // EPYC 7003 (Milan)
    CHECK(core_generation("AuthenticAMD", 25, 0x61) == "Zen 4");  // Ryzen 7000 (Raphael)
    CHECK(core_generation("AuthenticAMD", 25, 0x21) == "Zen 3");  // Ryzen 5000 (Vermeer)
    CHECK(core_generation("AuthenticAMD", 25, 0xf0).empty());     // not a model this list knows
    CHECK(core_generation("AuthenticAMD", 23, 0x31) == "Zen 2");  // EPYC 7002 (Rome)
    CHECK(core_generation("AuthenticAMD", 23, 0x01) == "Zen or Zen+");
    CHECK(core_generation("GenuineIntel", 6, 0x8f) == "Sapphire Rapids");
    CHECK(core_generation("GenuineIntel", 6, 0x6a) == "Ice Lake-SP");
    // Skylake-SP, Cascade Lake and Cooper Lake share model 85: their brand names them, not this.
    CHECK(core_generation("GenuineIntel", 6, 0x55).empty());
    CHECK(core_generation("GenuineIntel", 25, 0x11).empty());  // AMD's numbers, Intel's name
    CHECK(core_generation("HygonGenuine", 24, 0).empty());
}

TEST_CASE("cpu_model names the family and model /proc/cpuinfo shows", "[cpu]") {
#if defined(__x86_64__) || defined(__i386__)
    std::ifstream info("/proc/cpuinfo");
    std::string line, family, model;
    while (std::getline(info, line) && (family.empty() || model.empty())) {
        auto value = [&line] { return line.substr(line.find(':') + 2); };
        if (line.rfind("cpu family", 0) == 0) family = value();
        else if (line.rfind("model\t", 0) == 0) model = value();
    }
    if (family.empty() || model.empty()) {
        WARN("not checked: no /proc/cpuinfo with a cpu family and model here");
        return;
    }
    INFO("cpu_model(): " << cpu_model());
    CHECK(cpu_model().find("family " + family + " model " + model) != std::string::npos);
#else
    CHECK(cpu_model().empty());  // no cpuid: nothing to name
#endif
}
