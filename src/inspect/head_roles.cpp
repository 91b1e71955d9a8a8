// Role scores: how much of a head's attention falls on a fixed reading pattern.
//
// The patterns and the score follow TransformerLens (transformer_lens/head_detector.py):
//   get_previous_token_head_detection_pattern   P[i][i-1] = 1
//   get_duplicate_token_head_detection_pattern  P[i][j] = 1 for j < i with token j == token i
//   get_induction_head_detection_pattern        the duplicate pattern shifted one column right:
//                                               P[i][j+1] = 1 for j < i with token j == token i
//   compute_head_attention_similarity_score, error_measure "mul", no exclusions:
//                                               score = sum(A * P) / sum(A)
// and detect_head on a list of sequences averages the per-sequence scores; so do we, over
// the windows of the validation text. "self" (P[i][i]) and "first" (P[i][0]) are the same
// measure on the two patterns TransformerLens leaves to the user.
#include <cmath>

#include "text_windows.hpp"
#include "tinyformer/engine/autograd.hpp"
#include "tinyformer/inspect/inspect.hpp"

namespace tinyformer {

HeadRoles role_scores(const float* pattern, const std::vector<int32_t>& ids) {
    const int64_t T = static_cast<int64_t>(ids.size());
    HeadRoles r;
    double total = 0;  // sum(A): T when every row sums to 1
    for (int64_t i = 0; i < T; ++i) {
        const float* row = pattern + i * T;  // row i: what query i reads
        double entropy = 0;
        for (int64_t j = 0; j <= i; ++j) {
            const double a = row[j];
            total += a;
            if (j == i - 1) r.previous += a;
            if (j == i) r.self += a;
            if (j == 0) r.first += a;
            if (j < i && ids[j] == ids[i]) r.duplicate += a;
            if (j >= 1 && ids[j - 1] == ids[i]) r.induction += a;  // j-1 < i is an earlier copy
            r.distance += a * static_cast<double>(i - j);
            if (a > 0) entropy -= a * std::log(a);
        }
        for (int64_t j = i + 1; j < T; ++j) total += row[j];  // (exactly 0 in a causal map)
        r.entropy += entropy;
    }
    for (double* score : {&r.previous, &r.self, &r.first, &r.duplicate, &r.induction, &r.distance})
        *score = total > 0 ? *score / total : 0.0;
    r.entropy /= static_cast<double>(T);
    return r;
}

std::vector<HeadRoles> text_head_roles(const Transformer& model, const std::vector<int32_t>& ids) {
    NoGradScope no_grad;
    const int64_t L = model.config().n_layers, H = model.config().n_heads;
    std::vector<HeadRoles> mean(L * H);
    int64_t windows = 0;
    for (const WindowBatch& batch : window_batches(ids, model.config().context)) {
        const int64_t T = batch.inputs.dim(1);
        if (T < 2) continue;  // one position reads only itself: no pattern to tell apart
        std::vector<Tensor> maps;  // per layer [B,H,T,T]
        model.forward(batch.inputs, &maps);
        for (size_t b = 0; b < batch.windows.size(); ++b) {
            const std::vector<int32_t> window(ids.begin() + batch.windows[b].start,
                                              ids.begin() + batch.windows[b].start + T);
            for (int64_t l = 0; l < L; ++l) {
                const Tensor layer = maps[l].to(DType::f32);
                for (int64_t h = 0; h < H; ++h) {
                    const HeadRoles r = role_scores(layer.data<float>() + (b * H + h) * T * T, window);
                    HeadRoles& m = mean[l * H + h];
                    m.previous += r.previous, m.self += r.self, m.first += r.first;
                    m.duplicate += r.duplicate, m.induction += r.induction;
                    m.distance += r.distance, m.entropy += r.entropy;
                }
            }
            ++windows;
        }
    }
    for (HeadRoles& m : mean)
        for (double* score : {&m.previous, &m.self, &m.first, &m.duplicate, &m.induction, &m.distance, &m.entropy})
            *score = windows ? *score / static_cast<double>(windows) : 0.0;
    return mean;
}

}  // namespace tinyformer
