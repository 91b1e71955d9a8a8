// The lesson's claims about multi-head attention, each checked against the engine.
//
// Every TEST_CASE below is named after one claim of the lesson and asserts something that
// would fail if the code behind the claim were broken (split_heads without its transpose,
// scores scaled by 1/sqrt(D), merge_heads adding instead of concatenating, a missing
// causal mask, a projection left out, ...).
//
// Notation: B batch, T positions (Tq queries, Tk keys), D = d_model, H heads, d = D/H.
#include "catch.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tinyformer/engine/ops.hpp"
#include "tinyformer/engine/rng.hpp"
#include "tinyformer/model/attention.hpp"
#include "tinyformer/model/model.hpp"

using namespace tinyformer;

namespace {

// ---------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------

// 0, 1, 2, ..., n-1
std::vector<double> counting(int64_t n) {
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i);
    return values;
}

// A tensor of N(0,1) values, the same for the same seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype = DType::f64) {
    Rng rng(seed);
    std::vector<double> values(static_cast<size_t>(numel_of(shape)));
    for (double& value : values) value = rng.normal();
    return Tensor::from(values, shape, dtype);
}

// The d values of head h at position t of a split tensor [1,H,T,d].
std::vector<double> head_row(const Tensor& heads, int64_t h, int64_t t) {
    const int64_t T = heads.dim(2), d = heads.dim(3);
    std::vector<double> row;
    for (int64_t j = 0; j < d; ++j) row.push_back(heads.at((h * T + t) * d + j));
    return row;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double largest = 0.0;
    for (size_t i = 0; i < a.size(); ++i) largest = std::max(largest, std::abs(a[i] - b[i]));
    return largest;
}

// ---------------------------------------------------------------------------------------
// Attention written out by hand: plain loops over plain matrices, one head at a time.
// It shares no code with the engine's ops, so it can disagree with them.
// ---------------------------------------------------------------------------------------

using Matrix = std::vector<std::vector<double>>;  // rows of numbers

// x[b] of a tensor [B,T,D], as a T×D matrix.
Matrix sequence(const Tensor& x, int64_t b) {
    const int64_t T = x.dim(1), D = x.dim(2);
    Matrix m(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(D)));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < D; ++i) m[t][i] = x.at((b * T + t) * D + i);
    return m;
}

// Rows first .. first+count-1 of a weight [out,in]: the output features a head owns.
Matrix weight_rows(const Tensor& weight, int64_t first, int64_t count) {
    const int64_t in = weight.dim(1);
    Matrix m(static_cast<size_t>(count), std::vector<double>(static_cast<size_t>(in)));
    for (int64_t r = 0; r < count; ++r)
        for (int64_t i = 0; i < in; ++i) m[r][i] = weight.at((first + r) * in + i);
    return m;
}

// a b^T: a is M×K, b is N×K, the result M×N. (x W^T is how a [out,in] weight is applied.)
Matrix times_transposed(const Matrix& a, const Matrix& b) {
    Matrix c(a.size(), std::vector<double>(b.size(), 0.0));
    for (size_t m = 0; m < a.size(); ++m)
        for (size_t n = 0; n < b.size(); ++n)
            for (size_t k = 0; k < b[n].size(); ++k) c[m][n] += a[m][k] * b[n][k];
    return c;
}

// a b: a is M×K, b is K×N, the result M×N.
Matrix times(const Matrix& a, const Matrix& b) {
    Matrix c(a.size(), std::vector<double>(b[0].size(), 0.0));
    for (size_t m = 0; m < a.size(); ++m)
        for (size_t k = 0; k < b.size(); ++k)
            for (size_t n = 0; n < b[0].size(); ++n) c[m][n] += a[m][k] * b[k][n];
    return c;
}

// Softmax of each row of `scores`; with `causal`, row i only sees columns 0..i.
Matrix softmax_rows(Matrix scores, bool causal) {
    for (size_t i = 0; i < scores.size(); ++i) {
        std::vector<double>& row = scores[i];
        const size_t visible = causal ? i + 1 : row.size();
        const double largest = *std::max_element(row.begin(), row.begin() + static_cast<long>(visible));
        double sum = 0.0;
        for (size_t j = 0; j < visible; ++j) sum += row[j] = std::exp(row[j] - largest);
        for (size_t j = 0; j < row.size(); ++j) row[j] = j < visible ? row[j] / sum : 0.0;
    }
    return scores;
}

struct HandAttention {
    std::vector<double> weights;  // [B,H,T,T], flattened as the engine stores it
    std::vector<double> output;   // [B,T,D]
};

// Self-attention of x [B,T,D] with the weights of `attention`, one head after the other:
// q_h = x W_q[h*d .. h*d+d-1]^T (likewise k_h, v_h), weights = softmax(q_h k_h^T * score_scale),
// head output = weights v_h; the heads' outputs side by side, then W_o.
HandAttention attention_by_hand(const MultiHeadAttention& attention, const Tensor& x, bool causal,
                                double score_scale) {
    const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2), H = attention.n_heads(), d = D / H;
    HandAttention result;
    for (int64_t b = 0; b < B; ++b) {
        const Matrix x_b = sequence(x, b);                                   // [T,D]
        Matrix concatenated(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(D)));  // [T,D]
        for (int64_t h = 0; h < H; ++h) {
            const Matrix q_h = times_transposed(x_b, weight_rows(attention.q_proj, h * d, d));  // [T,d]
            const Matrix k_h = times_transposed(x_b, weight_rows(attention.k_proj, h * d, d));  // [T,d]
            const Matrix v_h = times_transposed(x_b, weight_rows(attention.v_proj, h * d, d));  // [T,d]
            Matrix scores = times_transposed(q_h, k_h);                                         // [T,T]
            for (auto& row : scores)
                for (double& score : row) score *= score_scale;
            const Matrix attn_weights = softmax_rows(scores, causal);  // [T,T]
            const Matrix head_output = times(attn_weights, v_h);       // [T,d]

            for (const auto& row : attn_weights) result.weights.insert(result.weights.end(), row.begin(), row.end());
            for (int64_t t = 0; t < T; ++t)
                for (int64_t j = 0; j < d; ++j) concatenated[t][h * d + j] = head_output[t][j];
        }
        const Matrix output_b = times_transposed(concatenated, weight_rows(attention.out_proj, 0, D));  // [T,D]
        for (const auto& row : output_b) result.output.insert(result.output.end(), row.begin(), row.end());
    }
    return result;
}

// Asserts that every attention map [B,H,T,T] is causal (the future exactly 0) and that
// each row is a probability distribution (sums to 1).
void require_causal_rows(const Tensor& attn_weights) {
    REQUIRE(attn_weights.rank() == 4);
    const int64_t T = attn_weights.dim(2);
    REQUIRE(attn_weights.dim(3) == T);
    const std::vector<double> w = attn_weights.to_vector();
    const int64_t rows = attn_weights.numel() / T;  // B*H*T rows, row r is query position r % T
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t query = r % T;
        double sum = 0.0;
        for (int64_t key = 0; key < T; ++key) {
            const double weight = w[static_cast<size_t>(r * T + key)];
            if (key > query) REQUIRE(weight == 0.0);  // never a later position
            sum += weight;
        }
        REQUIRE(sum == Approx(1.0).margin(1e-6));
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Splitting and merging heads
// ---------------------------------------------------------------------------------------

TEST_CASE("split_heads gives each head its own run of d features at every position and merge_heads undoes it",
          "[lesson]") {
    // Three positions of four features: position t holds 4t .. 4t+3.
    const Tensor x = Tensor::from(counting(12), {1, 3, 4});  // [B=1,T=3,D=4]

    const Tensor heads = split_heads(x, 2);  // [B=1,H=2,T=3,d=2]
    REQUIRE(heads.shape() == Shape{1, 2, 3, 2});
    // Position 1 is [4,5,6,7]: head 0 gets its first half, head 1 its second.
    CHECK(head_row(heads, 0, 1) == std::vector<double>{4, 5});
    CHECK(head_row(heads, 1, 1) == std::vector<double>{6, 7});

    const Tensor merged = merge_heads(heads);  // [1,3,4]
    REQUIRE(merged.shape() == Shape{1, 3, 4});
    CHECK(merged.to_vector() == counting(12));  // all 12 values back, in place
}

TEST_CASE("Reshaping to B H T d without the transpose has the right shape but mixes up positions",
          "[lesson]") {
    // Two positions of four features: [0,1,2,3] and [4,5,6,7].
    const Tensor x = Tensor::from(counting(8), {1, 2, 4});  // [B=1,T=2,D=4]

    const Tensor wrong = reshape(x, {1, 2, 2, 2});  // [1,2,2,2], no transpose
    const Tensor right = split_heads(x, 2);         // [1,2,2,2]

    // A shape check cannot tell them apart ...
    REQUIRE(wrong.shape() == right.shape());
    // ... the numbers can: head 0 at position 1 must be the first half of position 1.
    CHECK(head_row(right, 0, 1) == std::vector<double>{4, 5});
    CHECK(head_row(wrong, 0, 1) == std::vector<double>{2, 3});  // the second half of position 0
    CHECK(right.to_vector() != wrong.to_vector());
}

// ---------------------------------------------------------------------------------------
// All heads at once = one head at a time; the 1/sqrt(d) scale
// ---------------------------------------------------------------------------------------

TEST_CASE("Computing all heads at once equals looping over the heads one by one", "[lesson]") {
    // float64 so that the only difference left is rounding (1e-12).
    auto [attention, params] = MultiHeadAttention::create(/*D=*/8, /*H=*/2, /*seed=*/7, DType::f64);
    const Tensor x = random_tensor({2, 5, 8}, 11);  // [B=2,T=5,D=8]

    const AttentionResult batched = attention.forward(x, x, x, {.causal = true});
    const HandAttention looped = attention_by_hand(attention, x, /*causal=*/true, 1.0 / std::sqrt(4.0));  // d = 4

    REQUIRE(batched.weights.shape() == Shape{2, 2, 5, 5});  // [B,H,T,T]
    REQUIRE(batched.output.shape() == Shape{2, 5, 8});      // [B,T,D]
    CHECK(max_abs_diff(batched.weights.to_vector(), looped.weights) < 1e-12);
    CHECK(max_abs_diff(batched.output.to_vector(), looped.output) < 1e-12);
}

TEST_CASE("Scores are divided by sqrt(d) the head width and not by sqrt(D)", "[lesson]") {
    const int64_t D = 8, H = 2, d = D / H;
    auto [attention, params] = MultiHeadAttention::create(D, H, /*seed=*/3, DType::f64);
    const Tensor x = random_tensor({2, 5, D}, 5);  // [B,T,D]

    const Tensor attn_weights = attention.forward(x, x, x).weights;  // [B,H,T,T]
    const auto by_sqrt_d = attention_by_hand(attention, x, false, 1.0 / std::sqrt(static_cast<double>(d)));
    const auto by_sqrt_D = attention_by_hand(attention, x, false, 1.0 / std::sqrt(static_cast<double>(D)));

    // The engine divides by sqrt(d) ...
    CHECK(max_abs_diff(attn_weights.to_vector(), by_sqrt_d.weights) < 1e-12);
    // ... and dividing by sqrt(D) would have given clearly different weights, so the check
    // above would notice that mistake.
    CHECK(max_abs_diff(attn_weights.to_vector(), by_sqrt_D.weights) > 1e-2);
}

// ---------------------------------------------------------------------------------------
// Merging concatenates
// ---------------------------------------------------------------------------------------

TEST_CASE("Merging heads concatenates their outputs and does not add them", "[lesson]") {
    const double a = 1, b = 2, c = 10, d = 20;
    // head 0 outputs [a,b], head 1 outputs [c,d] at the single position.
    const Tensor head_outputs = Tensor::from({a, b, c, d}, {1, 2, 1, 2});  // [B=1,H=2,T=1,d=2]

    const Tensor merged = merge_heads(head_outputs);  // [B=1,T=1,D=4]
    REQUIRE(merged.shape() == Shape{1, 1, 4});
    CHECK(merged.to_vector() == std::vector<double>{a, b, c, d});  // not [a+c, b+d]
}

// ---------------------------------------------------------------------------------------
// Parameter count
// ---------------------------------------------------------------------------------------

TEST_CASE("The four projections hold 4 D^2 parameters whatever the number of heads", "[lesson]") {
    const int64_t D = 64;
    for (int64_t H : {1, 2, 4}) {
        INFO("H = " << H);
        CHECK(MultiHeadAttention::create(D, H, /*seed=*/1).second.count() == 4 * D * D);  // 16,384

        // The same inside the full model: every block's attention holds 16,384 numbers.
        ModelConfig config;  // V=79, D=64, L=2, rope
        config.n_heads = H;
        const Transformer model(config, /*seed=*/1);
        for (int64_t layer = 0; layer < config.n_layers; ++layer) {
            const std::string prefix = "blocks." + std::to_string(layer) + ".attn.";
            int64_t attention_parameters = 0;
            for (const auto& [name, tensor] : model.parameters().named())
                if (name.rfind(prefix, 0) == 0) attention_parameters += tensor.numel();
            CHECK(attention_parameters == 16384);
        }
    }

    ModelConfig lesson;  // V=79, D=64, H=2, L=2, rope
    CHECK(Transformer(lesson, /*seed=*/1).parameters().count() == 109696);
}

// ---------------------------------------------------------------------------------------
// D must be divisible by H
// ---------------------------------------------------------------------------------------

TEST_CASE("D not divisible by H is a clear error and not a silently dropped coordinate", "[lesson]") {
    // D=5, H=2 would give heads of width 2 and lose the fifth feature.
    CHECK_THROWS_WITH(MultiHeadAttention::create(5, 2, /*seed=*/1),
                      ContainsSubstring("5") && ContainsSubstring("2") && ContainsSubstring("divisible"));
    CHECK_THROWS_WITH(split_heads(Tensor::zeros({1, 3, 5}), 2), ContainsSubstring("divisible"));

    ModelConfig config;
    config.d_model = 5;
    config.n_heads = 2;
    CHECK_THROWS_WITH(config.validate(), ContainsSubstring("n_heads") && ContainsSubstring("divisible"));
}

// ---------------------------------------------------------------------------------------
// Why several heads: two heads reach what one cannot
// ---------------------------------------------------------------------------------------

TEST_CASE("Two heads can reach an output that no single head can", "[lesson]") {
    // The values at two positions, D=2: position 0 holds [1,0], position 1 holds [0,2].
    const Tensor values = Tensor::from({1, 0, 0, 2}, {1, 2, 2});  // [B=1,T=2,D=2]

    // Two heads of width 1, one query: head 0 reads mostly position 0, head 1 mostly position 1.
    const Tensor attn_weights = Tensor::from({0.8, 0.2,    // head 0
                                              0.2, 0.8},   // head 1
                                             {1, 2, 1, 2});  // [B=1,H=2,Tq=1,Tk=2]
    const Tensor v = split_heads(values, 2);                 // [1,2,2,1]
    const Tensor head_output = matmul(attn_weights, v);      // [1,2,1,1]
    const Tensor output = merge_heads(head_output);          // [1,1,2]
    REQUIRE(output.shape() == Shape{1, 1, 2});
    CHECK(output.at(0) == Approx(0.8));
    CHECK(output.at(1) == Approx(1.6));

    // One head of full width mixes whole positions with one row [a, 1-a]:
    // a [1,0] + (1-a) [0,2] = [a, 2-2a]. Try every a on a fine grid: none comes close.
    double closest = 1e9;
    for (int step = 0; step <= 1000; ++step) {
        const double share = step / 1000.0;
        const double first = share * 1 + (1 - share) * 0, second = share * 0 + (1 - share) * 2;
        closest = std::min(closest, std::hypot(first - 0.8, second - 1.6));
    }
    CHECK(closest > 0.1);  // about 0.54
}

// ---------------------------------------------------------------------------------------
// The causal mask
// ---------------------------------------------------------------------------------------

TEST_CASE("Causal attention never reads a later position and every row of weights sums to 1", "[lesson]") {
    SECTION("one attention module") {
        auto [attention, params] = MultiHeadAttention::create(8, 2, /*seed=*/2);
        const Tensor x = random_tensor({2, 6, 8}, 4, DType::f32);  // [B,T,D]
        require_causal_rows(attention.forward(x, x, x, {.causal = true}).weights);  // [B,H,T,T]
    }
    SECTION("every layer of the transformer") {
        ModelConfig config;  // L=2 layers
        const Transformer model(config, /*seed=*/5);
        std::vector<int32_t> tokens;
        for (int i = 0; i < 2 * 10; ++i) tokens.push_back((i * 37 + 3) % 79);
        std::vector<Tensor> attention_maps;
        model.forward(Tensor::ids(tokens, {2, 10}), &attention_maps);  // [B=2,T=10]

        REQUIRE(attention_maps.size() == static_cast<size_t>(config.n_layers));
        for (const Tensor& map : attention_maps) {
            REQUIRE(map.shape() == Shape{2, 2, 10, 10});  // [B,H,T,T]
            require_causal_rows(map);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Every projection matters
// ---------------------------------------------------------------------------------------

TEST_CASE("The projections are really used: q_proj shapes the weights while v_proj and out_proj shape the output",
          "[lesson]") {
    auto [attention, params] = MultiHeadAttention::create(8, 2, /*seed=*/9, DType::f64);
    const Tensor x = random_tensor({2, 5, 8}, 13);  // [B,T,D]
    const AttentionResult before = attention.forward(x, x, x);

    SECTION("changing q_proj changes the attention weights") {
        attention.q_proj.data<double>()[0] += 0.5;
        const AttentionResult after = attention.forward(x, x, x);
        CHECK(max_abs_diff(before.weights.to_vector(), after.weights.to_vector()) > 1e-3);
    }
    SECTION("changing v_proj changes the output but not the weights") {
        attention.v_proj.data<double>()[0] += 0.5;
        const AttentionResult after = attention.forward(x, x, x);
        CHECK(after.weights.to_vector() == before.weights.to_vector());
        CHECK(max_abs_diff(before.output.to_vector(), after.output.to_vector()) > 1e-3);
    }
    SECTION("changing out_proj changes the output") {
        attention.out_proj.data<double>()[0] += 0.5;
        const AttentionResult after = attention.forward(x, x, x);
        CHECK(after.weights.to_vector() == before.weights.to_vector());
        CHECK(max_abs_diff(before.output.to_vector(), after.output.to_vector()) > 1e-3);
    }
}

// ---------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------

TEST_CASE("Shapes as in the textbook: weights are B H Tq Tk and the output is B Tq D", "[lesson]") {
    auto [attention, params] = MultiHeadAttention::create(/*D=*/16, /*H=*/2, /*seed=*/1);

    SECTION("self-attention") {
        const Tensor x = random_tensor({3, 5, 16}, 1, DType::f32);  // [B=3,T=5,D=16]
        const AttentionResult result = attention.forward(x, x, x);
        CHECK(result.weights.shape() == Shape{3, 2, 5, 5});  // [B,H,T,T]
        CHECK(result.output.shape() == Shape{3, 5, 16});     // [B,T,D]
    }
    SECTION("cross-attention: 4 queries over 7 keys and values") {
        const Tensor queries = random_tensor({3, 4, 16}, 2, DType::f32);  // [B,Tq=4,D]
        const Tensor memory = random_tensor({3, 7, 16}, 3, DType::f32);   // [B,Tk=7,D]
        const AttentionResult result = attention.forward(queries, memory, memory);
        CHECK(result.weights.shape() == Shape{3, 2, 4, 7});  // [B,H,Tq,Tk]
        CHECK(result.output.shape() == Shape{3, 4, 16});     // [B,Tq,D]
    }
}
