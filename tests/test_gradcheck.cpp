// The gradient checker must be able to fail: a deliberately wrong backward is caught.
#include "catch.hpp"
#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/engine/backend.hpp"
#include "tinyformer/engine/op_list.hpp"
#include "tinyformer/engine/ops.hpp"
#include "tinyformer/model/gradcheck.hpp"

using namespace tinyformer;

// square(x) = x², with a backward that is right (2x) or wrong (x).
static Tensor square(const Tensor& x, bool right_backward) {
    Tensor y = Tensor::zeros(x.shape(), x.dtype());
    backend().mul(x, x, y);
    return record(y, "square", {x}, [x, right_backward](const Tensor& dy, const Tensor&) {
        Tensor dx = Tensor::zeros(x.shape(), x.dtype());
        backend().mul(dy, x, dx);
        if (right_backward) backend().scale(dx, 2.0, dx);
        accumulate_grad(x, dx);
    });
}

static Tensor input() {
    Tensor x = Tensor::from({0.5, -1.25, 2.0, 0.75}, {2, 2}, DType::f64);
    x.set_requires_grad(true);
    return x;
}

TEST_CASE("gradcheck passes a correct backward", "[gradcheck]") {
    GradCheckResult r = check_gradients("square", [](auto& x) { return square(x[0], true); }, {input()});
    REQUIRE(r.pass);
    REQUIRE(r.elements == 4);
    REQUIRE(r.max_rel_error < 1e-8);
}

TEST_CASE("gradcheck fails a deliberately wrong backward", "[gradcheck]") {
    GradCheckResult r = check_gradients("square_wrong", [](auto& x) { return square(x[0], false); }, {input()});
    REQUIRE_FALSE(r.pass);
    REQUIRE(r.max_rel_error > 0.1);  // half the true gradient: relative error 0.5
}

TEST_CASE("gradcheck fails a backward that forgets an input", "[gradcheck]") {
    auto forgets_b = [](const std::vector<Tensor>& x) {
        Tensor y = Tensor::zeros(x[0].shape(), DType::f64);
        backend().mul(x[0], x[1], y);
        Tensor a = x[0], b = x[1];
        return record(y, "mul_forgetful", {a, b}, [a, b](const Tensor& dy, const Tensor&) {
            Tensor da = Tensor::zeros(a.shape(), DType::f64);
            backend().mul(dy, b, da);
            accumulate_grad(a, da);
        });
    };
    GradCheckResult r = check_gradients("mul_forgetful", forgets_b, {input(), input()});
    REQUIRE_FALSE(r.pass);
}

TEST_CASE("the suite covers every op and the whole model, and passes in float64", "[gradcheck]") {
    std::vector<GradCheckResult> results = run_gradcheck_suite();
    std::set<std::string> names;
    for (const GradCheckResult& r : results) {
        names.insert(r.name);
        INFO(r.name << ": max rel error " << r.max_rel_error);
        CHECK(r.pass);
        CHECK(r.elements > 0);
        for (const std::string& op : r.ops) {
            INFO("its graph has a node named " << op);
            CHECK(find_op(op) != nullptr);  // every node is a listed op
        }
    }
    // Every listed op has a check of its own, which runs the op's own backward (a composed
    // op's gradient comes from the ops it is built from).
    for (const OpEntry& op : kOps) {
        INFO(op.name << " has no gradient check of its own in run_gradcheck_suite (src/model/gradcheck.cpp)");
        const std::string name(op.name);
        auto checks_it = [&](const GradCheckResult& r) {
            return r.op == name && (!op.built_from.empty() || std::count(r.ops.begin(), r.ops.end(), name) == 1);
        };
        CHECK(std::any_of(results.begin(), results.end(), checks_it));
    }
    // and the checks of compositions: the attention module and the whole model
    for (const char* required : {"attention", "attention_cross", "model_rope", "model_learned"})
        CHECK(names.count(required) == 1);
}

// The functions ops.hpp declares: each line that starts "Tensor name(" or "Attended name(".
static std::set<std::string> ops_declared(const std::string& header) {
    std::set<std::string> declared;
    const std::regex declaration(R"(^(?:Tensor|Attended) (\w+)\()");
    std::istringstream lines(header);
    for (std::string line; std::getline(lines, line);) {
        std::smatch match;
        if (std::regex_search(line, match, declaration)) declared.insert(match[1]);
    }
    return declared;
}

static std::string read_source(const std::string& path) {
    std::ifstream in(std::string(TINYFORMER_SOURCE_DIR) + "/" + path);
    REQUIRE(in);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_CASE("ops.hpp and the op list agree, and each op is where the list says", "[gradcheck]") {
    const std::set<std::string> declared = ops_declared(read_source("include/tinyformer/engine/ops.hpp"));
    std::set<std::string> listed;
    for (const OpEntry& op : kOps) listed.insert(std::string(op.name));
    CHECK(declared == listed);
    for (const std::string& name : declared) {
        INFO(name << " is declared in ops.hpp but not listed in op_list.hpp");
        CHECK(listed.count(name) == 1);
    }
    for (const OpEntry& op : kOps) {
        INFO(op.name << " in src/engine/ops/" << op.source);
        const std::string name(op.name), source = read_source("src/engine/ops/" + std::string(op.source));
        CHECK(std::regex_search(source, std::regex("\\n(Tensor|Attended) " + name + "\\(")));  // defined there
        if (op.built_from.empty()) {
            CHECK(std::regex_search(source, std::regex("record\\(\\w+, \"" + name + "\",")));  // recorded by its name
        } else {
            std::istringstream parts{std::string(op.built_from)};
            for (std::string part; parts >> part;) {
                INFO("built from " << part);
                CHECK(find_op(part) != nullptr);
            }
        }
    }
}

TEST_CASE("the op-list checks see an op missing from the list", "[gradcheck]") {
    const std::string header = "Tensor add(const Tensor& a, const Tensor& b);\n"
                               "// Tensor commented_out(const Tensor& x);\n"
                               "Attended new_op(const Tensor& x);\n";
    const std::set<std::string> declared = ops_declared(header);
    CHECK(declared == std::set<std::string>{"add", "new_op"});
    CHECK(find_op("add") != nullptr);
    CHECK(find_op("new_op") == nullptr);
}
