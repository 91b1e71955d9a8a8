// The test runner's main(): Catch2's session, on v2 and v3 alike (see catch.hpp).
#define CATCH_CONFIG_RUNNER
#include "catch.hpp"

int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
