#!/usr/bin/env bash
# Large corpora, measured (issue 16): the Shakespeare config on a 1 GB text against the same
# run on its 1 MB source, for English (tinyshakespeare repeated) and for a generated Chinese
# text of more than 5,000 distinct characters (a 1 MB base repeated, so both runs share one
# vocabulary). For each: the time to the first step when the ids are prepared from scratch
# (tinyformer prepare + train) and when they exist, peak resident memory, training tokens/s,
# and the whole run's wall time. A benchmark, not a test: it prints a table and leaves the
# judging to the reader (docs/large-corpora.md holds the results).
#
#   scripts/bench_large_corpus.sh [--rounds N] [--out DIR] [--binary PATH] [--steps N]
#
# Each round runs the 1 MB and the 1 GB training back to back (alternating which goes first),
# and the table reports medians over the rounds and the 1 GB / 1 MB ratios per round's median.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=1 first_round=1 out=/tmp/tinyformer-large-bench binary="$here/build/tinyformer" steps=2000
# Tiny Shakespeare: scripts/get-shakespeare.sh's copy, else a developer machine's shared one
shakespeare="$here/data/tinyshakespeare.txt"
if [[ ! -f "$shakespeare" && -f "$here/../shared/data/tinyshakespeare.txt" ]]; then
  shakespeare="$here/../shared/data/tinyshakespeare.txt"
fi
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --first-round) first_round=$2; shift 2 ;;  # add rounds to an earlier run's (same --out)
    --out) out=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --shakespeare) shakespeare=$2; shift 2 ;;
    *) echo "bench_large_corpus.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$binary" ]] || { echo "bench_large_corpus.sh: no binary at $binary (build first)" >&2; exit 2; }
[[ -f "$shakespeare" ]] || { echo "bench_large_corpus.sh: no $shakespeare: run scripts/get-shakespeare.sh (or give --shakespeare FILE)" >&2; exit 2; }
mkdir -p "$out"
cp "$binary" "$out/tinyformer"; binary="$out/tinyformer"  # a rebuild meanwhile cannot change what is measured
config="$here/configs/shakespeare_char.toml"
common=(--set train.steps="$steps" --set train.eval_every=250 --set train.eval_batches=200
        --set train.final_eval=sampled --set logging.progress_bar=false)

# ---- the texts ----
repeat_to_1gb() {  # SOURCE TARGET: SOURCE repeated until the file passes 10^9 bytes
  local source=$1 target=$2 size copies
  size=$(stat -c %s "$source"); copies=$(( (1000000000 + size - 1) / size ))
  [[ -f "$target" && $(stat -c %s "$target") -eq $((size * copies)) ]] && return
  for _ in $(seq "$copies"); do cat "$source"; done > "$target"
}
cp "$shakespeare" "$out/en_1mb.txt"
repeat_to_1gb "$out/en_1mb.txt" "$out/en_1gb.txt"
if [[ ! -f "$out/zh_1mb.txt" ]]; then
  # 6,000 characters from the CJK block, drawn with a Zipf-like skew into sentences of 4–20
  # characters ending in 。 or ，, a line break every few sentences: about 1 MB of UTF-8.
  perl -CO -e '
    srand(16); my @chars = map { chr(0x4E00 + $_ * 3) } 0 .. 5999;
    my ($bytes, $out) = (0, "");
    while ($bytes < 1_000_000) {
      my $length = 4 + int(rand(17)); my $sentence = "";
      $sentence .= $chars[int(6000 * rand() ** 2.2)] for 1 .. $length;
      $sentence .= rand() < 0.7 ? "，" : "。"; $sentence .= "\n" if rand() < 0.15;
      $out .= $sentence; $bytes += 3 * ($length + 1) + ($sentence =~ /\n$/ ? 1 : 0);
    }
    # every character at least once, so the 1 MB text has the whole vocabulary
    $out .= join("", @chars) . "。\n"; print $out;' > "$out/zh_1mb.txt"
fi
repeat_to_1gb "$out/zh_1mb.txt" "$out/zh_1gb.txt"

# ---- the runs ----
json_number() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -1 | awk '{print $2}'; }
median() { grep -v nan | sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2}'; }

train_run() {  # NAME DATA-SETTING...: trains into $out/runs/NAME, prints "tokens/s wall rss first_step"
  local name=$1; shift
  rm -rf "$out/runs/$name"
  /usr/bin/time -f "%M" -o "$out/runs/$name.rss" \
    "$binary" train --config "$config" "${common[@]}" "$@" --out "$out/runs/$name" > "$out/runs/$name.log" 2>&1
  local summary="$out/runs/$name/summary.json"
  echo "$(json_number "$summary" tokens_per_second) $(json_number "$summary" wall_seconds)" \
       "$(( $(cat "$out/runs/$name.rss") / 1024 ))" "$(json_number "$summary" seconds_to_first_step)"
}

mkdir -p "$out/runs"
declare -A results
# Earlier rounds (--first-round): their results back from the run directories.
for lang in en zh; do
  for round in $(seq 1 $((first_round - 1))); do
    for which in small big; do
      size=$([[ $which == small ]] && echo 1mb || echo 1gb); s="$out/runs/${lang}_${size}_r$round/summary.json"
      results[$lang,$which,$round]="$(json_number "$s" tokens_per_second) $(json_number "$s" wall_seconds) $(( $(cat "$out/runs/${lang}_${size}_r$round.rss") / 1024 )) $(json_number "$s" seconds_to_first_step)"
    done
    results[$lang,fresh,$round]=$(cat "$out/runs/fresh_${lang}_r$round" 2>/dev/null || echo "nan nan nan")
  done
done
for lang in en zh; do
  for round in $(seq "$first_round" "$rounds"); do
    # From scratch: prepare (timed, with its peak memory), then the training run on it.
    rm -rf "$out/${lang}_prepared"
    start=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$out/runs/prepare_$lang.rss" \
      "$binary" prepare "$out/${lang}_1gb.txt" --out "$out/${lang}_prepared" > "$out/runs/prepare_$lang.log" 2>&1
    prepare_seconds=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN {printf "%.2f", a - b}')
    prepare_rss=$(( $(cat "$out/runs/prepare_$lang.rss") / 1024 ))
    order=(small big); (( round % 2 == 0 )) && order=(big small)
    for which in "${order[@]}"; do
      if [[ $which == small ]]; then
        results[$lang,small,$round]=$(train_run "${lang}_1mb_r$round" --set "data.path=$out/${lang}_1mb.txt")
      else
        results[$lang,big,$round]=$(train_run "${lang}_1gb_r$round" --set 'data.path=""' --set "data.prepared=$out/${lang}_prepared")
      fi
    done
    read -r _ _ _ first_step <<< "${results[$lang,big,$round]}"
    results[$lang,fresh,$round]="$(awk -v a="$prepare_seconds" -v b="$first_step" 'BEGIN {print a + b}') $prepare_seconds $prepare_rss"
    echo "${results[$lang,fresh,$round]}" > "$out/runs/fresh_${lang}_r$round"
  done
done

# ---- the table ----
column() {  # LANG WHICH FIELD(1-based): the medians over rounds
  local lang=$1 which=$2 field=$3
  for round in $(seq "$rounds"); do echo "${results[$lang,$which,$round]}" | awk -v f="$field" '{print $f}'; done | median
}
ratios() {  # LANG FIELD: each round's 1 GB / 1 MB
  local lang=$1 field=$2
  for round in $(seq "$rounds"); do
    awk -v a="$(echo "${results[$lang,big,$round]}" | awk -v f="$field" '{print $f}')" \
        -v b="$(echo "${results[$lang,small,$round]}" | awk -v f="$field" '{print $f}')" 'BEGIN {print a / b}'
  done
}
paired_ratio() { ratios "$1" "$2" | median; }
ratio_range() { ratios "$1" "$2" | sort -g | awk 'NR == 1 {low = $1} {high = $1} END {printf "%.3f–%.3f", low, high}'; }
{
  echo "| text | vocabulary | first step, prepared from scratch (prepare + start) | first step, prepared | peak RSS 1 GB (prepare) | peak RSS 1 MB | tokens/s 1 GB / 1 MB (medians; paired ratio, range) | wall 1 GB / 1 MB (medians; paired ratio, range) |"
  echo "|---|---|---|---|---|---|---|---|"
  for lang in en zh; do
    vocab=$(json_number "$out/runs/${lang}_1gb_r1/summary.json" vocab_size)
    tok_big=$(column $lang big 1) tok_small=$(column $lang small 1)
    wall_big=$(column $lang big 2) wall_small=$(column $lang small 2)
    # The ratios are paired: 1 GB over 1 MB within each round, then their median.
    tok_ratio=$(paired_ratio $lang 1) wall_ratio=$(paired_ratio $lang 2)
    printf "| %s 1 GB | %s | %.1f s (%.1f + %.2f) | %.2f s | %s MB (%s MB) | %s MB | %.0f / %.0f; paired %.3f (%s) | %.1f / %.1f s; paired %.3f (%s) |\n" \
      "$([[ $lang == en ]] && echo "Shakespeare ×$(( $(stat -c %s "$out/en_1gb.txt") / $(stat -c %s "$out/en_1mb.txt") ))" || echo "Chinese ×$(( $(stat -c %s "$out/zh_1gb.txt") / $(stat -c %s "$out/zh_1mb.txt") ))")" \
      "$vocab" "$(column $lang fresh 1)" "$(column $lang fresh 2)" "$(column $lang big 4)" "$(column $lang big 4)" \
      "$(column $lang big 3)" "$(column $lang fresh 3)" "$(column $lang small 3)" \
      "$tok_big" "$tok_small" "$tok_ratio" "$(ratio_range $lang 1)" \
      "$wall_big" "$wall_small" "$wall_ratio" "$(ratio_range $lang 2)"
  done
  echo
  echo "$rounds round(s), medians; $steps steps, eval_every 250, 200 eval batches (final_eval sampled); $(nproc) cores; $(date -u +%F)."
} | tee "$out/table.md"
