// Weight-only circuits: the formulas of circuits.hpp, one function each, in float64.
#include "tinyformer/inspect/circuits.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <complex>

#include "tinyformer/engine/rng.hpp"

namespace tinyformer {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Eigen::MatrixXd parameter_matrix(const Transformer& model, const std::string& name) {
    const Tensor& tensor = model.parameters().get(name);
    const std::vector<double> values = tensor.to_vector();
    return Eigen::Map<const RowMajor>(values.data(), tensor.dim(0), tensor.dim(1));
}

Eigen::VectorXd parameter_vector(const Transformer& model, const std::string& name) {
    const std::vector<double> values = model.parameters().get(name).to_vector();
    return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
}

HeadWeights head_weights(const Transformer& model, int64_t layer, int64_t head) {
    const int64_t d = model.config().head_width();
    const std::string block = "blocks." + std::to_string(layer) + ".";
    const Eigen::VectorXd ln1_weight = parameter_vector(model, block + "ln1.weight");          // [D]
    const Eigen::MatrixXd q_proj = parameter_matrix(model, block + "attn.q_proj.weight");      // [D,D] = [out,in]
    const Eigen::MatrixXd k_proj = parameter_matrix(model, block + "attn.k_proj.weight");      // [D,D]
    const Eigen::MatrixXd v_proj = parameter_matrix(model, block + "attn.v_proj.weight");      // [D,D]
    const Eigen::MatrixXd out_proj = parameter_matrix(model, block + "attn.out_proj.weight");  // [D,D]

    HeadWeights w;
    w.layer = layer;
    w.head = head;
    // The head's rows of each projection (its output features h·d .. h·d+d−1), turned into
    // the row-vector form [D,d], with ln1's weight scaling the input features it reads.
    w.W_Q = ln1_weight.asDiagonal() * q_proj.middleRows(head * d, d).transpose();  // [D,d]
    w.W_K = ln1_weight.asDiagonal() * k_proj.middleRows(head * d, d).transpose();  // [D,d]
    w.W_V = ln1_weight.asDiagonal() * v_proj.middleRows(head * d, d).transpose();  // [D,d]
    // out_proj's columns that read the head's features, as [d,D].
    w.W_O = out_proj.middleCols(head * d, d).transpose();  // [d,D]
    return w;
}

Eigen::MatrixXd embedding_matrix(const Transformer& model) {
    return parameter_matrix(model, "tok_emb.weight");  // [V,D]
}

Eigen::MatrixXd unembedding_matrix(const Transformer& model) {
    const Eigen::VectorXd ln_f_weight = parameter_vector(model, "ln_f.weight");  // [D]
    const Eigen::MatrixXd lm_head = parameter_matrix(model, "lm_head.weight");   // [V,D]
    return ln_f_weight.asDiagonal() * lm_head.transpose();                      // [D,V]
}

Eigen::MatrixXd ov_circuit(const Eigen::MatrixXd& E, const HeadWeights& head, const Eigen::MatrixXd& U) {
    return E * head.W_V * head.W_O * U;  // [V,D]·[D,d]·[d,D]·[D,V] = [V,V]
}

Eigen::MatrixXd qk_circuit(const Eigen::MatrixXd& E, const HeadWeights& head) {
    const Eigen::MatrixXd queries = E * head.W_Q;  // [V,d]: each character as a query
    const Eigen::MatrixXd keys = E * head.W_K;     // [V,d]: each character as a key
    return queries * keys.transpose();             // [V,V]
}

FactoredCircuit ov_factors(const Eigen::MatrixXd& E, const HeadWeights& head, const Eigen::MatrixXd& U) {
    return {E * head.W_V, head.W_O * U};  // [V,D]·[D,d] = [V,d],  [d,D]·[D,V] = [d,V]
}

FactoredCircuit qk_factors(const Eigen::MatrixXd& E, const HeadWeights& head) {
    return {E * head.W_Q, (E * head.W_K).transpose()};  // [V,d],  [d,V]
}

double copying_score(const Eigen::MatrixXd& circuit) {
    const Eigen::EigenSolver<Eigen::MatrixXd> solver(circuit, /*computeEigenvectors=*/false);
    const Eigen::VectorXcd eigenvalues = solver.eigenvalues();
    std::complex<double> sum = 0;
    double sum_of_moduli = 0;
    for (const std::complex<double>& lambda : eigenvalues) {
        sum += lambda;
        sum_of_moduli += std::abs(lambda);
    }
    return sum_of_moduli > 0 ? sum.real() / sum_of_moduli : 0.0;
}

bool ranks_before(const TokenPair& x, const TokenPair& y) {
    if (x.value != y.value) return x.value > y.value;
    return x.from != y.from ? x.from < y.from : x.to < y.to;
}

std::vector<TokenPair> top_pairs(const Eigen::MatrixXd& circuit, int64_t count) {
    std::vector<TokenPair> cells;
    cells.reserve(static_cast<size_t>(circuit.size()));
    for (Eigen::Index a = 0; a < circuit.rows(); ++a)
        for (Eigen::Index b = 0; b < circuit.cols(); ++b)
            cells.push_back({static_cast<int32_t>(a), static_cast<int32_t>(b), circuit(a, b)});
    const size_t kept = std::min(cells.size(), static_cast<size_t>(std::max<int64_t>(count, 0)));
    std::partial_sort(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(kept), cells.end(), ranks_before);
    cells.resize(kept);
    return cells;
}

CircuitExtremes top_pairs_by_blocks(const FactoredCircuit& circuit, int64_t count, int64_t block_rows) {
    const int64_t V = circuit.left.rows();
    const size_t keep = static_cast<size_t>(std::max<int64_t>(count, 0));
    // The pairs kept so far, as a heap whose front is the one that ranks last: a new cell
    // enters only if it ranks before that one, which then leaves.
    std::vector<TokenPair> kept;
    CircuitExtremes extremes;
    for (int64_t start = 0; start < V; start += block_rows) {
        const int64_t n = std::min(block_rows, V - start);
        const Eigen::MatrixXd block = circuit.left.middleRows(start, n) * circuit.right;  // [n,V]: rows start … start+n−1
        extremes.largest_abs = std::max(extremes.largest_abs, block.cwiseAbs().maxCoeff());
        if (keep == 0) continue;
        for (Eigen::Index i = 0; i < block.rows(); ++i)
            for (Eigen::Index j = 0; j < block.cols(); ++j) {
                const TokenPair cell{static_cast<int32_t>(start + i), static_cast<int32_t>(j), block(i, j)};
                if (kept.size() == keep && !ranks_before(cell, kept.front())) continue;
                if (kept.size() == keep) {
                    std::pop_heap(kept.begin(), kept.end(), ranks_before);
                    kept.pop_back();
                }
                kept.push_back(cell);
                std::push_heap(kept.begin(), kept.end(), ranks_before);
            }
    }
    std::sort(kept.begin(), kept.end(), ranks_before);
    extremes.top = kept;
    return extremes;
}

CircuitExcerpt circuit_excerpt(const FactoredCircuit& circuit, const std::vector<TokenPair>& pairs) {
    CircuitExcerpt excerpt;
    excerpt.pairs = pairs;
    for (const TokenPair& pair : pairs) {  // each character once, where its first pair puts it
        if (std::find(excerpt.rows.begin(), excerpt.rows.end(), pair.from) == excerpt.rows.end())
            excerpt.rows.push_back(pair.from);
        if (std::find(excerpt.columns.begin(), excerpt.columns.end(), pair.to) == excerpt.columns.end())
            excerpt.columns.push_back(pair.to);
    }
    excerpt.values.resize(static_cast<Eigen::Index>(excerpt.rows.size()), static_cast<Eigen::Index>(excerpt.columns.size()));
    for (size_t i = 0; i < excerpt.rows.size(); ++i)
        for (size_t j = 0; j < excerpt.columns.size(); ++j)  // [1,d]·[d,1]: one entry of the circuit
            excerpt.values(i, j) = circuit.left.row(excerpt.rows[i]).dot(circuit.right.col(excerpt.columns[j]));
    return excerpt;
}

double composition_score(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) {
    const double norms = A.norm() * B.norm();  // Eigen's norm() of a matrix is its Frobenius norm
    return norms > 0 ? (A * B).norm() / norms : 0.0;
}

CompositionBaseline composition_baseline(int64_t D, int64_t d, int64_t draws, uint64_t seed) {
    Rng rng(seed);
    const auto gaussian = [&rng](int64_t rows, int64_t columns) {
        Eigen::MatrixXd g(rows, columns);
        for (Eigen::Index i = 0; i < rows; ++i)
            for (Eigen::Index j = 0; j < columns; ++j) g(i, j) = rng.normal();
        return g;
    };
    std::vector<double> scores;
    for (int64_t draw = 0; draw < draws; ++draw) {
        // One statement per draw, so that the order of the draws is fixed (the two operands
        // of one * may be evaluated in either order).
        const Eigen::MatrixXd G1 = gaussian(D, d);  // [D,d], like W_V
        const Eigen::MatrixXd G2 = gaussian(d, D);  // [d,D], like W_O
        const Eigen::MatrixXd G3 = gaussian(D, d);  // [D,d], like W_Q
        const Eigen::MatrixXd G4 = gaussian(d, D);  // [d,D], like W_Kᵀ
        scores.push_back(composition_score(G1 * G2, G3 * G4));  // A, B: [D,D] of rank d
    }
    CompositionBaseline baseline;
    baseline.draws = draws;
    baseline.seed = seed;
    for (double score : scores) baseline.mean += score / static_cast<double>(draws);
    double squares = 0;
    for (double score : scores) squares += (score - baseline.mean) * (score - baseline.mean);
    baseline.std = draws > 1 ? std::sqrt(squares / static_cast<double>(draws - 1)) : 0.0;
    return baseline;
}

Circuits compute_circuits(const Transformer& model) {
    const ModelConfig& config = model.config();
    const Eigen::MatrixXd E = embedding_matrix(model);    // [V,D]
    const Eigen::MatrixXd U = unembedding_matrix(model);  // [D,V]

    // A block of rows of a [V,V] circuit: about a million entries (8 MB) at a time.
    const int64_t V = config.vocab_size, block_rows = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(V, 1));

    Circuits circuits;
    for (int64_t l = 0; l < config.n_layers; ++l)
        for (int64_t h = 0; h < config.n_heads; ++h) {
            HeadCircuits head;
            head.weights = head_weights(model, l, h);
            const FactoredCircuit ov = ov_factors(E, head.weights, U), qk = qk_factors(E, head.weights);
            // Eigenvalues from [d,d], not [V,V] (Elhage et al. 2021; TransformerLens FactoredMatrix).
            head.copying = copying_score(ov.turned());
            if (V <= kGridLimit) {  // the whole circuits, as drawn
                head.ov = ov_circuit(E, head.weights, U);
                head.qk = qk_circuit(E, head.weights);
                head.ov_top = top_pairs(head.ov, kTopPairs);
                head.qk_top = top_pairs(head.qk, kTopPairs);
                head.ov_largest_abs = head.ov.cwiseAbs().maxCoeff();
                head.qk_largest_abs = head.qk.cwiseAbs().maxCoeff();
            } else {  // never whole: the largest entries, block by block, and an excerpt to draw
                const CircuitExtremes ov_extremes = top_pairs_by_blocks(ov, std::max(kTopPairs, kPairsDrawn), block_rows);
                const CircuitExtremes qk_extremes = top_pairs_by_blocks(qk, std::max(kTopPairs, kPairsDrawn), block_rows);
                head.ov_largest_abs = ov_extremes.largest_abs;
                head.qk_largest_abs = qk_extremes.largest_abs;
                const auto first = [](const std::vector<TokenPair>& pairs, int64_t count) {
                    const size_t n = std::min(pairs.size(), static_cast<size_t>(count));
                    return std::vector<TokenPair>(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(n));
                };
                head.ov_top = first(ov_extremes.top, kTopPairs);
                head.qk_top = first(qk_extremes.top, kTopPairs);
                head.ov_excerpt = circuit_excerpt(ov, first(ov_extremes.top, kPairsDrawn));
                head.qk_excerpt = circuit_excerpt(qk, first(qk_extremes.top, kPairsDrawn));
            }
            circuits.heads.push_back(std::move(head));
        }

    const auto at = [&](int64_t layer, int64_t head) -> const HeadWeights& {
        return circuits.heads[static_cast<size_t>(layer * config.n_heads + head)].weights;
    };
    for (int64_t l1 = 0; l1 < config.n_layers; ++l1)
        for (int64_t l2 = l1 + 1; l2 < config.n_layers; ++l2)
            for (int64_t h1 = 0; h1 < config.n_heads; ++h1) {
                const Eigen::MatrixXd A = at(l1, h1).W_OV();  // [D,D]: what h1 writes
                for (int64_t h2 = 0; h2 < config.n_heads; ++h2) {
                    const HeadWeights& later = at(l2, h2);
                    const Eigen::MatrixXd W_QK = later.W_QK();  // [D,D]
                    circuits.composition.push_back({l1, h1, l2, h2, composition_score(A, W_QK),
                                                    composition_score(A, W_QK.transpose()),
                                                    composition_score(A, later.W_OV())});
                }
            }
    circuits.baseline = composition_baseline(config.d_model, config.head_width(), kBaselineDraws, kBaselineSeed);
    return circuits;
}

}  // namespace tinyformer
