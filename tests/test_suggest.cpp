// "Did you mean": the edit distance and the choice of the nearest word (suggest.hpp), as
// the command line and the config loader use them.
#include "catch.hpp"

#include "tinyformer/support/suggest.hpp"

using namespace tinyformer;

TEST_CASE("edit distance counts insertions, deletions, substitutions and swaps", "[suggest]") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("steps", "steps") == 0);
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("abc", "") == 3);
    CHECK(edit_distance("step", "steps") == 1);      // an insertion
    CHECK(edit_distance("stepss", "steps") == 1);    // a deletion
    CHECK(edit_distance("stops", "steps") == 1);     // a substitution
    CHECK(edit_distance("sampel", "sample") == 1);   // two neighbours swapped
    CHECK(edit_distance("tseps", "steps") == 1);
    CHECK(edit_distance("kitten", "sitting") == 3);  // the textbook pair
    CHECK(edit_distance("ca", "abc") == 3);          // no edit twice in one place (not 2)
    CHECK(edit_distance("steps", "setps") == edit_distance("setps", "steps"));
}

TEST_CASE("the nearest word is a likely typo or nothing", "[suggest]") {
    const std::vector<std::string> subcommands = {"train", "sample", "eval", "grads", "gradcheck", "bench",
                                                  "inspect", "serve", "lesson", "prepare", "sweep"};
    CHECK(nearest_word("sampel", subcommands) == "sample");
    CHECK(nearest_word("trian", subcommands) == "train");
    CHECK(nearest_word("grad", subcommands) == "grads");      // a prefix: the shortest completion
    CHECK(nearest_word("gradc", subcommands) == "gradcheck");
    CHECK(nearest_word("fly", subcommands).empty());          // nothing near: no wild guess
    CHECK(nearest_word("", subcommands).empty());
    CHECK(nearest_word("x", {"h"}).empty());                  // half the word wrong is no typo

    const std::vector<std::string> options = {"--help", "--steps", "--set", "--temperature", "--top-k", "--top-p"};
    CHECK(nearest_word("--setps", options) == "--steps");     // a swap beats two edits to --set
    CHECK(nearest_word("--temp", options) == "--temperature");
    CHECK(nearest_word("--tmeperature", options) == "--temperature");
    CHECK(nearest_word("--top", options) == "--top-k");       // equally short: the first listed
    CHECK(nearest_word("--nonsense", options).empty());
}
