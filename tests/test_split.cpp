// split (support/split.hpp): the pieces between separators, empty ones kept, as the query,
// Cookie and list parsers rely on.
#include "catch.hpp"

#include "tinyformer/support/split.hpp"

using namespace tinyformer;
using Pieces = std::vector<std::string_view>;

TEST_CASE("split keeps every piece between separators, empty ones too", "[split]") {
    CHECK(split("a,b,c", ',') == Pieces{"a", "b", "c"});
    CHECK(split("a,,b", ',') == Pieces{"a", "", "b"});
    CHECK(split(",a,", ',') == Pieces{"", "a", ""});
    CHECK(split("", ',') == Pieces{""});
    CHECK(split("abc", ',') == Pieces{"abc"});
    CHECK(split("x=1&token=s&y", '&') == Pieces{"x=1", "token=s", "y"});
    CHECK(split("a, b", ',') == Pieces{"a", " b"});  // as they are: no trimming
}
