// How the roles formed: at every evaluation, `train` measures each head's answer-source span
// share and the probe accuracy, per question kind, on a fixed subset of the probes, and
// records them in metrics.jsonl ("roles"); `inspect` draws them against the step, so that a
// learner sees when a head became the name reader and whether the who-accuracy jumped with it.
//
// The measures are inspect.hpp's own: answer_sources (span_share) and probe_accuracy (greedy
// decoding, as eval scores the probes). Recording them draws no random numbers and changes
// no weight: a run's losses are the same with or without probes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tinyformer/data/dataset.hpp"
#include "tinyformer/data/text.hpp"
#include "tinyformer/model/model.hpp"

namespace tinyformer {

// The probes measured at every evaluation: at most this many in all, split evenly between
// the question kinds.
constexpr int64_t kRoleProbes = 32;

// The fixed subset: each of the K question kinds gets max(1, kRoleProbes / K) probes (all of
// them if it has fewer), spread evenly over that kind's probes in file order (with n of the
// kind and m chosen, the i-th chosen is the kind's probe number floor(i·n/m), counting from
// 0); the chosen probes keep their file order. The lesson's 320 probes (who and colour
// alternating) give 16 of each: file lines 1, 21, 41, ... (who) and 2, 22, 42, ... (colour).
std::vector<Probe> role_probes(const std::vector<Probe>& probes);

// One line of role_probes' rule, as the metrics row states it.
std::string role_probes_rule();

// The metrics row's "roles" for the model as it is now, measured on `subset`:
//   {"probes": 32, "rule": "...",
//    "probes_by_kind": {"colour": 16, "who": 16},
//    "accuracy":   {"colour": 0.25, "who": 0.5},                  probe_accuracy per kind
//    "span_share": {"L0H0": {"colour": 0.4, "who": 0.39}, ...}}   answer_sources' span_share
// Heads are named as in heads.json (L{layer}H{head}).
nlohmann::json training_roles(const Transformer& model, const Vocabulary& vocab, const std::vector<Probe>& subset);

// training_roles on role_probes(probes), null when there are none: what `train` records at
// each evaluation, handed to it by the CLI (TrainOptions::roles), as train does not sit on inspect.
nlohmann::json training_roles_of_probes(const Transformer& model, const Vocabulary& vocab,
                                        const std::vector<Probe>& probes);

// metrics.jsonl as rows, one JSON object per line (a line that does not parse is skipped);
// no rows when the file is missing.
std::vector<nlohmann::json> read_metrics_rows(const std::string& path);

// report.html's section "How the roles formed": one chart per question kind, each head's span
// share (one line per head) and the kind's accuracy (black, dashed) against the step, on one
// 0..1 axis, with a caption saying what to look for. Empty when no row has "roles".
std::string roles_over_training_html(const std::vector<nlohmann::json>& metrics_rows);

}  // namespace tinyformer
