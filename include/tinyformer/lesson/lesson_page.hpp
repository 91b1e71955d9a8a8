// The lesson's split/merge demo as one self-contained HTML page (inline CSS and JS, no
// network, works from file://): X = arange(12) as [B=1,T=3,D=4], where each cell lands
// after split_heads with 2 heads and back after merge_heads, and with the transpose
// forgotten. The layouts are the engine's: split_merge_tables() runs split_merge_example()
// and the page embeds its tables; the page's script only draws and highlights.
// `tinyformer lesson --html FILE` writes it; a web server can serve the same string.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tinyformer/lesson/lesson.hpp"

namespace tinyformer {

// The tables the page draws, from the engine's tensors. For each of "x", "features" (the
// feature axis split, [B,T,H,d], before the transpose), "split", "merged",
// "wrong" (reshape without transpose) and "wrong_merged" (merge_heads of that):
//   {"shape": [...], "values": [...] (row-major), "from": [[b,t,i], ...]}
// where "from" names, for each cell, the cell of X whose value it holds (X holds its own
// flat indices, so value v is X[v / (T·D), v / D % T, v % D]). Also "n_heads",
// "merged_equals_x", "wrong_merged_equals_x" and "head0_position1": {"split", "wrong"}.
nlohmann::json split_merge_tables(const SplitMerge& split_merge);

// The single row of weights the page plots: "a_steps" (0, 0.01, ..., 1) and "segment" (one
// row's output at each), "target", "a_needed", "closest", "distance", "head_weights" and
// "two_heads" ({"shape", "values"}).
nlohmann::json single_row_table(const SingleRowLimit& limit);

// The whole page (see the comment at the top of src/lesson_page.cpp for the ids and data-
// attributes a browser test can drive).
std::string split_merge_html();

}  // namespace tinyformer
