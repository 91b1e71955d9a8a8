// The explorer's JSON API, apart from HTTP (tinyformer serve puts it behind a web server;
// the tests call it directly):
//
//   GET  /api/model   the checkpoint's config, vocabulary and parameter count, the run's
//                     summary, and its probes with what the model answers
//   POST /api/run     {"text", "ablate": ["L1H1", ...], "ablation": "zero"|"mean"}
//                     → the characters, every head's [T,T] attention and, at every position,
//                       the 10 likeliest next characters; with `ablate`, the same again for
//                       the model without those heads
//   POST /api/sample  {"prompt", "max_new", "temperature", "top_k", "top_p", "seed", "stop"}
//                     → the text `tinyformer sample` prints for the same arguments
//
// Every reply is JSON; an error is {"error": "one line"} with its HTTP status: 400 for a
// request that is not what is expected (not JSON, an unknown field, a wrong type, a value out
// of range, a character outside the vocabulary — then also "unknown": each such character
// with its position and the message), 413 for a body over kMaxBodyBytes. The model is only
// read: any number of requests may be answered at once.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer {

inline constexpr size_t kMaxBodyBytes = 64 * 1024;  // a request body over this gets 413
inline constexpr int64_t kTopNextChars = 10;         // next characters listed per position
inline constexpr int64_t kMaxSampleChars = 2000;     // /api/sample's max_new at most

struct ApiReply {
    int status = 200;
    nlohmann::json body;
};
ApiReply api_error(int status, const std::string& message);

class ExplorerApi {
public:
    // Reads the checkpoint (a .safetensors file or a run directory) and what its run left:
    // summary.json, the config's probes (each answered greedily, as `tinyformer sample
    // --temperature 0` would), and the heads' mean outputs over the validation text (for
    // mean ablation). What is missing is said in /api/model's "notes".
    explicit ExplorerApi(const std::string& checkpoint);

    ApiReply model() const;
    ApiReply run(const std::string& body) const;
    ApiReply sample(const std::string& body) const;

    const LoadedModel& loaded() const { return loaded_; }
    const std::vector<std::string>& notes() const { return notes_; }

private:
    LoadedModel loaded_;
    nlohmann::json summary_;                         // the run's summary.json, or null
    std::vector<Probe> probes_;
    std::vector<std::u32string> probe_answers_;      // the model's greedy answer to each probe
    std::vector<std::vector<float>> mean_outputs_;   // [L*H][d]; empty: no validation text
    std::vector<std::string> notes_;
};

}  // namespace tinyformer
